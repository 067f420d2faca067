"""The store on PostgreSQL: the same contract as :class:`signet.store.database.Database`.

Why it is shaped like the SQLite store rather than "a connection per request": the callers
rely on a write being one function whose changes roll back alone when it raises, on
``after_commit`` callbacks running in commit order before the caller is woken (the vector
index mirrors the table through them), and on a read seeing one snapshot. So each daemon
keeps one writer thread with its own connection and commits the writes that arrive together
as one transaction, each inside a SAVEPOINT (PostgreSQL has them too); several daemons are
several writers, and PostgreSQL's row locks order them. Reads take a pooled connection
(psycopg_pool) and run in a REPEATABLE READ READ ONLY transaction: one snapshot, like a
SQLite read transaction in WAL mode.

Statements are the codebase's SQLite SQL, translated once per distinct text
(signet.store.pg_dialect). Parameters are bound client-side (``ClientCursor``): SQLite SQL
leans on untyped parameters (``? IS NULL OR col = ?``) that server-side binding rejects
("could not determine data type of parameter"); libpq quotes every value, so this is not
string building.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, Self, TypeVar

import psycopg
from psycopg import ClientCursor
from psycopg.rows import RowMaker
from psycopg_pool import ConnectionPool, PoolTimeout

from signet.errors import StorageBusy, StorageError
from signet.store import pg_dialect, pg_migrations
from signet.store.backend import Dialect
from signet.store.group_writer import GroupWriter
from signet.store.pg_url import Target, scrub

log = logging.getLogger(__name__)

T = TypeVar("T")
WriteFn = Callable[[Any], Any]

_GROUP_MAX = 64
POOL_WAIT_S = 60.0


class Row(tuple[Any, ...]):
    """A result row that indexes by position and by column name, like ``sqlite3.Row``."""

    _names: dict[str, int]

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, str):
            try:
                return tuple.__getitem__(self, self._names[key])
            except KeyError:
                raise IndexError(f"no such column: {key}") from None
        return tuple.__getitem__(self, key)

    def keys(self) -> list[str]:
        return list(self._names)


def _row_factory(cursor: Any) -> RowMaker[Row]:
    desc = cursor.description
    names = {c.name: i for i, c in enumerate(desc)} if desc else {}

    def make(values: Sequence[Any]) -> Row:
        row = Row(values)
        row._names = names
        return row

    return make


def _params(params: Any) -> Any:
    """SQLite stores a bool as 0/1 and the schema's flags are INTEGER: send them as such."""
    if params is None:
        return None
    if isinstance(params, Mapping):
        return {k: int(v) if isinstance(v, bool) else v for k, v in params.items()}
    return [int(v) if isinstance(v, bool) else v for v in params]


class Connection:
    """What a write or read function is given: ``execute`` takes SQLite SQL (translated)."""

    dialect: Dialect = "postgres"
    """For the few callers whose SQL must differ by engine (a SQLite connection has none)."""

    def __init__(self, raw: psycopg.Connection[Any]) -> None:
        self.raw = raw

    def execute(self, sql: str, params: Any = None) -> psycopg.Cursor[Any]:
        cur = self.raw.cursor(row_factory=_row_factory)
        if params is None or len(params) == 0:
            cur.execute(pg_dialect.translate(sql, with_params=False))
        else:
            cur.execute(pg_dialect.translate(sql, with_params=True), _params(params))
        return cur

    def executemany(self, sql: str, seq: Any) -> psycopg.Cursor[Any]:
        cur = self.raw.cursor(row_factory=_row_factory)
        cur.executemany(pg_dialect.translate(sql, with_params=True), [_params(p) for p in seq])
        return cur


