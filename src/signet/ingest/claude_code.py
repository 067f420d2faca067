"""Claude Code session transcripts (``~/.claude/projects/<dir>/<session>.jsonl``).

Lines are events: ``{"type": "user"|"assistant", "message": {"role", "content"},
"timestamp", "sessionId", "cwd", "isSidechain", "isMeta", ...}`` plus ``summary`` and
``system`` lines. Content is a string or a list of parts; only ``text`` parts are kept
(tool use, tool results and thinking stay out). Meta lines and sidechains are skipped.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from signet.ingest.base import Transcript, first_json, harness_transcript, jsonl_records, normalize_time, text_of
from signet.transcript import Turn

NAME = "claude-code"


class ClaudeCodeAdapter:
    name = NAME
    priority = 30

    def can_handle(self, path: Path, first_line: str | None) -> bool:
        obj = first_json(path, first_line)
        if obj is None:
            return False
        if obj.get("type") == "summary" and "leafUuid" in obj:
            return True
        return "sessionId" in obj and ("parentUuid" in obj or obj.get("type") in ("user", "assistant", "system"))

    def parse(self, path: Path) -> Transcript:
        turns: list[Turn] = []
        session_id = cwd = None
        for _, rec in jsonl_records(path):
            sid, where = record_session(rec)
            session_id, cwd = session_id or sid, cwd or where
            turn = record_turn(rec)
            if turn is not None:
                turns.append(turn)
        return harness_transcript(NAME, turns, session_id, cwd)


def record_session(rec: dict[str, Any]) -> tuple[Any, Any]:
    """(session id, working directory) a line names; every event line carries both."""
    return rec.get("sessionId"), rec.get("cwd")


def record_turn(rec: dict[str, Any]) -> Turn | None:
    """The turn one line holds, or None (meta, sidechain, command echo, not a message).

    One line at a time, so live capture (signet.capture) reads a growing file the same way
    ``parse`` reads a whole one."""
    if rec.get("type") not in ("user", "assistant") or rec.get("isMeta") or rec.get("isSidechain"):
        return None
    msg = rec.get("message")
    if not isinstance(msg, dict):
        return None
    role = msg.get("role") or rec.get("type")
    text = text_of(msg.get("content"), ("text",))
    if text.startswith("<command-name>") or text.startswith("<local-command-stdout>"):
        return None
    return Turn(str(role), text, normalize_time(rec.get("timestamp")))


ADAPTER = ClaudeCodeAdapter()
