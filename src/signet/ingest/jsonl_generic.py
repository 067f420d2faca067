"""Any JSONL chat log: one message per line with a speaker and a text field.

Speaker: ``role``/``speaker``/``author``/``from`` (``human``/``ai``/``bot`` are mapped);
text: ``content``/``text``/``message``/``body`` (a string or a list of text parts);
time: ``timestamp``/``time``/``created_at``/``ts``/``date``. Signet's own transcript files
(``memory/<harness>/transcripts/*.jsonl``) are in this form.
"""

from __future__ import annotations

from pathlib import Path

from signet.ingest.base import Transcript, clean_turns, jsonl_records, normalize_time, text_of
from signet.transcript import Turn

NAME = "jsonl"
ROLE_MAP = {
    "user": "user",
    "human": "user",
    "person": "user",
    "customer": "user",
    "assistant": "assistant",
    "ai": "assistant",
    "bot": "assistant",
    "model": "assistant",
    "agent": "assistant",
}


def _first(rec: dict[str, object], keys: tuple[str, ...]) -> object:
    for k in keys:
        if rec.get(k) is not None:
            return rec[k]
    return None


class GenericJsonlAdapter:
    name = NAME
    priority = 10

    def can_handle(self, path: Path, first_line: str | None) -> bool:
        return path.suffix in (".jsonl", ".ndjson")

    def parse(self, path: Path) -> Transcript:
        turns: list[Turn] = []
        session_id = None
        for _, rec in jsonl_records(path):
            inner = rec.get("message") if isinstance(rec.get("message"), dict) else rec
            assert isinstance(inner, dict)
            speaker = _first(inner, ("role", "speaker", "author", "from")) or _first(rec, ("role", "speaker"))
            role = ROLE_MAP.get(str(speaker).lower()) if speaker is not None else None
            if role is None:
                continue
            text = text_of(_first(inner, ("content", "text", "message", "body")))
            ts = normalize_time(_first(rec, ("timestamp", "time", "created_at", "ts", "date")))
            session_id = session_id or _first(rec, ("session_key", "session_id", "sessionId"))
            turns.append(Turn(role, text, ts))
        return Transcript(adapter=NAME, turns=clean_turns(turns), session_id=str(session_id) if session_id else None)


ADAPTER = GenericJsonlAdapter()
