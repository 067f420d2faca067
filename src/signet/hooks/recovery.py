"""Sessions that ended while the daemon was down.

``signet hook session-end`` writes the cleaned transcript to
``memory/<harness>/transcripts/<session>.jsonl`` itself when it cannot reach the daemon. When
the runtime starts, every such file whose session is not in the database yet is stored and its
extraction queued. One query and one first-line read per file: cheap enough for start-up.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from pathlib import Path

from signet.ingest.base import TranscriptError, file_hash, first_line
from signet.ingest.jsonl_generic import ADAPTER as JSONL
from signet.ingest.service import ingest_transcript
from signet.store.database import Database
from signet.store.sqlite import Connection
from signet.transcript import Turn

log = logging.getLogger(__name__)


def pending_transcripts(root: Path) -> list[Path]:
    """Session files kept by the hook (``*.full.jsonl`` copies of long sessions are not sessions)."""
    return sorted(p for p in root.glob("memory/*/transcripts/*.jsonl") if not p.name.endswith(".full.jsonl"))


def session_key_of(path: Path) -> str | None:
    line = first_line(path)
    try:
        obj = json.loads(line) if line else None
    except json.JSONDecodeError:
        return None
    key = obj.get("session_key") if isinstance(obj, dict) else None
    return key if isinstance(key, str) and ":" in key else None


Recovered = Callable[[str, str, str, list[Turn]], None]
"""Told ``(session key, session id, harness, turns)`` of each session stored."""


def recover(db: Database, root: Path, *, enqueue: bool, max_attempts: int, on_stored: Recovered | None = None) -> int:
    """Store the kept transcripts the database does not have; returns how many were stored.
    ``on_stored`` gives each stored session what its session-end hook would have given it
    (signet.hooks.service.HookService.recovered: checkpoint, continuity score, summary job)."""
    files = pending_transcripts(root)
    if not files:
        return 0

    def known_keys(conn: Connection) -> set[str]:
        return {r[0] for r in conn.execute("SELECT session_key FROM session_transcripts")}

    known = db.read(known_keys)
    stored = 0
    for path in files:
        key = session_key_of(path)
        if key is None or key in known:
            continue
        try:
            parsed = JSONL.parse(path)
        except (TranscriptError, OSError) as exc:
            log.warning("offline transcript %s not recovered: %s", path, exc)
            continue
        if not parsed.turns:
            continue
        harness, session_id = key.split(":", 1)
        out = ingest_transcript(
            db,
            content_hash=file_hash(path.read_bytes()),
            path=str(path),
            adapter=JSONL.name,
            turns=parsed.turns,
            session_id=session_id,
            harness=harness,
            project=None,
            agent_id="default",
            enqueue=enqueue,
            max_attempts=max_attempts,
        )
        if out.status == "stored":
            stored += 1
            if on_stored is not None:
                on_stored(key, session_id, harness, parsed.turns)
    if stored:
        log.info("recovered %d session transcript(s) kept while the daemon was down", stored)
    return stored
