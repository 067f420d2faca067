"""Whether the process that recorded a piece of work as running is still there.

A daemon that dies leaves rows saying ``running`` (a task run, say). Whoever finds them must
tell a dead daemon's leftovers from the live work of another daemon on the same store, or a
starting daemon marks its neighbour's running work as interrupted. Each store process has a
``node`` name, new at every start (signet.store.group_writer), recorded beside such rows:

- SQLite: one daemon per file (the daemon's lock), so a row recorded by any node but the
  caller's was left by a process that is gone.
- PostgreSQL: every connection a daemon opens carries its node as ``application_name``
  (signet.store.postgres), and the server drops a dead process's sessions, so a node with no
  session in ``pg_stat_activity`` is gone. No heartbeat and no clock: a daemon that is alive
  holds at least its writer's connection. ``application_name`` is shown to every role, so this
  holds for a non-superuser too.
"""

from __future__ import annotations

from typing import Any


def orphaned(conn: Any, column: str) -> str:
    """A condition, for ``conn``'s engine, true when ``column`` names no live process of the
    store (or is NULL: a row written before the column existed). It takes one parameter: the
    caller's own node, which is never an orphan."""
    if getattr(conn, "dialect", "sqlite") == "postgres":
        return (
            f"({column} IS NULL OR ({column} <> ? AND {column} NOT IN "
            "(SELECT application_name FROM pg_stat_activity WHERE application_name IS NOT NULL)))"
        )
    return f"({column} IS NULL OR {column} <> ?)"
