"""Codex session rollouts (``~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl``).

Current files wrap each record: ``{"timestamp", "type": "session_meta"|"response_item"|
"event_msg"|"turn_context", "payload": {...}}``; messages are ``response_item`` payloads
``{"type": "message", "role", "content": [{"type": "input_text"|"output_text", "text"}]}``.
Older files put ``{"id", "timestamp", "instructions"}`` first and bare message records after.
The injected ``<environment_context>``/``<user_instructions>`` messages are dropped.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from signet.ingest.base import Transcript, first_json, harness_transcript, jsonl_records, normalize_time, text_of
from signet.transcript import Turn

NAME = "codex"
BOILERPLATE = ("<environment_context>", "<user_instructions>", "# AGENTS.md instructions")


class CodexAdapter:
    name = NAME
    priority = 30

    def can_handle(self, path: Path, first_line: str | None) -> bool:
        obj = first_json(path, first_line)
        if obj is None:
            return False
        if obj.get("type") == "session_meta" and isinstance(obj.get("payload"), dict):
            return True
        return "instructions" in obj and "id" in obj and "timestamp" in obj and "type" not in obj

    def parse(self, path: Path) -> Transcript:
        turns: list[Turn] = []
        session_id = cwd = None
        for _, rec in jsonl_records(path):
            sid, where = record_session(rec)
            if sid is not None and session_id is None:
                session_id, cwd = sid, where
                continue
            turn = record_turn(rec)
            if turn is not None:
                turns.append(turn)
        return harness_transcript(NAME, turns, session_id, cwd)


def record_session(rec: dict[str, Any]) -> tuple[Any, Any]:
    """(session id, working directory) from a ``session_meta`` line (or an old-format first
    line); (None, None) for any other line."""
    payload: Any = rec.get("payload") if isinstance(rec.get("payload"), dict) else None
    if rec.get("type") == "session_meta" and payload is not None:
        return payload.get("id"), payload.get("cwd")
    if "instructions" in rec and "id" in rec and "type" not in rec:
        return rec.get("id"), None
    return None, None


def record_turn(rec: dict[str, Any]) -> Turn | None:
    """The user or assistant message one line holds, or None (boilerplate, tool calls, events).

    One line at a time, so live capture (signet.capture) reads a growing rollout the same way
    ``parse`` reads a whole one."""
    payload: Any = rec.get("payload") if isinstance(rec.get("payload"), dict) else None
    item = payload if rec.get("type") == "response_item" else (rec if rec.get("type") == "message" else None)
    if not isinstance(item, dict) or item.get("type") != "message":
        return None
    role = item.get("role")
    if role not in ("user", "assistant"):
        return None
    text = text_of(item.get("content"))
    if text.startswith(BOILERPLATE):
        return None
    return Turn(role, text, normalize_time(rec.get("timestamp")))


ADAPTER = CodexAdapter()
