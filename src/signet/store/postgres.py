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
import re
import threading
import zlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, Self, TypeVar

import psycopg
from psycopg import ClientCursor
from psycopg.rows import RowMaker
from psycopg_pool import ConnectionPool, PoolTimeout

from signet.errors import StorageBusy, StorageError
from signet.store import pg_dialect, pg_errors, pg_migrations
from signet.store.backend import Dialect
from signet.store.group_writer import GroupWriter
from signet.store.pg_url import Target, scrub

log = logging.getLogger(__name__)

T = TypeVar("T")
WriteFn = Callable[[Any], Any]

_SAVEPOINT = re.compile(r"(?i)^\s*(SAVEPOINT|RELEASE(\s+SAVEPOINT)?|ROLLBACK\s+TO(\s+SAVEPOINT)?)\s+\w+\s*;?\s*$")
"""A write function's own savepoint statements: passed as written (sqlglot does not parse them)."""
POOL_WAIT_S = 60.0
EXCLUSIVE_CLASS = 0x5349474E
"""The first key of every :meth:`PostgresDatabase.exclusive` lock ("SIGN")."""
RETRY_STATES = frozenset({"40P01", "40001", "55P03"})
"""The errors of a write that lost a lock race and is run again (signet.store.group_writer)."""


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


def _value(v: Any) -> Any:
    if isinstance(v, bool):
        return int(v)
    if isinstance(v, str) and "\x00" in v:
        return v.replace("\x00", "\x1a")
    return v


def _params(params: Any) -> Any:
    """SQLite stores a bool as 0/1 and the schema's flags are INTEGER: send them as such. A
    text value with a NUL character (a command's captured output, a pasted binary) has it
    replaced by ASCII SUB (0x1A, "substitute"): PostgreSQL cannot store NUL in text, refusing
    the whole value would lose the rest of it, and one byte for one keeps every byte cap applied
    before storage (captured output is cut at a byte count). Memory content never gets here with
    a NUL: both stores normalize it to U+FFFD first (signet.memory.content)."""
    if params is None:
        return None
    if isinstance(params, Mapping):
        return {k: _value(v) for k, v in params.items()}
    return [_value(v) for v in params]


class Connection:
    """What a write or read function is given: ``execute`` takes SQLite SQL (translated)."""

    dialect: Dialect = "postgres"
    """For the few callers whose SQL must differ by engine (a SQLite connection has none)."""

    def __init__(self, raw: psycopg.Connection[Any], target: Target) -> None:
        self.raw = raw
        self.target = target

    def execute(self, sql: str, params: Any = None) -> psycopg.Cursor[Any]:
        cur = self.raw.cursor(row_factory=_row_factory)
        try:
            if _SAVEPOINT.match(sql):  # the same words on both engines (a write's nested steps)
                cur.execute(sql)
            elif params is None or len(params) == 0:
                cur.execute(pg_dialect.translate(sql, with_params=False))
            else:
                cur.execute(pg_dialect.translate(sql, with_params=True), _params(params))
        except psycopg.Error as exc:  # as the callers' sqlite3 clauses know it (signet.store.pg_errors)
            raise pg_errors.translate(exc, self.target, self.raw) from exc
        return cur

    def native(self, sql: str, params: Any = ()) -> psycopg.Cursor[Any]:
        """Run PostgreSQL's own SQL as written (``%s`` parameters), past the translation: for the
        few statements SQLite has no words for (snapshots). Errors read as :meth:`execute`'s."""
        cur = self.raw.cursor(row_factory=_row_factory)
        try:
            cur.execute(sql, params)
        except psycopg.Error as exc:
            raise pg_errors.translate(exc, self.target, self.raw) from exc
        return cur

    def executemany(self, sql: str, seq: Any) -> psycopg.Cursor[Any]:
        cur = self.raw.cursor(row_factory=_row_factory)
        try:
            cur.executemany(pg_dialect.translate(sql, with_params=True), [_params(p) for p in seq])
        except psycopg.Error as exc:
            raise pg_errors.translate(exc, self.target, self.raw) from exc
        return cur


