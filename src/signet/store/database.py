"""One writer thread, many readers.

SQLite allows one writer at a time. Instead of letting API handlers, the embedding worker
and the pipeline race for the write lock (and see ``database is locked``), every write is a
function handed to a single writer thread that owns the only write connection. Writes that
arrive together are committed together (group commit), each inside its own SAVEPOINT so a
failing write rolls back alone and raises in its caller. Reads run on a small pool of
connections in WAL mode and never wait for the writer.
"""

from __future__ import annotations

import logging
import shutil
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from signet.config import BackupSettings
from signet.errors import StorageBusy, StorageError, StorageFull, storage_error
from signet.store import backup, space
from signet.store.backend import Dialect
from signet.store.decay import sql_decay
from signet.store.group_writer import GroupWriter
from signet.store.migrations import Migration, migrate
from signet.store.sqlite import sqlite3

log = logging.getLogger(__name__)

T = TypeVar("T")

WRITER_CACHE_KIB = 32_000
READER_CACHE_KIB = 8_000

MAX_READERS = 8
"""Read connections open at most. Reads are short and the machine has few cores; more
connections would only add page caches (:data:`READER_CACHE_KIB` each at most)."""
READER_WAIT_S = 60.0
SPACE_BACK_BYTES = 1 << 20
"""Free space at which a full disk counts as having room again (with a write that landed)."""


def connect(path: Path, *, readonly: bool = False) -> Any:
    """Open a connection with the pragmas every Signet connection uses."""
    conn = sqlite3.connect(str(path), isolation_level=None, check_same_thread=False, timeout=30.0)
    conn.row_factory = sqlite3.Row
    conn.execute("PRAGMA busy_timeout = 30000")
    conn.execute("PRAGMA foreign_keys = ON")
    conn.execute("PRAGMA temp_store = MEMORY")
    # Page cache per connection, in KiB. A reader's cache only saves a copy from the OS's own
    # file cache, and each fills up over hours: 32 MB per reader made a soak's RSS climb in
    # ~37 MB steps, one per reader, long after the store stopped growing (docs/reliability.md).
    conn.execute(f"PRAGMA cache_size = -{READER_CACHE_KIB if readonly else WRITER_CACHE_KIB}")
    conn.create_function("signet_decay", 4, sql_decay)
    if readonly:
        conn.execute("PRAGMA query_only = ON")
    else:
        space.prepare_new(conn)  # before the first table: a new store gives purged space back
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")
    return conn