class PostgresDatabase(GroupWriter):
    """A PostgreSQL database: one writer thread (signet.store.group_writer) and a pool of
    reader connections."""

    dialect: Dialect = "postgres"
    engine_errors = (psycopg.Error,)

    def __init__(self, target: Target, *, pool_size: int = 8, apply_migrations: bool = True) -> None:
        super().__init__()
        self.target = target
        self.pool_size = pool_size
        self.apply_migrations = apply_migrations
        self._pool: ConnectionPool[Any] | None = None
        self._local = threading.local()
        self._trouble_code: str | None = None
        """The code of the storage problem the last failed group hit, until a write lands."""
        self.on_trouble: Callable[[str, str | None], None] | None = None
        self.on_migrate: Callable[[list[int]], None] | None = None

    def __repr__(self) -> str:
        return f"PostgresDatabase({self.target.shown!r})"

    # -- lifecycle -------------------------------------------------------------------------
    def _connect(self) -> psycopg.Connection[Any]:
        kwargs: dict[str, Any] = {"autocommit": True, "cursor_factory": ClientCursor}
        if self.target.password:
            kwargs["password"] = self.target.password
        return psycopg.connect(self.target.conninfo, **kwargs)

    def _error(self, exc: BaseException) -> StorageError:
        """A connection-level failure in one line, with no password in it."""
        return StorageError(f"PostgreSQL at {self.target.shown}: {scrub(str(exc), self.target.password)}")

    def open(self) -> Self:
        try:
            raw = self._connect()
        except psycopg.Error as exc:
            raise self._error(exc) from None
        self._write_conn = Connection(raw)
        try:
            if self.apply_migrations:
                pg_migrations.migrate(raw, before=self._before_migration)
            pg_dialect.load_keys([(str(r[0]), list(r[1])) for r in raw.execute(pg_dialect.KEYS_SQL).fetchall()])
        except BaseException:
            raw.close()  # a refused migration must not leave the connection (and its session) open
            raise
        kwargs: dict[str, Any] = {"autocommit": True, "cursor_factory": ClientCursor}
        if self.target.password:
            kwargs["password"] = self.target.password
        self._pool = ConnectionPool(
            self.target.conninfo,
            kwargs=kwargs,
            min_size=1,
            max_size=self.pool_size,
            timeout=POOL_WAIT_S,
            name="signet-pg-readers",
            open=True,
        )
        self._start_writer("signet-pg-writer")
        return self

    def _before_migration(self, versions: list[int]) -> None:
        if self.on_migrate is not None:
            self.on_migrate(versions)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._stop_writer()
        if self._write_conn is not None:
            self._write_conn.raw.close()
        if self._pool is not None:
            self._pool.close()

    def __enter__(self) -> Self:
        return self.open()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- writes (signet.store.group_writer) -------------------------------------------------
    def _exec(self, conn: Any, sql: str) -> None:
        conn.raw.execute(sql)

    def _abort(self, conn: Any) -> None:
        raw = conn.raw
        if raw.info.transaction_status != psycopg.pq.TransactionStatus.IDLE and not raw.closed:
            try:
                raw.execute("ROLLBACK")
            except psycopg.Error as again:
                log.warning("rollback after a failed write group also failed: %s", scrub(str(again)))

    def _group_error(self, exc: BaseException) -> BaseException:
        err = self._error(exc) if isinstance(exc, psycopg.OperationalError) else exc
        if isinstance(err, StorageError):
            self._trouble_code = err.code
            if self.on_trouble is not None:
                self.on_trouble(err.code, err.message)
        return err

    def _landed(self) -> None:
        if self._trouble_code is not None:
            if self.on_trouble is not None:
                self.on_trouble(self._trouble_code, None)  # writes land again: the problem has passed
            self._trouble_code = None

    # -- reads -----------------------------------------------------------------------------
    @contextmanager
    def _reader(self) -> Iterator[psycopg.Connection[Any]]:
        if self._closed or self._pool is None:
            raise RuntimeError("database is closed")
        try:
            with self._pool.connection() as raw:
                yield raw
        except PoolTimeout:
            raise StorageBusy(
                f"all {self.pool_size} PostgreSQL connections stayed busy for {POOL_WAIT_S:g} s"
            ) from None

    def read(self, fn: Callable[[Any], T]) -> T:
        """Run ``fn(conn)`` in one REPEATABLE READ snapshot on a pooled connection (a read
        inside a read on the same thread shares it)."""
        held = getattr(self._local, "conn", None)
        if held is not None:
            return fn(held)
        with self._reader() as raw:
            conn = Connection(raw)
            self._local.conn = conn
            try:
                raw.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
                try:
                    return fn(conn)
                finally:
                    raw.execute("ROLLBACK")  # read only: nothing to keep, and a failed read is ended too
            finally:
                self._local.conn = None
