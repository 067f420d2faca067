"""A transcript turn: the unit the hooks capture, the ingest adapters parse and the store keeps.

It lives below every layer (standard library only) because the session store, the ingest
adapters, the hook service and the pipeline all speak it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Turn:
    role: str
    content: str
    timestamp: str | None = None
    """ISO-8601 UTC, when the source says when the turn happened."""

    def to_dict(self) -> dict[str, Any]:
        return {"role": self.role, "content": self.content, "timestamp": self.timestamp}


def render_transcript(turns: list[Turn]) -> str:
    """The transcript as plain text (``role: content`` blocks), for humans and LLMs."""
    return "\n\n".join(f"{t.role}: {t.content}" for t in turns)
