"""Split a document into chunks (spec 001 "Document Ingest", 003 hierarchical chunking).

Markdown (and HTML, which arrives here as markdown) is split by its headings: every section
keeps the path of headings above it (``["Deploying", "Rollback"]``). A section that fits in
``size`` characters is one chunk; a longer one is split at blank lines into paragraph chunks of
at most ``size``, each keeping the section's heading path, and a single paragraph longer than
that is cut at line or word ends. Headings inside fenced code blocks are text.

Other text (plain text, PDF) is cut into windows of ``size`` characters that share ``overlap``
characters with the previous one, cut at whitespace where possible, so a sentence on a boundary
is whole in one of the two.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from signet.ingest.memory_files import FENCE, paragraphs

_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")


@dataclass(frozen=True)
class Chunk:
    index: int
    heading_path: tuple[str, ...]
    text: str


def _sections(text: str) -> list[tuple[tuple[str, ...], list[str]]]:
    """(heading path, body lines) for every section; text before the first heading has path ()."""
    out: list[tuple[tuple[str, ...], list[str]]] = [((), [])]
    stack: list[tuple[int, str]] = []
    fenced = False
    for line in text.splitlines():
        if FENCE.match(line):
            fenced = not fenced
        m = None if fenced else _HEADING.match(line)
        if m is None:
            out[-1][1].append(line)
            continue
        level = len(m.group(1))
        while stack and stack[-1][0] >= level:
            stack.pop()
        stack.append((level, m.group(2).strip() or "(untitled)"))
        out.append((tuple(h for _, h in stack), []))
    return [(path, body) for path, body in out if "".join(body).strip()]


def _cut_point(text: str, start: int, end: int) -> int:
    """Where to end a piece that may run from ``start`` to ``end``: the last line end, else the
    last space, in its second half; ``end`` when there is none."""
    if end >= len(text):
        return len(text)
    floor = start + (end - start) // 2
    for sep in ("\n", " "):
        cut = text.rfind(sep, floor, end)
        if cut > start:
            return cut
    return end


def _hard_split(text: str, size: int) -> list[str]:
    pieces: list[str] = []
    start = 0
    while start < len(text):
        end = _cut_point(text, start, start + size)
        piece = text[start:end].strip()
        if piece:
            pieces.append(piece)
        start = end
    return pieces


def chunk_markdown(text: str, size: int) -> list[Chunk]:
    """Section chunks, or paragraph chunks with the section's heading path when a section is long."""
    chunks: list[Chunk] = []
    for path, body in _sections(text):
        whole = "\n".join(body).strip()
        if len(whole) <= size:
            chunks.append(Chunk(len(chunks), path, whole))
            continue
        buf = ""
        for para in paragraphs(body):
            for piece in _hard_split(para, size) if len(para) > size else [para]:
                if buf and len(buf) + 2 + len(piece) > size:
                    chunks.append(Chunk(len(chunks), path, buf))
                    buf = ""
                buf = f"{buf}\n\n{piece}" if buf else piece
        if buf:
            chunks.append(Chunk(len(chunks), path, buf))
    return chunks


def chunk_windows(text: str, size: int, overlap: int) -> list[Chunk]:
    """Windows of at most ``size`` characters, each sharing about ``overlap`` with the one before."""
    text = text.strip()
    chunks: list[Chunk] = []
    start = 0
    while start < len(text):
        end = _cut_point(text, start, start + size)
        piece = text[start:end].strip()
        if piece:
            chunks.append(Chunk(len(chunks), (), piece))
        if end >= len(text):
            break
        nxt = max(end - overlap, start + 1)
        if overlap:
            # Start the next window at a word, not inside one.
            space = text.find(" ", nxt, end)
            nxt = space + 1 if space != -1 else nxt
        start = nxt
    return chunks


def chunk_document(text: str, *, markdown: bool, size: int, overlap: int) -> list[Chunk]:
    return chunk_markdown(text, size) if markdown else chunk_windows(text, size, overlap)
