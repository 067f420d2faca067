"""SQL for capture cursors: read one, move one together with the turns it covers, queue
extraction for sessions that went quiet.

:func:`advance` is the only place a cursor moves, and it moves inside the transaction that
stores the turns read, after checking the cursor is still where the reader found it (compare
and set). Two followers of the same database (the daemon's and a ``signet watch``) can
therefore never store the same lines twice: the second one's check fails and it reads again
from where the first one stopped.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from signet.ingest.service import append_turns, ingest_session_key
from signet.store import sessions as store
from signet.store.sqlite import Connection
from signet.transcript import Turn


@dataclass(frozen=True)
class Cursor:
    path: str
    harness: str
    session_key: str | None
    offset: int
    device: int | None
    inode: int | None
    head_hash: str | None
    turns: int
    status: str


def load(conn: Connection, path: str) -> Cursor | None:
    row = conn.execute(
        "SELECT path, harness, session_key, offset, device, inode, head_hash, turns, status"
        " FROM capture_cursors WHERE path = ?",
        (path,),
    ).fetchone()
    return None if row is None else Cursor(*row)


@dataclass(frozen=True)
class Batch:
    """Lines read from ``start`` to ``end`` of ``path``, parsed."""

    path: str
    harness: str
    start: int
    end: int
    device: int
    inode: int
    head_hash: str
    turns: list[Turn]
    session_id: str | None
    project: str | None
    skipped: int
    restart: bool
    """The file was truncated or replaced: read again from 0; known turns are skipped."""
    status: str = "following"


class Moved(Exception):
    """The cursor is no longer where the reader found it (another follower moved it)."""


def advance(conn: Connection, batch: Batch, expected: Cursor | None, *, agent_id: str) -> int:
    """Store ``batch``'s turns and move the cursor to its end, in the caller's transaction.

    Raises :class:`Moved` when the stored cursor differs from ``expected``. Returns the number
    of turns stored."""
    current = load(conn, batch.path)
    if current != expected:
        raise Moved(batch.path)
    key = None if batch.restart or current is None else current.session_key
    if key is None and batch.session_id:
        key = store.session_key(batch.harness, batch.session_id)
    if key is None and batch.turns:
        key = ingest_session_key(harness=batch.harness, adapter=batch.harness, session_id=None, path=batch.path)
    added = 0
    first: int | None = None
    if key is not None and batch.turns:
        out = append_turns(
            conn,
            key,
            batch.turns,
            session_id=batch.session_id,
            harness=batch.harness,
            project=batch.project,
            agent_id=agent_id,
            skip_known=batch.restart,
        )
        added, first = out.added, out.first_index
    now = store.now_iso()
    conn.execute(
        "INSERT INTO capture_cursors(path, harness, session_key, offset, device, inode, head_hash, turns,"
        " skipped_lines, extract_from, grew_at, status, error, updated_at)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, NULL, ?)"
        " ON CONFLICT(path) DO UPDATE SET session_key = excluded.session_key, offset = excluded.offset,"
        " device = excluded.device, inode = excluded.inode, head_hash = excluded.head_hash,"
        " turns = CASE WHEN ? THEN excluded.turns ELSE capture_cursors.turns + excluded.turns END,"
        " skipped_lines = capture_cursors.skipped_lines + excluded.skipped_lines,"
        " extract_from = CASE WHEN excluded.extract_from IS NULL THEN capture_cursors.extract_from"
        " ELSE MIN(COALESCE(capture_cursors.extract_from, excluded.extract_from), excluded.extract_from) END,"
        " grew_at = COALESCE(excluded.grew_at, capture_cursors.grew_at), status = excluded.status,"
        " error = NULL, updated_at = excluded.updated_at",
        (
            batch.path,
            batch.harness,
            key,
            batch.end,
            batch.device,
            batch.inode,
            batch.head_hash,
            added,
            batch.skipped,
            first,
            now if added else None,
            batch.status,
            now,
            1 if batch.restart else 0,
        ),
    )
    return added


def due_for_extraction(conn: Connection, quiet_since: str) -> list[tuple[str, str, int]]:
    """(path, session key, first new turn) of sessions with unextracted turns, quiet since then."""
    rows = conn.execute(
        "SELECT path, session_key, extract_from FROM capture_cursors"
        " WHERE extract_from IS NOT NULL AND session_key IS NOT NULL AND grew_at <= ?",
        (quiet_since,),
    ).fetchall()
    return [(str(r[0]), str(r[1]), int(r[2])) for r in rows]


def mark_error(conn: Connection, path: str, harness: str, error: str) -> None:
    """Record why a file cannot be followed (``signet watch --status`` and the logs show it)."""
    conn.execute(
        "INSERT INTO capture_cursors(path, harness, status, error, updated_at) VALUES (?, ?, 'error', ?, ?)"
        " ON CONFLICT(path) DO UPDATE SET status = 'error', error = excluded.error, updated_at = excluded.updated_at",
        (path, harness, error[:500], store.now_iso()),
    )


def all_cursors(conn: Connection) -> list[dict[str, Any]]:
    rows = conn.execute(
        "SELECT path, harness, session_key, offset, turns, skipped_lines, status, error, updated_at"
        " FROM capture_cursors ORDER BY updated_at DESC"
    ).fetchall()
    return [dict(r) for r in rows]
