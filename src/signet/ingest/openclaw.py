"""OpenClaw session transcripts (``~/.openclaw/agents/<id>/sessions/<session>.jsonl``).

The first line is ``{"type": "session", "version", "id", "timestamp", "cwd"}``; messages are
``{"type": "message", "timestamp", "message": {"role": "user"|"assistant"|"toolResult",
"content": [{"type": "text"|"thinking"|"toolCall", ...}], "timestamp"}}``. Only user and
assistant text parts are kept.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from signet.ingest.base import Transcript, first_json, harness_transcript, jsonl_records, normalize_time, text_of
from signet.transcript import Turn

NAME = "openclaw"


class OpenClawAdapter:
    name = NAME
    priority = 30

    def can_handle(self, path: Path, first_line: str | None) -> bool:
        obj = first_json(path, first_line)
        return obj is not None and obj.get("type") == "session" and "id" in obj and "version" in obj

    def parse(self, path: Path) -> Transcript:
        turns: list[Turn] = []
        session_id = cwd = None
        for _, rec in jsonl_records(path):
            sid, where = record_session(rec)
            if sid is not None:
                session_id, cwd = sid, where
                continue
            turn = record_turn(rec)
            if turn is not None:
                turns.append(turn)
        return harness_transcript(NAME, turns, session_id, cwd)


def record_session(rec: dict[str, Any]) -> tuple[Any, Any]:
    """(session id, working directory) from the ``session`` line; (None, None) otherwise."""
    if rec.get("type") == "session":
        return rec.get("id"), rec.get("cwd")
    return None, None


def record_turn(rec: dict[str, Any]) -> Turn | None:
    """The user or assistant text one ``message`` line holds, or None.

    One line at a time, so live capture (signet.capture) reads a growing file the same way
    ``parse`` reads a whole one."""
    msg = rec.get("message")
    if rec.get("type") != "message" or not isinstance(msg, dict):
        return None
    role = msg.get("role")
    if role not in ("user", "assistant"):
        return None
    ts = normalize_time(rec.get("timestamp")) or normalize_time(msg.get("timestamp"))
    return Turn(role, text_of(msg.get("content"), ("text",)), ts)


ADAPTER = OpenClawAdapter()
