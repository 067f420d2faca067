"""Row locking where several daemons write one PostgreSQL store (docs/team.md "Several daemons").

SQLite has one writer at a time, so a statement never meets another writer's row lock. On
PostgreSQL each daemon's writer commits groups of writes as one transaction, holding its row
locks until the group commits: a statement that can do without a row another writer holds
(leasing *a* job, counting a recall's hits) says so and skips it instead of waiting.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def skip_locked(conn: Any) -> str:
    """`` FOR UPDATE SKIP LOCKED`` for a sub-select on PostgreSQL, nothing on SQLite."""
    return " FOR UPDATE SKIP LOCKED" if getattr(conn, "dialect", "sqlite") == "postgres" else ""


def release_at_start(conn: Any, release: Callable[..., int], lease_timeout_ms: int, owner: str) -> int:
    """What a starting daemon releases of a job queue, through that queue's ``release(conn,
    lease_timeout_ms, owner=None)``: every lease on SQLite (it is the store's only daemon, so a
    lease there was left by its previous run); on PostgreSQL the expired ones and those its
    previous run took (``leased_by`` = ``owner``, its workspace's lease owner), never the live
    leases of the other daemons' workers."""
    if getattr(conn, "dialect", "sqlite") != "postgres":
        return release(conn, 0)
    return release(conn, lease_timeout_ms) + release(conn, 0, owner=owner)
