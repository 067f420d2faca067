"""The harnesses whose session files are followed, where those files live, and how a line reads.

Each harness's line reader is its ingest adapter's own (``record_turn`` / ``record_session``
in signet.ingest), so a file followed live and the same file given to ``signet ingest`` yield
the same turns.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from signet.ingest import claude_code, codex, openclaw
from signet.transcript import Turn


@dataclass(frozen=True)
class Followed:
    name: str
    default_roots: tuple[str, ...]
    record_session: Callable[[dict[str, Any]], tuple[Any, Any]]
    record_turn: Callable[[dict[str, Any]], Turn | None]
    needs_part: str | None = None
    """A folder name the file's path must contain under the root (OpenClaw keeps other JSONL
    beside its sessions)."""

    def wants(self, root: Path, path: Path) -> bool:
        """Whether ``path`` (inside ``root``) is a session file of this harness."""
        if path.suffix != ".jsonl":
            return False
        try:
            parts = path.relative_to(root).parts
        except ValueError:
            return False
        if any(p.startswith(".") for p in parts):
            return False
        return self.needs_part is None or self.needs_part in parts[:-1]


HARNESSES: dict[str, Followed] = {
    "claude-code": Followed(
        "claude-code", ("~/.claude/projects",), claude_code.record_session, claude_code.record_turn
    ),
    "codex": Followed("codex", ("~/.codex/sessions",), codex.record_session, codex.record_turn),
    "openclaw": Followed(
        "openclaw", ("~/.openclaw/agents",), openclaw.record_session, openclaw.record_turn, needs_part="sessions"
    ),
}
