"""Storing an ingested transcript once: by content hash, with its turns and their times."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from signet.store import sessions as store
from signet.store.database import Database
from signet.store.sqlite import Connection
from signet.transcript import Turn


@dataclass
class IngestOutcome:
    status: str  # "stored" | "skipped"
    session_key: str
    turns: int
    job_id: str | None


def ingest_session_key(*, harness: str | None, adapter: str, session_id: str | None, path: str) -> str:
    """The transcript's session: the harness's own id when the file has one (a later
    session-end of the same session lands on the same key), else one per source path."""
    if session_id:
        return store.session_key(harness or adapter, session_id)
    return f"ingest:{adapter}:{hashlib.sha256(path.encode('utf-8')).hexdigest()[:16]}"


def ingest_transcript(
    db: Database,
    *,
    content_hash: str,
    path: str,
    adapter: str,
    turns: list[Turn],
    session_id: str | None,
    harness: str | None,
    project: str | None,
    agent_id: str,
    enqueue: bool,
    max_attempts: int,
) -> IngestOutcome:
    """Store the transcript unless this exact file was stored before; with ``enqueue``, queue
    its extraction with ``max_attempts`` (the pipeline's ``maxAttempts``)."""
    key = ingest_session_key(harness=harness, adapter=adapter, session_id=session_id, path=path)

    def write(conn: Connection) -> IngestOutcome:
        seen = store.ingested(conn, content_hash)
        if seen is not None:
            return IngestOutcome("skipped", seen["session_key"], int(seen["turns"]), None)
        store.store_transcript(conn, key, turns, harness=harness or adapter, project=project, agent_id=agent_id)
        now = store.now_iso()
        times = [t.timestamp for t in turns if t.timestamp]
        store.upsert_conversation(
            conn,
            key,
            session_id or key,
            harness=harness or adapter,
            project=project,
            agent_id=agent_id,
            started_at=min(times) if times else now,
            ended_at=max(times) if times else now,
            summary=None,
        )
        store.record_ingest(conn, content_hash, path, adapter, key, len(turns))
        job = None
        if enqueue and turns:
            job = store.enqueue_extraction(
                conn,
                {
                    "source": "ingest",
                    "session_key": key,
                    "harness": harness or adapter,
                    "project": project,
                    "agent_id": agent_id,
                    "path": path,
                },
                max_attempts=max_attempts,
            )
        return IngestOutcome("stored", key, len(turns), job)

    result: IngestOutcome = db.write(write)
    return result