class Database(GroupWriter):
    """The database file, its writer thread (signet.store.group_writer) and its reader
    connections."""

    begin_sql = "BEGIN IMMEDIATE"
    engine_errors = (sqlite3.Error,)

    dialect: Dialect = "sqlite"
    """The SQL engine (signet.store.backend); PostgreSQL is signet.store.postgres."""

    def __init__(self, path: Path, *, backups: BackupSettings | None = None) -> None:
        super().__init__()
        self.path = path
        self.backups = backups if backups is not None else BackupSettings()
        """When and how to back the database up before a schema migration (``backup.*``)."""
        self._local = threading.local()
        self._readers: list[Any] = []
        """Every reader connection open (closed with the database)."""
        self._idle: list[Any] = []
        """Readers not in use, the most recently returned last."""
        self._returned = threading.Event()
        self._readers_lock = threading.Lock()
        self.max_readers = MAX_READERS
        self._trouble: str | None = None
        """The code of the storage problem the last failed write hit, until a write lands."""
        self.on_trouble: Callable[[str, str | None], None] | None = None
        """Told ``(cause, message)`` when writes start failing for a storage reason, and
        ``(cause, None)`` when they land again (the runtime's condition: /health degraded)."""
        self.on_migrate: Callable[[list[int]], None] | None = None
        """Told the pending schema versions before an existing database is backed up and
        migrated (the daemon marks itself busy for `signet start`, signet.instance)."""

    # -- lifecycle -------------------------------------------------------------------------
    def open(self) -> Database:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._write_conn = connect(self.path)
            if migrate(self._write_conn, before=self._before_migration):
                self._give_back_migrated_pages()  # a new store has none: one PRAGMA
        except sqlite3.Error as exc:  # a full disk, a read-only workspace, a damaged file: said in one line
            typed = storage_error(exc, self.path)
            if typed is None:
                raise
            raise typed from None
        self._start_writer("signet-db-writer")
        return self

    def _give_back_migrated_pages(self) -> None:
        """A migration that rebuilt a table (migration 15 dropped the thread-context copies:
        ~45% of a store) leaves its old pages on the freelist, where nothing else returns them
        until a purge: give them back now, in bounded steps, so an upgrade shrinks the file."""
        given = 0
        while (step := space.reclaim(self._write_conn)) > 0:
            given += step
        if given:
            self._write_conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
            log.info("gave %d free pages back after migrating %s", given, self.path)

    def _before_migration(self, pending: list[Migration]) -> None:
        """An existing database is about to be migrated: say so (``on_migrate``), back it up."""
        versions = [m.version for m in pending]
        if self.on_migrate is not None:
            self.on_migrate(versions)
        self._backup_before_migration(versions)

    def _backup_before_migration(self, versions: list[int]) -> None:
        """Back the database up before migrations change it (signet.store.backup). A backup that
        cannot be written (a nearly full disk, a copy that does not verify) is logged and the
        migration goes ahead: each migration is one transaction that rolls back on failure, and
        a daemon that refused to start would lose more than it protects."""
        if not self.backups.before_migration:
            return
        # Said first: a large store takes a while to copy (`signet start` waits, see on_migrate).
        log.info("backing up %s before migrations %s", self.path, versions)
        try:
            done = backup.create_backup(
                self._write_conn,
                self.path,
                reason=backup.migration_reason(versions),
                keep=self.backups.keep,
                min_free_mb=self.backups.min_free_mb,
            )
        except (StorageError, OSError, sqlite3.Error) as exc:
            message = exc.message if isinstance(exc, StorageError) else str(exc)
            log.warning("migrating %s without a backup: %s", self.path, message)
            return
        log.info("backed up %s to %s before migrations %s", self.path, done.backup.path, versions)

    @contextmanager
    def exclusive(self, name: str) -> Iterator[bool]:
        """Always this daemon's: the daemon's lock keeps every other off the file (backend.py)."""
        yield True

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._stop_writer()
        if self._write_conn is not None:
            try:
                self._write_conn.execute("PRAGMA optimize")
            except sqlite3.Error as exc:
                log.debug("PRAGMA optimize failed on close: %s", exc)
            self._write_conn.close()
        with self._readers_lock:
            for conn in self._readers:
                conn.close()
            self._readers.clear()
            self._idle.clear()
            self._returned.set()

    def __enter__(self) -> Database:
        return self.open()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- writes (signet.store.group_writer) -------------------------------------------------
    def _exec(self, conn: Any, sql: str) -> None:
        conn.execute(sql)

    def _abort(self, conn: Any) -> None:
        if conn.in_transaction:
            try:
                conn.execute("ROLLBACK")
            except sqlite3.Error as again:
                log.warning("rollback after a failed write group also failed: %s", again)

    def _write_error(self, exc: BaseException) -> BaseException:
        return self._storage(exc) if isinstance(exc, sqlite3.Error) else exc

    def _group_error(self, exc: BaseException) -> BaseException:
        return self._storage(exc)

    def _landed(self) -> None:
        if self._trouble is None:
            return
        if self._trouble == StorageFull.code and not self._space_back():
            # A write that needed no new page (an access count, a flag) lands on a full disk:
            # the disk is still full, and the next new memory would fail again.
            return
        self._report(self._trouble, None)  # writes land again: the problem has passed
        self._trouble = None

    def _space_back(self) -> bool:
        """Whether the database's filesystem has room again after a disk-full failure."""
        try:
            return shutil.disk_usage(self.path.parent).free >= SPACE_BACK_BYTES
        except OSError:
            return True  # cannot tell: the write that landed is the evidence

    def _storage(self, exc: BaseException) -> BaseException:
        """A storage failure as the typed error callers and the API understand (disk full,
        read-only, damaged), reported to ``on_trouble``; other errors unchanged."""
        err = storage_error(exc, self.path)
        if err is None:
            return exc
        if self._trouble != err.code:
            log.warning("%s", err.message)  # once per episode, not per write
        self._trouble = err.code
        self._report(err.code, err.message)
        return err

    def _report(self, cause: str, message: str | None) -> None:
        if self.on_trouble is not None:
            self.on_trouble(cause, message)

    # -- reads -----------------------------------------------------------------------------
    def _checkout(self) -> Any:
        """An idle reader connection, the most recently used first (its page cache is warm);
        a new one while fewer than :data:`MAX_READERS` are open; else wait for one."""
        while True:
            with self._readers_lock:
                if self._closed:
                    raise RuntimeError("database is closed")
                if self._idle:
                    return self._idle.pop()
                if len(self._readers) < self.max_readers:
                    conn = connect(self.path, readonly=True)
                    self._readers.append(conn)
                    return conn
                self._returned.clear()
            if not self._returned.wait(READER_WAIT_S):
                raise StorageBusy(f"all {self.max_readers} read connections stayed busy for {READER_WAIT_S:g} s")

    def _checkin(self, conn: Any) -> None:
        with self._readers_lock:
            if self._closed:
                return
            self._idle.append(conn)
            self._returned.set()

    def read(self, fn: Callable[[Any], T]) -> T:
        """Run ``fn(conn)`` inside one consistent read snapshot, on a pooled reader connection.

        A read inside a read on the same thread runs in the outer one's snapshot. The pool is
        bounded: per-thread connections (one for each of the server's ~40 worker threads, each
        with its own page cache) made an idle daemon's RSS grow long after the load stopped."""
        held = getattr(self._local, "conn", None)
        if held is not None:
            return fn(held)
        conn = self._checkout()
        self._local.conn = conn
        try:
            conn.execute("BEGIN")
            try:
                return fn(conn)
            finally:
                try:
                    conn.execute("COMMIT")
                except sqlite3.DatabaseError:  # a read that met a damaged page leaves a sticky error: end it anyway
                    if conn.in_transaction:
                        conn.execute("ROLLBACK")
        finally:
            self._local.conn = None
            self._checkin(conn)

    def describe(self) -> dict[str, Any]:
        """Where the store is and how its readers are used (status and diagnostics; the
        PostgreSQL store answers the same shape, signet.store.postgres)."""
        with self._readers_lock:
            opened, idle = len(self._readers), len(self._idle)
        return {
            "backend": "sqlite",
            "location": str(self.path),
            "user": None,
            "pool": {"max": self.max_readers, "open": opened, "in_use": opened - idle, "waiting": 0},
        }

    def integrity_check(self) -> str:
        return str(self.read(lambda c: c.execute("PRAGMA integrity_check").fetchone()[0]))
