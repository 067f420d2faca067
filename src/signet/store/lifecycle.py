"""The SQL of a memory's later life (docs/lifecycle.md): the retirement ledger (migration 21)
and the signal watermarks (migration 22). Called inside the caller's transaction."""

from __future__ import annotations

from typing import Any

from signet.store.records import now_iso
from signet.store.sqlite import Connection

# -- retirement ledger -----------------------------------------------------------------------


def retirement(conn: Connection, content_hash: str, agent_id: str, project: str | None) -> Any:
    """The ledger row that refuses this text for this owner, or None."""
    return conn.execute(
        "SELECT * FROM memory_retirements WHERE content_hash = ? AND agent_id = ? AND project = ?",
        (content_hash, agent_id, project or ""),
    ).fetchone()


def retire(
    conn: Connection,
    *,
    content_hash: str,
    agent_id: str,
    project: str | None,
    memory_id: str | None,
    content: str | None,
    reason: str | None,
    retired_by: str | None,
    retired_at: str | None = None,
) -> None:
    """Record (or refresh) a retirement: the text stays out for this owner until un-retired."""
    conn.execute(
        "INSERT INTO memory_retirements(content_hash, agent_id, project, memory_id, content, reason, retired_by,"
        " retired_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(content_hash, agent_id, project) DO UPDATE SET"
        " memory_id = excluded.memory_id, content = excluded.content, reason = excluded.reason,"
        " retired_by = excluded.retired_by, retired_at = excluded.retired_at",
        (content_hash, agent_id, project or "", memory_id, content, reason, retired_by, retired_at or now_iso()),
    )


def unretire_memory(conn: Connection, memory_id: str) -> list[Any]:
    """Drop the ledger rows a memory's retirement wrote; returns them."""
    rows = list(conn.execute("SELECT * FROM memory_retirements WHERE memory_id = ?", (memory_id,)))
    conn.execute("DELETE FROM memory_retirements WHERE memory_id = ?", (memory_id,))
    return rows


def retirements(conn: Connection, *, where: str = "1", params: tuple[Any, ...] = ()) -> list[Any]:
    return list(conn.execute(f"SELECT * FROM memory_retirements WHERE {where} ORDER BY retired_at, rowid", params))


# -- signal watermarks -------------------------------------------------------------------------


def watermark(conn: Connection, consumer: str) -> int | None:
    row = conn.execute("SELECT last_seq FROM signal_watermarks WHERE consumer = ?", (consumer,)).fetchone()
    return None if row is None else int(row[0])


def pending_signals(
    conn: Connection, *, after_seq: int, min_importance: float, created_since: str, limit: int, where: str, params: Any
) -> list[Any]:
    """Live memories above the importance bar, newer than the watermark and created since
    ``created_since`` (an ISO time), oldest first."""
    return list(
        conn.execute(
            f"SELECT m.* FROM memories m WHERE m.seq > ? AND m.is_deleted = 0 AND m.importance >= ?"
            f" AND m.created_at >= ? AND {where} ORDER BY m.seq LIMIT ?",
            (after_seq, min_importance, created_since, *params, limit),
        )
    )


def advance(conn: Connection, consumer: str, seq: int, delivered: int) -> None:
    """Move a consumer's watermark forward (never back) and count what it was given."""
    now = now_iso()
    conn.execute(
        "INSERT INTO signal_watermarks(consumer, last_seq, delivered, created_at, updated_at) VALUES (?, ?, ?, ?, ?)"
        " ON CONFLICT(consumer) DO UPDATE SET last_seq = MAX(last_seq, excluded.last_seq),"
        " delivered = delivered + excluded.delivered, updated_at = excluded.updated_at",
        (consumer, seq, delivered, now, now),
    )
