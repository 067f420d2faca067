"""Session transcript files: where they live and how they are written.

Stdlib only: the daemon writes them at session end, and ``signet hook`` writes them itself
when the daemon is down (``signet.hooks.recovery`` stores those later).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

_SAFE = re.compile(r"[^A-Za-z0-9._-]+")


def safe_name(text: str) -> str:
    return _SAFE.sub("_", text).strip("._")[:120] or "session"


def transcript_file(root: Path, harness: str, session_id: str) -> Path:
    """``$SIGNET_WORKSPACE/memory/<harness>/transcripts/<session>.jsonl``."""
    return root / "memory" / safe_name(harness) / "transcripts" / f"{safe_name(session_id)}.jsonl"


def write_transcript(path: Path, session_key: str, turns: Iterable[dict[str, Any]]) -> None:
    """One turn per line (``session_key``, ``index``, ``role``, ``content``, ``timestamp``),
    written atomically so a crash never leaves half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("w", encoding="utf-8") as fh:
        for i, t in enumerate(turns):
            fh.write(json.dumps({"session_key": session_key, "index": i, **t}, ensure_ascii=False) + "\n")
    tmp.replace(path)
