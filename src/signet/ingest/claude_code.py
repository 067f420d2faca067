"""Claude Code session transcripts (``~/.claude/projects/<dir>/<session>.jsonl``).

Lines are events: ``{"type": "user"|"assistant", "message": {"role", "content"},
"timestamp", "sessionId", "cwd", "isSidechain", "isMeta", ...}`` plus ``summary`` and
``system`` lines. Content is a string or a list of parts; only ``text`` parts are kept
(tool use, tool results and thinking stay out). Meta lines and sidechains are skipped.
"""

from __future__ import annotations

from pathlib import Path

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
            session_id = session_id or rec.get("sessionId")
            cwd = cwd or rec.get("cwd")
            if rec.get("type") not in ("user", "assistant") or rec.get("isMeta") or rec.get("isSidechain"):
                continue
            msg = rec.get("message")
            if not isinstance(msg, dict):
                continue
            role = msg.get("role") or rec.get("type")
            text = text_of(msg.get("content"), ("text",))
            if text.startswith("<command-name>") or text.startswith("<local-command-stdout>"):
                continue
            turns.append(Turn(str(role), text, normalize_time(rec.get("timestamp"))))
        return harness_transcript(NAME, turns, session_id, cwd)


ADAPTER = ClaudeCodeAdapter()
