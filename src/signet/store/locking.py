"""Row locking where several daemons write one PostgreSQL store (docs/team.md "Several daemons").

SQLite has one writer at a time, so a statement never meets another writer's row lock. On
PostgreSQL each daemon's writer commits groups of writes as one transaction, holding its row
locks until the group commits: a statement that can do without a row another writer holds
(leasing *a* job, counting a recall's hits) says so and skips it instead of waiting.
"""

from __future__ import annotations

from typing import Any


def skip_locked(conn: Any) -> str:
    """`` FOR UPDATE SKIP LOCKED`` for a sub-select on PostgreSQL, nothing on SQLite."""
    return " FOR UPDATE SKIP LOCKED" if getattr(conn, "dialect", "sqlite") == "postgres" else ""
