"""The vocabulary of transcripts: a turn, a parsed transcript, and the adapter protocol."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

from signet.transcript import Turn

# Roles kept in the memory surface: the human/agent exchange. Notes are prose documents
# (markdown, plain text) that have no speakers.
ROLES = ("user", "assistant", "note")


@dataclass
class Transcript:
    adapter: str
    turns: list[Turn]
    session_id: str | None = None
    harness: str | None = None
    project: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)


class TranscriptAdapter(Protocol):
    """``can_handle`` sees the path and the file's first non-empty line (sniffing)."""

    name: str
    priority: int
    """Higher is tried first; the generic fallbacks are lowest."""

    def can_handle(self, path: Path, first_line: str | None) -> bool: ...

    def parse(self, path: Path) -> Transcript: ...


class TranscriptError(ValueError):
    """A file that an adapter cannot read (names the file and line)."""


class NotText(TranscriptError):
    """A file that is not text (a binary ``.log``, a UTF-16 or Latin-1 file): storing its
    bytes as memories would fill recall with noise, so it is refused (a file named on the
    command line) or skipped (one found in a directory)."""


def require_text(path: Path, data: bytes) -> str:
    """``data`` as text, or :class:`NotText`. A NUL byte means binary; a few undecodable
    bytes are kept (replaced), a file that is mostly not UTF-8 is refused."""
    if b"\x00" in data:
        raise NotText(f"{path}: not a text file (it has NUL bytes); signet ingest reads text, Markdown and JSONL")
    text = data.decode("utf-8", "replace")
    bad = text.count("\ufffd")
    if bad > max(8, len(text) // 100):
        raise NotText(f"{path}: not UTF-8 text ({bad} undecodable bytes); convert it with `iconv -t UTF-8` first")
    return text


def file_hash(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def normalize_time(value: Any) -> str | None:
    """ISO strings, epoch seconds or milliseconds -> ISO-8601 UTC; anything else -> None."""
    if value is None or isinstance(value, bool):
        return None
    try:
        if isinstance(value, int | float):
            secs = value / 1000 if value > 1e11 else value
            return datetime.fromtimestamp(secs, UTC).isoformat(timespec="microseconds")
        if isinstance(value, str) and value.strip():
            dt = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
            if dt.tzinfo is None:
                dt = dt.replace(tzinfo=UTC)
            return dt.astimezone(UTC).isoformat(timespec="microseconds")
    except (ValueError, OverflowError, OSError):
        return None
    return None


def text_of(content: Any, kinds: tuple[str, ...] = ("text", "input_text", "output_text")) -> str:
    """The visible text of a message's content: a string, or the text parts of a part list.

    Tool calls, tool results, images and thinking parts are left out on purpose.
    """
    if isinstance(content, str):
        return content.strip()
    if isinstance(content, list):
        texts = [
            str(p.get("text", "")).strip()
            for p in content
            if isinstance(p, dict) and p.get("type") in kinds and isinstance(p.get("text"), str)
        ]
        return "\n\n".join(t for t in texts if t)
    return ""


def jsonl_records(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) for each JSON object line; blank and non-object lines are skipped.

    A truncated last line (a session still being written) is skipped, not an error.
    """
    with path.open(encoding="utf-8", errors="replace") as fh:
        lines = fh.readlines()
    for i, line in enumerate(lines, 1):
        line = line.strip()
        if not line:
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            if i == len(lines):
                continue
            raise TranscriptError(f"{path}:{i}: not valid JSON: {exc.msg}") from None
        if isinstance(obj, dict):
            yield i, obj


def first_json(path: Path, line: str | None) -> dict[str, Any] | None:
    """The first line of a ``.jsonl`` file as an object, for sniffing; None otherwise."""
    if path.suffix != ".jsonl" or not line:
        return None
    try:
        obj = json.loads(line)
    except json.JSONDecodeError:
        return None
    return obj if isinstance(obj, dict) else None


def harness_transcript(adapter: str, turns: list[Turn], session_id: Any, cwd: Any) -> Transcript:
    """A harness session: its id, and the project named after its working directory."""
    cwd_s = cwd if isinstance(cwd, str) and cwd else None
    return Transcript(
        adapter=adapter,
        turns=clean_turns(turns),
        session_id=str(session_id) if session_id else None,
        harness=adapter,
        project=Path(cwd_s).name if cwd_s else None,
        metadata={"cwd": cwd_s} if cwd_s else {},
    )


def first_line(path: Path, limit: int = 65536) -> str | None:
    try:
        with path.open(encoding="utf-8", errors="replace") as fh:
            for _ in range(50):
                line = fh.readline(limit)
                if not line:
                    return None
                if line.strip():
                    return line.strip()
    except (OSError, UnicodeError):
        return None
    return None


def clean_turns(turns: list[Turn]) -> list[Turn]:
    """Drop empty turns and merge consecutive turns of the same speaker."""
    out: list[Turn] = []
    for t in turns:
        content = t.content.strip()
        if not content or t.role not in ROLES:
            continue
        if out and out[-1].role == t.role and t.role != "note":
            prev = out[-1]
            out[-1] = Turn(prev.role, prev.content + "\n\n" + content, prev.timestamp or t.timestamp)
        else:
            out.append(Turn(t.role, content, t.timestamp))
    return out
