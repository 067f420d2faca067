"""Other tools' memory files as memories (spec 003, "Memory Import System").

Memory files are notes an agent already distilled, not conversations, so they become memories
directly (no extraction pipeline), one per chunk of the hierarchical chunking the spec gives:

1. the document is split at its h1-h3 headings (headings inside ``` fences are text);
2. a section that fits in ``max_tokens`` (about 4 characters a token) is one chunk;
3. a longer one is split at blank lines into paragraph chunks of at most ``max_tokens``, each
   starting with its section's heading, so a chunk read alone still says what it is about.

The spec's two sources are recognised by where the file is (``--from`` names one outright):

- ``claude-code``: Claude Code project memories, ``~/.claude/projects/<project>/memory/*.md``;
- ``openclaw-memory``: OpenClaw memory logs, ``~/.agents/memory/*.md`` (daily files named
  ``YYYY-MM-DD.md`` take that day as their time);

any other Markdown file is ``markdown``. Re-importing a file adds nothing: identical text is
one memory (its content hash), and a changed file adds only its changed chunks.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from signet.ingest.base import require_text

KINDS = ("claude-code", "openclaw-memory", "markdown")
DEFAULT_MAX_TOKENS = 512
CHARS_PER_TOKEN = 4
MAX_CHUNK_CHARS = 100_000
"""A chunk is never longer than a memory may be (``MAX_CONTENT_CHARS``)."""

_HEADING = re.compile(r"^(#{1,3})\s+\S")
FENCE = re.compile(r"^\s*(```|~~~)")
_DAY = re.compile(r"^(\d{4}-\d{2}-\d{2})")


@dataclass(frozen=True)
class Chunk:
    text: str
    header: str
    """The section's heading line ('' before the first heading)."""
    level: str
    """``section`` (the whole section) or ``paragraph`` (part of a long one)."""
    index: int
    """Position in the document."""

    @property
    def tokens(self) -> int:
        return estimate_tokens(self.text)


def estimate_tokens(text: str) -> int:
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def _sections(text: str) -> list[tuple[str, list[str]]]:
    """(heading, body lines) per h1-h3 section; the text before the first heading has heading ''."""
    out: list[tuple[str, list[str]]] = [("", [])]
    fenced = False
    for line in text.splitlines():
        if FENCE.match(line):
            fenced = not fenced
        if not fenced and _HEADING.match(line):
            out.append((line.strip(), []))
        else:
            out[-1][1].append(line)
    return [(h, body) for h, body in out if h or "".join(body).strip()]


def paragraphs(lines: list[str]) -> list[str]:
    """Blocks separated by blank lines (a fenced block stays whole); documents chunk with it too."""
    paras: list[str] = []
    cur: list[str] = []
    fenced = False
    for line in lines:
        if FENCE.match(line):
            fenced = not fenced
        if not fenced and not line.strip():
            if cur:
                paras.append("\n".join(cur).strip())
                cur = []
            continue
        cur.append(line)
    if cur:
        paras.append("\n".join(cur).strip())
    return [p for p in paras if p]


def _hard_split(text: str, limit: int) -> list[str]:
    """A block longer than ``limit`` characters, cut at line ends where it can be, else anywhere."""
    pieces: list[str] = []
    while len(text) > limit:
        cut = text.rfind("\n", 0, limit)
        if cut <= 0:
            cut = text.rfind(" ", 0, limit)
        if cut <= 0:
            cut = limit
        pieces.append(text[:cut].strip())
        text = text[cut:].strip()
    if text:
        pieces.append(text)
    return [p for p in pieces if p]


def chunk_markdown(text: str, max_tokens: int = DEFAULT_MAX_TOKENS) -> list[Chunk]:
    """The spec's ``chunkMarkdownHierarchically``: section chunks, or paragraph chunks that
    repeat the section's heading when the section is over ``max_tokens``."""
    limit = min(max(max_tokens, 16) * CHARS_PER_TOKEN, MAX_CHUNK_CHARS)
    chunks: list[Chunk] = []
    for header, body in _sections(text):
        whole = "\n".join([header, *body]).strip() if header else "\n".join(body).strip()
        if not whole:
            continue
        if len(whole) <= limit:
            chunks.append(Chunk(whole, header, "section", len(chunks)))
            continue
        prefix = f"{header}\n\n" if header else ""
        room = max(limit - len(prefix), limit // 2)
        buf = ""
        for para in paragraphs(body):
            for piece in _hard_split(para, room) if len(para) > room else [para]:
                if buf and len(buf) + 2 + len(piece) > room:
                    chunks.append(Chunk(prefix + buf, header, "paragraph", len(chunks)))
                    buf = ""
                buf = f"{buf}\n\n{piece}" if buf else piece
        if buf:
            chunks.append(Chunk(prefix + buf, header, "paragraph", len(chunks)))
    return chunks


def detect_kind(path: Path) -> str:
    """``claude-code``, ``openclaw-memory`` or ``markdown``, from where the file is."""
    parts = path.resolve().parts
    if ".claude" in parts and len(parts) >= 3 and parts[-2] == "memory":
        return "claude-code"
    if len(parts) >= 3 and parts[-2] == "memory" and parts[-3] == ".agents":
        return "openclaw-memory"
    return "markdown"


def file_time(path: Path) -> datetime:
    """When the notes are from: the day a daily log is named after, else the file's mtime (UTC)."""
    m = _DAY.match(path.stem)
    day = _day(m.group(1)) if m else None  # a name that only looks like a date: the mtime says when
    return day or datetime.fromtimestamp(path.stat().st_mtime, UTC)


def _day(text: str) -> datetime | None:
    try:
        return datetime.strptime(text, "%Y-%m-%d").replace(tzinfo=UTC)
    except ValueError:
        return None


@dataclass(frozen=True)
class MemoryFile:
    path: Path
    kind: str
    chunks: list[Chunk]
    created_at: datetime


def read_memory_file(path: Path, *, kind: str | None = None, max_tokens: int = DEFAULT_MAX_TOKENS) -> MemoryFile:
    """Chunk one memory file (:class:`~signet.ingest.base.NotText` for a binary one)."""
    text = require_text(path, path.read_bytes())
    return MemoryFile(path, kind or detect_kind(path), chunk_markdown(text, max_tokens), file_time(path))


def remember_items(f: MemoryFile, *, project: str | None) -> list[dict[str, object]]:
    """The ``/api/memory/remember/batch`` items for a file's chunks."""
    source = str(f.path)
    if len(source) > 200:
        source = "…" + source[-199:]
    return [
        {
            "content": c.text,
            "who": "import" if f.kind == "markdown" else f.kind,
            "source_type": "memory-file",
            "source_id": source,
            "importance": 0.5,
            "created_at": f.created_at.isoformat(),
            "project": project,
        }
        for c in f.chunks
    ]
