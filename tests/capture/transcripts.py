"""Session lines in each harness's real format (as signet.ingest's adapters and their tests read them)."""

from __future__ import annotations

import json
from typing import Any


def claude_line(session: str, i: int, role: str, text: str, cwd: str = "/home/u/alpha") -> str:
    """One Claude Code event line: ``{"type", "message": {"role", "content"}, "sessionId", ...}``."""
    content: Any = text if role == "user" else [{"type": "text", "text": text}]
    rec = {
        "parentUuid": f"u{i - 1}" if i else None,
        "isSidechain": False,
        "userType": "external",
        "cwd": cwd,
        "sessionId": session,
        "version": "1.0.80",
        "type": role,
        "message": {"role": role, "content": content},
        "uuid": f"u{i}",
        "timestamp": f"2026-03-01T10:{i // 60:02d}:{i % 60:02d}.000Z",
    }
    return json.dumps(rec) + "\n"


def codex_lines(session: str, turns: list[tuple[str, str]], *, meta: bool = True) -> str:
    out = []
    if meta:
        out.append(
            {
                "timestamp": "2026-03-01T10:00:00.000Z",
                "type": "session_meta",
                "payload": {"id": session, "timestamp": "2026-03-01T10:00:00.000Z", "cwd": "/home/u/beta"},
            }
        )
    for role, text in turns:
        kind = "input_text" if role == "user" else "output_text"
        out.append(
            {
                "timestamp": "2026-03-01T10:00:01.000Z",
                "type": "response_item",
                "payload": {"type": "message", "role": role, "content": [{"type": kind, "text": text}]},
            }
        )
    return "".join(json.dumps(r) + "\n" for r in out)


def openclaw_lines(session: str, turns: list[tuple[str, str]], *, header: bool = True) -> str:
    out: list[dict[str, Any]] = []
    if header:
        out.append(
            {"type": "session", "version": 3, "id": session, "timestamp": "2026-03-01T10:00:00Z", "cwd": "/w/gamma"}
        )
    for role, text in turns:
        out.append(
            {
                "type": "message",
                "timestamp": "2026-03-01T10:00:02Z",
                "message": {"role": role, "content": [{"type": "text", "text": text}]},
            }
        )
    return "".join(json.dumps(r) + "\n" for r in out)