class SnapshotConnection(Connection):
    """A connection of its own in one REPEATABLE READ READ ONLY transaction, for a long read
    that must not hold a pooled reader (the export streams from one): ``close`` ends it."""

    @property
    def in_transaction(self) -> bool:
        return not self.raw.closed and self.raw.info.transaction_status != psycopg.pq.TransactionStatus.IDLE

    def close(self) -> None:
        self.raw.close()


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
        # self.node (signet.store.group_writer) is every connection's ``application_name``:
        # the change feed (signet.store.pg_feed) skips the changes it wrote itself, and
        # ``pg_stat_activity`` tells the daemons apart, and which are alive (signet.store.liveness).

    def __repr__(self) -> str:
        return f"PostgresDatabase({self.target.shown!r})"

    # -- lifecycle -------------------------------------------------------------------------
    def _connect(self) -> psycopg.Connection[Any]:
        kwargs: dict[str, Any] = {"autocommit": True, "cursor_factory": ClientCursor, "application_name": self.node}
        if self.target.password:
            kwargs["password"] = self.target.password
        return psycopg.connect(self.target.conninfo, **kwargs)

    def _error(self, exc: BaseException) -> StorageError:
        """A connection-level failure in one line, with no password in it."""
        text = " ".join(scrub(str(exc), self.target.password).split())  # libpq's text spans lines
        return StorageError(f"PostgreSQL at {self.target.shown}: {text}")

    def _cannot_open(self, exc: psycopg.Error) -> StorageError:
        """Why the store cannot open, in one line that says what to do (never the password)."""
        text = " ".join(scrub(str(exc), self.target.password).split())
        state = getattr(exc, "sqlstate", None)  # None for a failed connect: libpq's text says why
        if state in ("28P01", "28000") or "password" in text.lower():
            todo = (
                "check the password storage.password names (env:NAME or secret:NAME, default "
                "env:SIGNET_PG_PASSWORD) and the user in storage.url"
            )
        elif state == "3D000" or ("database" in text and "does not exist" in text):
            todo = "create the database (createdb) or correct its name in storage.url"
        elif state is None:
            todo = "check that the server runs and that storage.url names its host and port"
        else:
            todo = "see the server's log"
        return StorageError(
            f"cannot open PostgreSQL at {self.target.shown}: {text}; {todo}", code="storage_unavailable"
        )

    def open(self) -> Self:
        try:
            raw = self._connect()
        except psycopg.Error as exc:
            raise self._cannot_open(exc) from None
        self._write_conn = Connection(raw, self.target)
        try:
            if self.apply_migrations:
                pg_migrations.migrate(raw, before=self._before_migration)
            pg_dialect.load_keys([(str(r[0]), list(r[1])) for r in raw.execute(pg_dialect.KEYS_SQL).fetchall()])
        except BaseException:
            raw.close()  # a refused migration must not leave the connection (and its session) open
            raise
        kwargs: dict[str, Any] = {"autocommit": True, "cursor_factory": ClientCursor, "application_name": self.node}
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
        if sql != self.begin_sql:
            conn.raw.execute(sql)
            return
        # A group begins: the one moment a lost connection can be replaced with nothing lost
        # (no statement of the group has run). Mid-group, the group fails as a whole (503).
        if conn.raw.closed or conn.raw.broken:
            self._reconnect_writer(conn)
        try:
            conn.raw.execute(sql)
        except psycopg.OperationalError as exc:
            if not pg_errors.connection_lost(exc, conn.raw):
                raise
            self._reconnect_writer(conn)  # the server restarted since the last group: once more
            conn.raw.execute(sql)

    def _reconnect_writer(self, conn: Connection) -> None:
        """Replace the writer's lost connection (a psycopg error here fails the group: 503)."""
        old = conn.raw
        if not old.closed:
            old.close()
        conn.raw = self._connect()
        log.warning("PostgreSQL at %s: the writer's connection was lost; reconnected", self.target.shown)

    def _abort(self, conn: Any) -> None:
        raw = conn.raw
        if raw.info.transaction_status != psycopg.pq.TransactionStatus.IDLE and not raw.closed:
            try:
                raw.execute("ROLLBACK")
            except psycopg.Error as again:
                log.warning("rollback after a failed write group also failed: %s", scrub(str(again)))

    def _group_error(self, exc: BaseException) -> BaseException:
        if pg_errors.connection_lost(exc):
            err: BaseException = pg_errors.lost(exc, self.target)
        elif isinstance(exc, psycopg.Error):
            err = pg_errors.translate(exc, self.target)
        else:
            err = exc
        if isinstance(err, StorageError):
            self._trouble_code = err.code
            if self.on_trouble is not None:
                self.on_trouble(err.code, err.message)
        return err

    def _retryable(self, exc: BaseException) -> bool:
        """Deadlock (40P01), serialization failure (40001), a lock not granted (55P03): the
        write rolled back to its savepoint and can run again once the other transaction moved on."""
        return getattr(exc, "sqlstate", None) in RETRY_STATES

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
        inside a read on the same thread shares it).

        A pooled connection the server dropped (it restarted) fails at ``BEGIN``, before ``fn``
        ran: the pool is told to check its idle connections and the read runs once more on a
        fresh one, so the first request after a restart is answered. A connection lost while
        ``fn`` runs fails that read with a 503 (signet.store.pg_errors)."""
        held = getattr(self._local, "conn", None)
        if held is not None:
            return fn(held)
        for attempt in range(2):
            with self._reader() as raw:
                try:
                    raw.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
                except psycopg.OperationalError as exc:
                    if not pg_errors.connection_lost(exc, raw):
                        raise pg_errors.translate(exc, self.target, raw) from exc
                    if attempt == 1:
                        raise pg_errors.lost(exc, self.target) from None
                else:
                    return self._read_in(raw, fn)
            # The pool dropped the broken connection as it came back; the idle ones the
            # restart broke too are replaced before the read runs again.
            if self._pool is not None:
                self._pool.check()
        raise AssertionError("unreachable: the second attempt returns or raises")

    def _read_in(self, raw: psycopg.Connection[Any], fn: Callable[[Any], T]) -> T:
        conn = Connection(raw, self.target)
        self._local.conn = conn
        try:
            try:
                return fn(conn)
            finally:
                if not (raw.closed or raw.broken):
                    try:
                        raw.execute("ROLLBACK")  # read only: nothing to keep, and a failed read is ended too
                    except psycopg.OperationalError as exc:
                        # The server went away after the read: its answer (or its own error)
                        # stands, and the pool drops the broken connection as it comes back.
                        log.info(
                            "ending a read failed, the connection is dropped: %s", scrub(str(exc), self.target.password)
                        )
        finally:
            self._local.conn = None

    def rate_hit(self, key: str, now: float, window_s: float, limit: int) -> float | None:
        """Count a request of ``key`` at ``now`` if fewer than ``limit`` were counted in the
        window before it: None when counted, else the time of the oldest counted request
        (it leaves the window at that time + ``window_s``). The rate limits every daemon of the
        store shares (migration 35, signet.auth.ratelimit): one autocommit call on a pooled
        connection, outside the writer's group, so a limited request never waits for a write."""
        with self._reader() as raw:
            try:
                row = raw.execute("SELECT signet_rate_hit(%s, %s, %s, %s)", (key, now, window_s, limit)).fetchone()
            except psycopg.Error as exc:
                raise pg_errors.translate(exc, self.target, raw) from exc
        return None if row is None or row[0] is None else float(row[0])

    def forget_rate_hits(self, before: float) -> int:
        """Drop the hits counted before ``before`` (epoch seconds): keys no longer in use."""
        with self._reader() as raw:
            try:
                return int(raw.execute("DELETE FROM signet_rate_hits WHERE ts < %s", (before,)).rowcount)
            except psycopg.Error as exc:
                raise pg_errors.translate(exc, self.target, raw) from exc

    @contextmanager
    def exclusive(self, name: str) -> Iterator[bool]:
        """A session advisory lock on a connection of its own, closed at the end of the block
        (which releases the lock; so does the server when this daemon dies): the pool's readers
        are never held by a long sweep. Keys are ``(EXCLUSIVE_CLASS, crc32(name))``, a space
        apart from the migration lock's single bigint key."""
        crc = zlib.crc32(name.encode())
        key = crc - (1 << 32) if crc >= 1 << 31 else crc  # PostgreSQL's int4 is signed
        try:
            raw = self._connect()
        except psycopg.Error as exc:
            raise pg_errors.translate(exc, self.target) from None
        try:
            row = raw.execute("SELECT pg_try_advisory_lock(%s, %s)", (EXCLUSIVE_CLASS, key)).fetchone()
            yield bool(row and row[0])
        finally:
            raw.close()

    def snapshot(self) -> SnapshotConnection:
        """A new connection reading one snapshot (signet.memory.exporter); the caller closes it."""
        try:
            raw = self._connect()
        except psycopg.Error as exc:
            raise pg_errors.translate(exc, self.target) from None
        conn = SnapshotConnection(raw, self.target)
        conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
        return conn

    # -- status ----------------------------------------------------------------------------
    def describe(self) -> dict[str, Any]:
        """Where the store is and how its readers are used, for status and diagnostics: the
        server, database and user (never the password) and the pool (size, in use, waiting)."""
        from psycopg.conninfo import conninfo_to_dict

        info = conninfo_to_dict(self.target.conninfo)
        host = str(info.get("host") or "localhost")
        port = info.get("port")
        where = f"{host}:{port}" if port and not host.startswith("/") else host
        pool: dict[str, int] = {"max": self.pool_size, "open": 0, "in_use": 0, "waiting": 0}
        if self._pool is not None and not self._closed:
            stats = self._pool.get_stats()
            size = int(stats.get("pool_size", 0))
            pool.update(
                open=size,
                in_use=max(size - int(stats.get("pool_available", 0)), 0),
                waiting=int(stats.get("requests_waiting", 0)),
            )
        return {
            "backend": "postgres",
            "location": f"{where}/{info.get('dbname') or ''}",
            "user": str(info.get("user") or ""),
            "pool": pool,
        }
