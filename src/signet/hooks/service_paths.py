"""Where session transcripts are kept (stdlib only; shared by the daemon and the hook)."""

from __future__ import annotations

import re
from pathlib import Path

_SAFE = re.compile(r"[^A-Za-z0-9._-]+")


def safe_name(text: str) -> str:
    return _SAFE.sub("_", text).strip("._")[:120] or "session"


def transcript_file(root: Path, harness: str, session_id: str) -> Path:
    """``$SIGNET_WORKSPACE/memory/<harness>/transcripts/<session>.jsonl``."""
    return root / "memory" / safe_name(harness) / "transcripts" / f"{safe_name(session_id)}.jsonl"
