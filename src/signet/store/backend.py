"""What the rest of Signet uses of a store, so SQLite and PostgreSQL can both be one.

Written from the callers (``grep`` over ``src/signet``: ``read`` 117 calls, ``write`` 115,
``submit`` 13, ``after_commit`` 9, plus opening, closing and the runtime's two hooks), not
from either implementation: a caller that needs more than this is tied to one engine.

The contract both keep:

- ``write(fn)`` runs ``fn(conn)`` in a write transaction and returns its result; if ``fn``
  raises, only its own changes roll back (a savepoint) and the error reaches the caller. A
  write called from inside a write runs inline, in the same transaction.
- ``after_commit(cb)`` (from a write function only) runs ``cb`` once that write has committed,
  never if it rolled back, before the writer's caller is woken (read-your-writes for
  in-memory mirrors such as the vector index).
- ``read(fn)`` runs ``fn(conn)`` in one consistent snapshot; a read inside a read on the same
  thread shares it.
- ``conn.execute(sql, params)`` takes the SQL the codebase writes (SQLite's dialect, ``?``
  placeholders) and returns a cursor with ``fetchone``/``fetchall``/``rowcount``; rows index
  by position and by column name. PostgreSQL translates it (signet.store.pg_dialect).
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future
from contextlib import AbstractContextManager
from typing import Any, Literal, Protocol, Self, TypeVar, runtime_checkable

T = TypeVar("T")

Dialect = Literal["sqlite", "postgres"]


@runtime_checkable
class StorageBackend(Protocol):
    dialect: Dialect
    """Which SQL engine is behind ``conn`` (for the few statements that must differ)."""

    on_trouble: Callable[[str, str | None], None] | None
    on_migrate: Callable[[list[int]], None] | None
    node: str
    """This process's name on the store, new at every start: who runs a piece of work recorded
    as running (signet.store.liveness tells whether that process is still there)."""
    lease_owner: str
    """Who this daemon is when it leases a job (``leased_by``): the workspace's lease owner
    (signet.store.choose.lease_owner), so a restart finds its own previous run's leases."""

    def open(self) -> Self: ...

    def close(self) -> None: ...

    def __enter__(self) -> Self: ...

    def __exit__(self, *exc: object) -> None: ...

    def write(self, fn: Callable[[Any], T], *, alone: bool = False) -> T: ...

    def submit(self, fn: Callable[[Any], Any]) -> Future[Any]: ...

    def after_commit(self, fn: Callable[[], None]) -> None: ...

    def read(self, fn: Callable[[Any], T]) -> T: ...

    def exclusive(self, name: str) -> AbstractContextManager[bool]:
        """``with store.exclusive(name) as mine:`` whether this daemon alone does the background
        work ``name`` now (a retention sweep, a maintenance cycle, a scheduled consolidation),
        held until the block ends. Never waits: another daemon doing it means ``False``, and
        the caller skips its turn. Always ``True`` on SQLite (one daemon per file); on
        PostgreSQL a session advisory lock, which the server drops with a dead daemon's session."""
        ...

    def describe(self) -> dict[str, Any]:
        """``backend``, ``location`` (file path, or host:port/database), ``user`` and the
        reader ``pool`` (max, open, in_use, waiting): what status and diagnostics show."""
        ...
