"""Storing an ingested transcript once: by content hash, with its turns and their times."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from signet.ingest.base import clean_turns
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


@dataclass
class Appended:
    """What :func:`append_turns` stored: turns added, and the first turn index it touched
    (a merged or new turn: where extraction of the new part starts)."""

    added: int
    first_index: int | None


def append_turns(
    conn: Connection,
    key: str,
    turns: list[Turn],
    *,
    session_id: str | None,
    harness: str,
    project: str | None,
    agent_id: str,
    skip_known: bool = False,
) -> Appended:
    """Append turns to a session's transcript inside the caller's transaction (live capture).

    The same shape :func:`ingest_transcript` stores: turns cleaned as a whole file's are
    (empty turns dropped, a speaker's consecutive turns merged, across appends too), the
    ``session_transcripts`` text kept equal to the rendered turns, the conversation's span
    widened. New turns are numbered after the highest stored one, so a session that
    ``signet ingest`` or a session-end hook stored in between is continued, not overwritten.
    ``skip_known`` leaves out turns whose role and text the session already holds (a file
    that was truncated or replaced is read again from its start).
    """
    new = clean_turns(turns)
    if skip_known and new:
        known = {
            (r[0], r[1])
            for r in conn.execute("SELECT role, content FROM transcript_turns WHERE session_key = ?", (key,))
        }
        new = [t for t in new if (t.role, t.content) not in known]
    if not new:
        return Appended(0, None)
    last = conn.execute(
        "SELECT turn_index, role, content, created_at FROM transcript_turns WHERE session_key = ?"
        " ORDER BY turn_index DESC LIMIT 1",
        (key,),
    ).fetchone()
    rendered: list[str] = []
    first: int | None = None
    nxt = 0 if last is None else int(last[0]) + 1
    if last is not None and last[1] == new[0].role and new[0].role != "note":
        head = new.pop(0)
        conn.execute(
            "UPDATE transcript_turns SET content = ?, created_at = COALESCE(created_at, ?)"
            " WHERE session_key = ? AND turn_index = ?",
            (last[2] + "\n\n" + head.content, head.timestamp, key, last[0]),
        )
        rendered.append(head.content)
        first = int(last[0])
    conn.executemany(
        "INSERT INTO transcript_turns(session_key, turn_index, role, content, created_at) VALUES (?, ?, ?, ?, ?)",
        [(key, nxt + i, t.role, t.content, t.timestamp) for i, t in enumerate(new)],
    )
    if first is None:
        first = nxt
    rendered.extend(f"{t.role}: {t.content}" for t in new)
    text = "\n\n".join(rendered)
    now = store.now_iso()
    times = [t.timestamp for t in turns if t.timestamp]
    start, end = (min(times), max(times)) if times else (now, now)
    conn.execute(
        "INSERT INTO session_transcripts(session_key, content, harness, project, agent_id, created_at)"
        " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT(session_key) DO UPDATE SET"
        " content = session_transcripts.content || char(10) || char(10) || excluded.content,"
        " project = COALESCE(session_transcripts.project, excluded.project)",
        (key, text, harness, project, agent_id, start),
    )
    conn.execute(
        "INSERT INTO conversations(id, session_id, harness, project, agent_id, started_at, ended_at, summary,"
        " created_at, updated_at, updated_by) VALUES (?, ?, ?, ?, ?, ?, ?, NULL, ?, ?, 'capture')"
        " ON CONFLICT(id) DO UPDATE SET ended_at = MAX(COALESCE(conversations.ended_at, ''), excluded.ended_at),"
        " updated_at = excluded.updated_at, version = conversations.version + 1",
        (key, session_id or key, harness, project, agent_id, start, end, now, now),
    )
    return Appended(len(new) + (1 if first < nxt else 0), first)
