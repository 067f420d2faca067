"""OpenClaw session transcripts (``~/.openclaw/agents/<id>/sessions/<session>.jsonl``).

The first line is ``{"type": "session", "version", "id", "timestamp", "cwd"}``; messages are
``{"type": "message", "timestamp", "message": {"role": "user"|"assistant"|"toolResult",
"content": [{"type": "text"|"thinking"|"toolCall", ...}], "timestamp"}}``. Only user and
assistant text parts are kept.
"""

from __future__ import annotations

from pathlib import Path

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
            if rec.get("type") == "session":
                session_id, cwd = rec.get("id"), rec.get("cwd")
                continue
            msg = rec.get("message")
            if rec.get("type") != "message" or not isinstance(msg, dict):
                continue
            role = msg.get("role")
            if role not in ("user", "assistant"):
                continue
            ts = normalize_time(rec.get("timestamp")) or normalize_time(msg.get("timestamp"))
            turns.append(Turn(role, text_of(msg.get("content"), ("text",)), ts))
        return harness_transcript(NAME, turns, session_id, cwd)


ADAPTER = OpenClawAdapter()
