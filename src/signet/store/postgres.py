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
import queue
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import Future
from contextlib import contextmanager
from typing import Any, Self, TypeVar

import psycopg
from psycopg import ClientCursor
from psycopg.rows import RowMaker
from psycopg_pool import ConnectionPool, PoolTimeout

from signet.errors import StorageBusy, StorageError
from signet.store import pg_dialect, pg_migrations
from signet.store.backend import Dialect
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


class PostgresDatabase:
    """A PostgreSQL database: one writer thread and a pool of reader connections."""

    dialect: Dialect = "postgres"

    def __init__(self, target: Target, *, pool_size: int = 8, apply_migrations: bool = True) -> None:
        self.target = target
        self.pool_size = pool_size
        self.apply_migrations = apply_migrations
        self._queue: queue.Queue[tuple[WriteFn, Future[Any]] | None] = queue.Queue()
        self._writer: threading.Thread | None = None
        self._write_conn: Connection | None = None
        self._pool: ConnectionPool[Any] | None = None
        self._local = threading.local()
        self._closed = False
        self._after_commit: list[Callable[[], None]] = []
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
        self._writer = threading.Thread(target=self._run_writer, name="signet-pg-writer", daemon=True)
        self._writer.start()
        return self

    def _before_migration(self, versions: list[int]) -> None:
        if self.on_migrate is not None:
            self.on_migrate(versions)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._writer is not None:
            self._queue.put(None)
            self._writer.join(timeout=30)
        if self._write_conn is not None:
            self._write_conn.raw.close()
        if self._pool is not None:
            self._pool.close()

    def __enter__(self) -> Self:
        return self.open()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- writes ----------------------------------------------------------------------------
    def write(self, fn: Callable[[Any], T]) -> T:
        """Run ``fn(conn)`` in a write transaction on the writer thread (inline when called
        from a write function)."""
        if threading.current_thread() is self._writer:
            return fn(self._write_conn)
        if self._closed or self._writer is None:
            raise RuntimeError("database is closed")
        fut: Future[T] = Future()
        self._queue.put((fn, fut))
        return fut.result()

    def submit(self, fn: WriteFn) -> Future[Any]:
        fut: Future[Any] = Future()
        if self._closed or self._writer is None:
            fut.set_exception(RuntimeError("database is closed"))
            return fut
        self._queue.put((fn, fut))
        return fut

    def after_commit(self, fn: Callable[[], None]) -> None:
        if threading.current_thread() is not self._writer:
            raise RuntimeError("after_commit is only for write functions (the writer thread)")
        self._after_commit.append(fn)

    def _run_writer(self) -> None:
        conn = self._write_conn
        assert conn is not None
        while True:
            item = self._queue.get()
            if item is None:
                return
            batch = [item]
            stop = False
            while len(batch) < _GROUP_MAX:
                try:
                    nxt = self._queue.get_nowait()
                except queue.Empty:
                    break
                if nxt is None:
                    stop = True
                    break
                batch.append(nxt)
            self._commit_group(conn, batch)
            if stop:
                return

    def _commit_group(self, conn: Connection, batch: list[tuple[WriteFn, Future[Any]]]) -> None:
        raw = conn.raw
        outcomes: list[tuple[Future[Any], bool, Any]] = []
        self._after_commit.clear()
        try:
            raw.execute("BEGIN")
            for i, (fn, fut) in enumerate(batch):
                sp = f"w{i}"
                raw.execute(f"SAVEPOINT {sp}")
                mark = len(self._after_commit)
                try:
                    result = fn(conn)
                except BaseException as exc:  # noqa: BLE001 - re-raised in the caller via its future
                    raw.execute(f"ROLLBACK TO SAVEPOINT {sp}")
                    raw.execute(f"RELEASE SAVEPOINT {sp}")
                    del self._after_commit[mark:]
                    outcomes.append((fut, False, exc))
                    continue
                raw.execute(f"RELEASE SAVEPOINT {sp}")
                outcomes.append((fut, True, result))
            raw.execute("COMMIT")
        except psycopg.Error as exc:  # BEGIN, a savepoint or COMMIT failed: the whole group rolls back
            if raw.info.transaction_status != psycopg.pq.TransactionStatus.IDLE and not raw.closed:
                try:
                    raw.execute("ROLLBACK")
                except psycopg.Error as again:
                    log.warning("rollback after a failed write group also failed: %s", scrub(str(again)))
            self._after_commit.clear()
            err = self._trouble(exc)
            for _, fut in batch:
                fut.set_exception(err)
            return
        callbacks, self._after_commit = self._after_commit, []
        for cb in callbacks:
            try:
                cb()
            except Exception:  # the data is committed; a mirror that failed to follow is logged
                log.exception("an after-commit callback failed")
        for fut, ok, value in outcomes:
            if ok:
                fut.set_result(value)
            else:
                fut.set_exception(value)

    def _trouble(self, exc: BaseException) -> BaseException:
        err = self._error(exc) if isinstance(exc, psycopg.OperationalError) else exc
        if isinstance(err, StorageError) and self.on_trouble is not None:
            self.on_trouble(err.code, err.message)
        return err

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
