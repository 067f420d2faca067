"""psycopg's errors as the store's callers already understand them.

Callers catch the SQLite driver's classes (``except sqlite3.IntegrityError`` in the importer,
``sqlite3.Error`` around background work, the daemon's handler for ``sqlite3.DatabaseError``).
Two ways to make those clauses hold on PostgreSQL were weighed:

- a backend-neutral tuple (``db.errors.IntegrityError``) that every clause names: the tuple
  needs psycopg's classes, which the default install does not have (psycopg is the
  ``postgres`` extra), so it would have to be built lazily and every clause rewritten, and a
  clause written tomorrow against ``sqlite3`` would silently miss PostgreSQL again;
- **translation at the store's boundary** (chosen): the PostgreSQL connection raises a
  subclass of the matching DB-API class of :mod:`signet.store.sqlite` (both drivers follow PEP
  249, so the classes correspond one to one), carrying PostgreSQL's ``sqlstate`` and the
  original error as ``__cause__``. Every existing clause, and every future one, holds on both
  engines; nothing outside the store imports psycopg.

A lost connection (the server restarted or went away) is not a statement's fault: it becomes
:class:`signet.errors.StorageError` (503, "retry") naming the server without its password.
"""

from __future__ import annotations

from typing import Any

import psycopg

from signet.errors import StorageError
from signet.store.pg_url import Target, scrub
from signet.store.sqlite import sqlite3

LOST_SQLSTATES = frozenset({"57P01", "57P02", "57P03"})
"""admin_shutdown, crash_shutdown, cannot_connect_now: the server went away or restarts."""


def _mapped(base: type[BaseException]) -> type[BaseException]:
    """A subclass of ``base`` (a sqlite3 DB-API class) that says it came from PostgreSQL."""
    return type(f"Postgres{base.__name__}", (base,), {"__module__": __name__, "sqlstate": None})


_ORDER: list[tuple[type[BaseException], type[BaseException]]] = [
    (psycopg.IntegrityError, _mapped(sqlite3.IntegrityError)),
    (psycopg.DataError, _mapped(sqlite3.DataError)),
    (psycopg.OperationalError, _mapped(sqlite3.OperationalError)),
    (psycopg.ProgrammingError, _mapped(sqlite3.ProgrammingError)),
    (psycopg.NotSupportedError, _mapped(sqlite3.NotSupportedError)),
    (psycopg.InternalError, _mapped(sqlite3.InternalError)),
    (psycopg.DatabaseError, _mapped(sqlite3.DatabaseError)),
    (psycopg.InterfaceError, _mapped(sqlite3.InterfaceError)),
    (psycopg.Error, _mapped(sqlite3.Error)),
]

IntegrityError = _ORDER[0][1]
"""What a unique or foreign-key violation on PostgreSQL is raised as (an ``sqlite3.IntegrityError``)."""


def connection_lost(exc: BaseException, raw: Any = None) -> bool:
    """Whether ``exc`` means the connection is gone rather than the statement wrong."""
    if not isinstance(exc, psycopg.OperationalError):
        return False
    if raw is not None and (raw.broken or raw.closed):
        return True
    state = getattr(exc, "sqlstate", None)
    return state is None or state.startswith("08") or state in LOST_SQLSTATES


def lost(exc: BaseException, target: Target) -> StorageError:
    """The one line a caller sees when the server went away mid-request. It does not claim
    that nothing was written: a connection cut during COMMIT leaves the outcome to the server
    (the write is then either whole or absent, never half; a retried remember finds its twin
    by content hash)."""
    text = " ".join(scrub(str(exc), target.password).split())
    return StorageError(
        f"PostgreSQL at {target.shown} is unreachable ({text}); retry the request (the daemon reconnects by itself)",
        code="storage_unavailable",
    )


def translate(exc: BaseException, target: Target, raw: Any = None) -> BaseException:
    """The error callers get for psycopg's ``exc`` (see the module's docstring)."""
    if connection_lost(exc, raw):
        return lost(exc, target)
    for pg_class, ours in _ORDER:
        if isinstance(exc, pg_class):
            err = ours(" ".join(scrub(str(exc), target.password).split()))
            err.sqlstate = getattr(exc, "sqlstate", None)  # type: ignore[attr-defined]
            return err
    return exc
