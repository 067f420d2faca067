"""SQL for hook sessions, transcripts, injections, handoffs and the ingest ledger.

Every function takes a connection and runs inside the caller's ``db.write``/``db.read``;
none does I/O beyond SQLite.
"""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime
from typing import Any

from signet.store.sqlite import Connection
from signet.transcript import Turn, render_transcript


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="microseconds")


def session_key(harness: str, session_id: str) -> str:
    return f"{harness}:{session_id}"


def touch_session(
    conn: Connection, key: str, harness: str, project: str | None, agent_id: str, *, advance: bool = False
) -> int:
    """Create or refresh a hook session; with ``advance`` count one more prompt turn. Returns the turn."""
    now = now_iso()
    conn.execute(
        "INSERT INTO hook_sessions(session_key, harness, project, agent_id, turn, started_at, updated_at)"
        " VALUES (?, ?, ?, ?, 0, ?, ?)"
        " ON CONFLICT(session_key) DO UPDATE SET updated_at = excluded.updated_at,"
        " project = COALESCE(excluded.project, hook_sessions.project)",
        (key, harness, project, agent_id, now, now),
    )
    if advance:
        conn.execute("UPDATE hook_sessions SET turn = turn + 1 WHERE session_key = ?", (key,))
    return int(conn.execute("SELECT turn FROM hook_sessions WHERE session_key = ?", (key,)).fetchone()[0])


def recently_injected(conn: Connection, key: str, since_turn: int) -> set[str]:
    rows = conn.execute("SELECT memory_id FROM hook_injections WHERE session_key = ? AND turn >= ?", (key, since_turn))
    return {r[0] for r in rows}


def record_injections(conn: Connection, key: str, memory_ids: list[str], turn: int, event: str) -> None:
    now = now_iso()
    conn.executemany(
        "INSERT INTO hook_injections(session_key, memory_id, turn, event, injected_at) VALUES (?, ?, ?, ?, ?)"
        " ON CONFLICT(session_key, memory_id) DO UPDATE SET turn = excluded.turn, event = excluded.event,"
        " injected_at = excluded.injected_at",
        [(key, mid, turn, event, now) for mid in memory_ids],
    )


def store_transcript(
    conn: Connection, key: str, turns: list[Turn], *, harness: str, project: str | None, agent_id: str
) -> None:
    """Replace a session's turns and its ``session_transcripts`` row (idempotent per session).

    A session that live capture follows (``capture_cursors``, signet.capture) keeps the turns
    captured from its file: they are the file's own, complete, while a session-end hook's copy
    may be cut to fit a request; anything the file holds beyond them is captured from it."""
    if conn.execute("SELECT 1 FROM capture_cursors WHERE session_key = ? LIMIT 1", (key,)).fetchone() is not None:
        return
    conn.execute("DELETE FROM transcript_turns WHERE session_key = ?", (key,))
    conn.executemany(
        "INSERT INTO transcript_turns(session_key, turn_index, role, content, created_at) VALUES (?, ?, ?, ?, ?)",
        [(key, i, t.role, t.content, t.timestamp) for i, t in enumerate(turns)],
    )
    created = next((t.timestamp for t in turns if t.timestamp), None) or now_iso()
    conn.execute(
        "INSERT INTO session_transcripts(session_key, content, harness, project, agent_id, created_at)"
        " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT(session_key) DO UPDATE SET content = excluded.content,"
        " harness = excluded.harness, project = excluded.project",
        (key, render_transcript(turns), harness, project, agent_id, created),
    )


def transcript_turns(conn: Connection, key: str) -> list[Turn]:
    rows = conn.execute(
        "SELECT role, content, created_at FROM transcript_turns WHERE session_key = ? ORDER BY turn_index", (key,)
    )
    return [Turn(r[0], r[1], r[2]) for r in rows]


def upsert_conversation(
    conn: Connection,
    key: str,
    session_id: str,
    *,
    harness: str,
    project: str | None,
    agent_id: str,
    started_at: str,
    ended_at: str,
    summary: str | None,
) -> None:
    now = now_iso()
    conn.execute(
        "INSERT INTO conversations(id, session_id, harness, project, agent_id, started_at, ended_at, summary,"
        " created_at, updated_at, updated_by) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'hooks')"
        " ON CONFLICT(id) DO UPDATE SET ended_at = excluded.ended_at, summary = excluded.summary,"
        " updated_at = excluded.updated_at, version = conversations.version + 1",
        (key, session_id, harness, project, agent_id, started_at, ended_at, summary, now, now),
    )


def upsert_handoff(
    conn: Connection, key: str, *, harness: str, project: str | None, agent_id: str, kind: str, content: str
) -> str:
    now = now_iso()
    row = conn.execute("SELECT id FROM session_handoffs WHERE session_key = ?", (key,)).fetchone()
    if row is not None:
        conn.execute(
            "UPDATE session_handoffs SET kind = ?, content = ?, updated_at = ?, project = COALESCE(?, project)"
            " WHERE id = ?",
            (kind, content, now, project, row[0]),
        )
        return str(row[0])
    hid = str(uuid.uuid4())
    conn.execute(
        "INSERT INTO session_handoffs(id, session_key, harness, project, agent_id, kind, content, created_at,"
        " updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (hid, key, harness, project, agent_id, kind, content, now, now),
    )
    return hid


