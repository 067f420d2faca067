"""Damage to the thread-context index done behind the triggers' back, for repair tests.

The table is contentless (migration 15): FTS5 takes a row out only when told the exact text
it indexed, which is the row's text computed from ``memories``."""

from __future__ import annotations

from typing import Any

from signet.store.thread_context import rows_sql


def unindex(conn: Any, where: str) -> None:
    """Take the memories matching ``where`` (a condition on ``m``) out of ``memories_ctx_fts``."""
    for seq, content, context, *_ in conn.execute(rows_sql(where)).fetchall():
        conn.execute(
            "INSERT INTO memories_ctx_fts(memories_ctx_fts, rowid, content, context) VALUES ('delete', ?, ?, ?)",
            (seq, content, context),
        )
