"""One writer thread with group commit, shared by the SQLite and PostgreSQL stores.

Every write is a function handed to a single thread that owns the only write connection.
Writes that arrive together are committed together (one transaction, so one fsync or one
WAL flush for the group), each inside its own SAVEPOINT so a failing write rolls back alone
and raises in its caller, and the ``after_commit`` callbacks of the writes that landed run in
commit order before their callers are woken (in-memory state that mirrors the tables, such as
the vector index, changes through them). The engines differ only in how a transaction is
begun, how a failed one is abandoned and how their errors read: the hooks below.
"""

from __future__ import annotations

import abc
import logging
import queue
import random
import threading
import time
import uuid
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, ClassVar, TypeVar

log = logging.getLogger(__name__)

T = TypeVar("T")
WriteFn = Callable[[Any], Any]

GROUP_MAX = 64
"""Writes committed in one transaction at most."""
WRITE_RETRIES = 3
"""How many times a write that lost a lock race (:meth:`GroupWriter._retryable`) is run again."""
RETRY_PAUSE_S = 0.02
"""The pause before a retry, times the retry's number, times a random 1-2 (so two daemons
that deadlocked do not meet again in step)."""


class GroupWriter(abc.ABC):
    """The write half of a store: :meth:`write`, :meth:`submit`, :meth:`after_commit`."""

    begin_sql: ClassVar[str] = "BEGIN"
    engine_errors: ClassVar[tuple[type[BaseException], ...]] = ()
    """The driver's errors: one raised by BEGIN, a savepoint or COMMIT fails the whole group."""

    def __init__(self) -> None:
        self._queue: queue.Queue[tuple[WriteFn, Future[Any], bool] | None] = queue.Queue()
        self._writer: threading.Thread | None = None
        self._write_conn: Any = None
        self._closed = False
        self._after_commit: list[Callable[[], None]] = []
        """Callbacks of the group being written (writer thread only): run after its COMMIT."""
        self.lease_owner = f"process-{uuid.uuid4().hex[:12]}"
        """Who leases jobs through this store (signet.store.backend.StorageBackend.lease_owner):
        one per process unless the workspace names one (signet.store.choose.build_store)."""
        self.node = f"signet-{uuid.uuid4().hex[:12]}"
        """This process's name on the store, new at every start (signet.store.liveness): work
        it records as running is another daemon's orphan once no session carries the name."""

    # -- the engine's part -----------------------------------------------------------------
    @abc.abstractmethod
    def _exec(self, conn: Any, sql: str) -> None:
        """Run one transaction-control statement on the write connection."""

    @abc.abstractmethod
    def _abort(self, conn: Any) -> None:
        """The group failed: roll back whatever transaction is still open."""

    def _write_error(self, exc: BaseException) -> BaseException:
        """What the caller of a write that raised ``exc`` is given (the same, by default)."""
        return exc

    def _group_error(self, exc: BaseException) -> BaseException:
        """What every caller of a group that failed with ``exc`` is given."""
        return exc

    def _retryable(self, exc: BaseException) -> bool:
        """A write that raised ``exc`` lost a race another transaction won (a deadlock, a
        serialization failure) and would land if run again: never on SQLite (one writer)."""
        return False

    @abc.abstractmethod
    def _landed(self) -> None:
        """A group with at least one successful write committed: a storage problem reported
        by an earlier failure has passed."""

    # -- the writer thread -----------------------------------------------------------------
    def _start_writer(self, name: str) -> None:
        self._writer = threading.Thread(target=self._run_writer, name=name, daemon=True)
        self._writer.start()

    def _stop_writer(self) -> None:
        """Let the writer finish what is queued, then end it."""
        if self._writer is not None:
            self._queue.put(None)
            self._writer.join(timeout=30)

    def write(self, fn: Callable[[Any], T], *, alone: bool = False) -> T:
        """Run ``fn(conn)`` in a write transaction on the writer thread and return its result.

        ``alone``: a large write (a batch of many memories) is committed in a transaction of its
        own, without the savepoint a write in a group runs in. SQLite keeps every page changed
        inside an open savepoint in an in-memory statement journal that it walks from its start
        each time a statement inside it ends, so in a savepoint a write of 1,000 conversation
        turns cost time quadratic in its size (docs/benchmarks.md, "The writer's statement
        journal"); alone, each statement's journal is only its own.

        Called from the writer thread itself (a write that triggers another), it runs inline
        inside the current transaction.
        """
        if threading.current_thread() is self._writer:
            return fn(self._write_conn)
        if self._closed or self._writer is None:
            raise RuntimeError("database is closed")
        fut: Future[T] = Future()
        self._queue.put((fn, fut, alone))
        return fut.result()

    def submit(self, fn: WriteFn) -> Future[Any]:
        """Queue a write without waiting for it (access tracking on recall)."""
        fut: Future[Any] = Future()
        if self._closed or self._writer is None:
            fut.set_exception(RuntimeError("database is closed"))
            return fut
        self._queue.put((fn, fut, False))
        return fut

    def after_commit(self, fn: Callable[[], None]) -> None:
        """From a write function: run ``fn`` on the writer thread once this write has committed,
        never if it rolls back (its savepoint or the whole group).

        In-memory state that mirrors the database (the vector index) changes through this, so
        a rolled-back write leaves it as it was. Callbacks run in commit order, before the
        writers' callers are woken, so a caller sees its own change."""
        if threading.current_thread() is not self._writer:
            raise RuntimeError("after_commit is only for write functions (the writer thread)")
        self._after_commit.append(fn)

    def _run_writer(self) -> None:
        conn = self._write_conn
        while True:
            item = self._queue.get()
            if item is None:
                return
            if item[2]:
                self._commit_group(conn, [item[:2]], savepoints=False)
                continue
            batch = [item[:2]]
            stop = False
            later = None
            while len(batch) < GROUP_MAX:
                try:
                    nxt = self._queue.get_nowait()
                except queue.Empty:
                    break
                if nxt is None:
                    stop = True
                    break
                if nxt[2]:
                    later = nxt[:2]  # a write alone: after this group, in its own transaction
                    break
                batch.append(nxt[:2])
            self._commit_group(conn, batch)
            if later is not None:
                self._commit_group(conn, [later], savepoints=False)
            if stop:
                return

    def _commit_group(
        self, conn: Any, batch: list[tuple[WriteFn, Future[Any]]], retry: int = 0, *, savepoints: bool = True
    ) -> None:
        """Commit ``batch`` as one transaction, each write in its savepoint (``savepoints``
        False: one write alone, whose failure rolls back the transaction). A write that lost a
        lock race (:meth:`_retryable`) is rolled back alone and run again in a group of its own
        after this one commits, up to :data:`WRITE_RETRIES` times: the locks this group's other
        writes hold are what the winner may be waiting for, so retrying inside it could only
        meet the same cycle again."""
        outcomes: list[tuple[Future[Any], bool, Any]] = []
        again: list[tuple[WriteFn, Future[Any]]] = []
        rolled_back = False
        self._after_commit.clear()
        try:
            self._exec(conn, self.begin_sql)
            for i, (fn, fut) in enumerate(batch):
                sp = f"w{i}"
                if savepoints:
                    self._exec(conn, f"SAVEPOINT {sp}")
                mark = len(self._after_commit)
                try:
                    result = fn(conn)
                except BaseException as exc:  # noqa: BLE001 - re-raised in the caller via its future
                    if savepoints:
                        self._exec(conn, f"ROLLBACK TO SAVEPOINT {sp}")
                        self._exec(conn, f"RELEASE SAVEPOINT {sp}")
                    del self._after_commit[mark:]  # its in-memory changes are dropped with it
                    if retry < WRITE_RETRIES and self._retryable(exc):
                        again.append((fn, fut))
                    else:
                        outcomes.append((fut, False, self._write_error(exc)))
                    if not savepoints:  # the write was the transaction: it ends with it
                        rolled_back = True
                        break
                    continue
                if savepoints:
                    self._exec(conn, f"RELEASE SAVEPOINT {sp}")
                outcomes.append((fut, True, result))
            if rolled_back:
                self._abort(conn)
            else:
                self._exec(conn, "COMMIT")
        except self.engine_errors as exc:  # BEGIN, a savepoint or COMMIT failed: the whole group rolls back
            self._abort(conn)
            self._after_commit.clear()
            err = self._group_error(exc)
            for _, fut in batch:
                fut.set_exception(err)
            return
        self._finish(outcomes, again, retry, savepoints, conn)

    def _finish(
        self,
        outcomes: list[tuple[Future[Any], bool, Any]],
        again: list[tuple[WriteFn, Future[Any]]],
        retry: int,
        savepoints: bool,
        conn: Any,
    ) -> None:
        """After a group's transaction ended: its callbacks, its callers woken, its retries run."""
        if any(ok for _, ok, _ in outcomes):
            self._landed()
        callbacks, self._after_commit = self._after_commit, []
        for cb in callbacks:
            try:
                cb()
            except Exception:  # the data is committed; a mirror that failed to follow is logged, not fatal
                log.exception("an after-commit callback failed")
        for fut, ok, value in outcomes:
            if ok:
                fut.set_result(value)
            else:
                fut.set_exception(value)
        if again:
            log.info("%d write(s) lost a lock race to another transaction: retry %d", len(again), retry + 1)
            time.sleep(RETRY_PAUSE_S * (retry + 1) * (1 + random.random()))
            self._commit_group(conn, again, retry + 1, savepoints=savepoints)