def latest_handoff(conn: Connection, *, project: str | None, agent_id: str, exclude_key: str | None) -> Any:
    """The newest handoff of another session of this project (of any project when unknown)."""
    clause, params = ("project = ?", [project]) if project is not None else ("1=1", [])
    return conn.execute(
        f"SELECT * FROM session_handoffs WHERE {clause} AND agent_id = ? AND session_key != ?"
        " ORDER BY updated_at DESC LIMIT 1",
        (*params, agent_id, exclude_key or ""),
    ).fetchone()


def enqueue_extraction(conn: Connection, payload: dict[str, Any], *, max_attempts: int) -> str:
    """A pending ``extract`` job in ``memory_jobs`` for the pipeline worker to lease.

    ``max_attempts`` is the pipeline's ``maxAttempts`` setting; it has no default here so no
    caller can quietly queue jobs with a retry budget other than the configured one.

    Transcript jobs carry ``session_key`` (no ``memory_id``): the worker reads the turns
    from ``transcript_turns``. One pending job per transcript: a re-sent session replaces
    nothing and queues nothing twice.
    """
    key = payload.get("session_key")
    if key is not None:
        row = conn.execute(
            "SELECT id FROM memory_jobs WHERE job_type = 'extract'"
            " AND status IN ('pending', 'waiting_for_provider', 'waiting_for_budget')"
            " AND json_extract(payload, '$.session_key') = ?",
            (key,),
        ).fetchone()
        if row is not None:
            return str(row[0])
    jid = str(uuid.uuid4())
    now = now_iso()
    conn.execute(
        "INSERT INTO memory_jobs(id, memory_id, job_type, status, payload, max_attempts, created_at, updated_at)"
        " VALUES (?, NULL, 'extract', 'pending', ?, ?, ?, ?)",
        (jid, json.dumps(payload), max_attempts, now, now),
    )
    return jid


def queue_captured_extraction(
    conn: Connection, path: str, key: str, turn_from: int, *, agent_id: str, max_attempts: int
) -> str | None:
    """Queue extraction of a captured session's turns from ``turn_from`` and clear the cursor's
    mark, in one transaction (a crash queues it again, never loses it). Live capture
    (signet.capture) calls it for sessions gone quiet; a session-end hook for the session it
    follows (:func:`flush_captured`)."""
    row = conn.execute(
        "SELECT extract_from FROM capture_cursors WHERE path = ? AND extract_from IS NOT NULL", (path,)
    ).fetchone()
    if row is None:
        return None
    meta: Any = conn.execute(
        "SELECT harness, project FROM session_transcripts WHERE session_key = ?", (key,)
    ).fetchone()
    job = enqueue_extraction(
        conn,
        {
            "source": "capture",
            "session_key": key,
            "harness": meta[0] if meta else None,
            "project": meta[1] if meta else None,
            "agent_id": agent_id,
            "path": path,
            "turn_from": min(int(row[0]), turn_from),
        },
        max_attempts=max_attempts,
    )
    conn.execute("UPDATE capture_cursors SET extract_from = NULL WHERE path = ?", (path,))
    return job


def flush_captured(conn: Connection, key: str, *, agent_id: str, max_attempts: int) -> tuple[bool, str | None]:
    """For a session-end hook: whether live capture follows session ``key`` and the job queued
    for the turns it captured but had not queued yet (None: nothing was waiting).

    A followed session is extracted from its captured turns, in the jobs capture queues as it
    goes; extracting the hook's whole transcript as well would pay the LLM twice for the same
    turns. Turns capture reads after this are queued by capture when the file goes quiet."""
    rows = conn.execute("SELECT path, extract_from FROM capture_cursors WHERE session_key = ?", (key,)).fetchall()
    if not rows:
        return False, None
    job = None
    for path, start in rows:
        if start is not None:
            job = (
                queue_captured_extraction(
                    conn, str(path), key, int(start), agent_id=agent_id, max_attempts=max_attempts
                )
                or job
            )
    return True, job


def ingested(conn: Connection, content_hash: str) -> Any:
    return conn.execute("SELECT * FROM ingested_files WHERE content_hash = ?", (content_hash,)).fetchone()


def record_ingest(conn: Connection, content_hash: str, path: str, adapter: str, key: str, turns: int) -> None:
    conn.execute(
        "INSERT OR REPLACE INTO ingested_files(content_hash, path, adapter, session_key, turns, ingested_at)"
        " VALUES (?, ?, ?, ?, ?, ?)",
        (content_hash, path, adapter, key, turns, now_iso()),
    )
