"""Plain text, the fallback: ``User:`` / ``Assistant:`` lines make a chat transcript;
anything else is kept as notes split at blank-line paragraphs (grouped to ~2,000 chars)."""

from __future__ import annotations

import re
from pathlib import Path

from signet.ingest.base import Transcript, clean_turns, normalize_time, require_text
from signet.transcript import Turn

NAME = "text"
SPEAKERS = {
    "user": "user",
    "human": "user",
    "me": "user",
    "assistant": "assistant",
    "ai": "assistant",
    "claude": "assistant",
    "agent": "assistant",
    "bot": "assistant",
}
_NAMES = "|".join(SPEAKERS)
PLAIN = re.compile(rf"^\s*(?:\[(?P<ts>[^\]]+)\]\s*)?(?P<who>{_NAMES})\s*:\s?(?P<rest>.*)$", re.IGNORECASE)
MARKED = re.compile(
    rf"^\s*(?:#{{1,6}}\s*(?P<h>{_NAMES})\s*:?\s*$|\*\*(?P<b>{_NAMES})\s*:?\*\*\s*:?\s?(?P<rest>.*)$)", re.IGNORECASE
)
CHUNK = 2000


def speaker_turns(text: str, *, markdown: bool = False) -> list[Turn]:
    """Turns from speaker-marked lines; [] when fewer than two speaker lines are found."""
    turns: list[Turn] = []
    role: str | None = None
    buf: list[str] = []
    ts: str | None = None
    marks = 0

    def flush() -> None:
        if role is not None:
            turns.append(Turn(role, "\n".join(buf).strip(), ts))

    for line in text.splitlines():
        m = MARKED.match(line) if markdown else None
        who = rest = None
        new_ts = None
        if m is not None:
            who = m.group("h") or m.group("b")
            rest = m.group("rest") or ""
        else:
            p = PLAIN.match(line)
            if p is not None:
                who, rest, new_ts = p.group("who"), p.group("rest"), p.group("ts")
        if who is not None:
            flush()
            marks += 1
            role, buf, ts = SPEAKERS[who.lower()], [rest or ""], normalize_time(new_ts)
        elif role is not None:
            buf.append(line)
    flush()
    return turns if marks >= 2 else []


def paragraphs(text: str) -> list[str]:
    out: list[str] = []
    cur = ""
    for para in re.split(r"\n\s*\n", text):
        para = para.strip()
        if not para:
            continue
        if cur and len(cur) + len(para) > CHUNK:
            out.append(cur)
            cur = para
        else:
            cur = f"{cur}\n\n{para}" if cur else para
    if cur:
        out.append(cur)
    return out


class TextAdapter:
    name = NAME
    priority = 0

    def can_handle(self, path: Path, first_line: str | None) -> bool:
        return True

    def parse(self, path: Path) -> Transcript:
        text = require_text(path, path.read_bytes())
        turns = speaker_turns(text) or [Turn("note", p) for p in paragraphs(text)]
        return Transcript(adapter=NAME, turns=clean_turns(turns))


ADAPTER = TextAdapter()
