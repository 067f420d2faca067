"""The remember intake: a remember over HTTP is answered once committed, stored as a memory soon after.

Why it exists. On real conversation turns the whole store path of one remember costs several
milliseconds of the one interpreter lock: the extractor and the entity links, both keyword
indexes and the thread-context rows of the turn and of the neighbours whose context it enters,
the history row (docs/benchmarks.md, "The remember intake"). An importer or a harness replaying
a transcript sends remembers in bursts, and each waited for all of it. Here a remember is
validated, checked against what is stored and what waits (dedupe, the retirement ledger), and
(when it overlaps other remembers: ``when: busy``, the default; one that arrives alone is
stored at once, as before, and so is one that finds ``max_pending`` rows waiting) committed as
one small ``memory_intake`` row in the writer's group commit: as durable as the
memory row would be (the same WAL, the same commit). It is answered then, with its id and
``queued: true``. A thread stores the waiting rows as memories, in batches of ``batch`` rows per
transaction, once no remember has arrived for ``quiet_ms`` (a burst has paused), or once the
oldest has waited ``max_lag_s``, or at once when a request is waiting for them.

What a client sees is what it saw before (read your writes): every other request to the daemon
first waits until the remembers accepted before it arrived are stored (signet.daemon.intake_barrier,
up to ``read_wait_s``; an answer given without them says how many in ``X-Signet-Intake-Pending``).
A remember of a text that waits in the intake is answered with the waiting row's id and
``deduped: true``, as one already stored is.

Exactly once. Storing a batch inserts its memories and deletes its intake rows in one
transaction, so a crash leaves either both or neither; rows left by a stopped or killed daemon
are stored by the next start. A row that cannot be stored on its own moves, with its error, to
``memory_intake_failed`` (counted in ``/api/status``), so it does not hold the others back.

What differs from storing at once. Another write path (the pipeline, MCP in the daemon, a batch
import) can store the same text for the same owner between the acceptance and the storing: the
intake row then dedupes into that memory and its accepted id is not used (``merged`` in the
status; the text is kept once, as for any duplicate). With ``memory.reinforce`` on, a remember
is stored at once (its answer names the memory it reinforced). PostgreSQL has no intake: several
daemons share that store and each stores its remembers itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from signet.config import IntakeSettings
from signet.errors import MutationsFrozen, StorageError
from signet.memory.service import MemoryService, Stored
from signet.models import IntakeStatus, RememberRequest, RememberResponse
from signet.store import lifecycle
from signet.store.records import now_iso
from signet.store.scope import UNSCOPED, ReadScope
from signet.store.sqlite import Connection

log = logging.getLogger(__name__)

RETRY_S = 2.0
"""Pause before storing again after a batch failed for a storage reason (disk full, locked)."""


@dataclass(eq=False)
class _Waiter:
    """A request (or thread) waiting until the rows up to ``target`` are stored."""

    target: int
    wake: Callable[[], None]


@dataclass(frozen=True)
class Accepted:
    """What the acceptance did: queued the memory, or found it stored, waiting, or retired."""

    kind: Literal["queued", "waiting", "stored", "retired"]
    mem: dict[str, Any]
    row: Any = None


@dataclass(frozen=True)
class _Item:
    """A waiting row, read and prepared, about to be stored."""

    seq: int
    id: str
    mem: dict[str, Any]
    changed_by: str


@dataclass(frozen=True)
class _Failed:
    """A waiting row that cannot be stored, with why."""

    seq: int
    id: str
    payload: str
    accepted_at: str
    error: str


def _reason(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"[:2000]


def _project_key(project: str | None) -> str:
    return project or ""


class Intake:
    """Accepts remembers into ``memory_intake`` and stores them as memories on its own thread."""

    def __init__(self, service: MemoryService, settings: IntakeSettings) -> None:
        self.service = service
        self.db = service.db
        self.settings = settings
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None
        self._stopping = False
        self._accepted_seq = 0
        """The highest seq committed to the intake (a barrier waits until it is stored)."""
        self._done_seq = 0
        """Every row up to this seq is stored (or failed): rows are stored in seq order."""
        self._times: deque[tuple[int, float]] = deque()
        """(seq, monotonic time accepted) of the rows waiting, oldest first."""
        self._last_accept = 0.0
        """When the last remember arrived (monotonic): the intake stores once they pause."""
        self._waiters: list[_Waiter] = []
        self._failing_until = 0.0
        self._inflight = 0
        """Remembers being answered now (only the event loop's thread changes it)."""
        self.accepted = 0
        self.stored = 0
        self.merged = 0
        self.failed = 0

    # -- lifecycle ---------------------------------------------------------------------------
    def start(self) -> None:
        """Read what a previous run left waiting (stored first, at once), then start the thread."""
        lo, hi, last, failed = self.db.read(
            lambda c: (
                *c.execute("SELECT MIN(seq), MAX(seq) FROM memory_intake").fetchone(),
                c.execute("SELECT seq FROM sqlite_sequence WHERE name = 'memory_intake'").fetchone(),
                c.execute("SELECT COUNT(*) FROM memory_intake_failed").fetchone()[0],
            )
        )
        self.failed = int(failed)
        with self._cond:
            self._stopping = False
            # Nothing waits: every seq handed out so far is done (the next is above them all).
            self._accepted_seq = self._done_seq = int(last[0]) if last is not None else 0
            if hi is not None:
                self._accepted_seq = int(hi)
                self._done_seq = int(lo) - 1
                self._times.append((int(hi), 0.0))  # waited since the last run: due at once
                log.info("remember intake: %d rows left by the last run are being stored", int(hi) - int(lo) + 1)
        self._thread = threading.Thread(target=self._run, name="signet-intake", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Finish the batch being stored and end the thread; rows still waiting stay committed
        and are stored by the next start."""
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
        if self._thread is not None:
            self._thread.join(timeout=60)
            self._thread = None
        self._release_waiters()

    # -- accepting ---------------------------------------------------------------------------
    async def accept(self, req: RememberRequest, *, changed_by: str, scope: ReadScope = UNSCOPED) -> RememberResponse:
        """Validate and commit one remember to the intake; its answer. A remember that arrives
        alone (none other in flight, none waiting; ``when: busy``), or while ``max_pending`` rows
        wait (the intake is not keeping up: the sender is slowed to the storing rate), is stored
        at once instead.

        The owner check (:class:`~signet.errors.Forbidden` outside a scoped token's reach) runs
        before anything is queued, as for a remember stored at once."""
        self._last_accept = time.monotonic()  # a burst is on while remembers arrive, stored or not
        waiting = self.pending
        queue = (self._inflight > 0 or waiting > 0 or self.settings.when == "always") and (
            waiting < self.settings.max_pending  # past it, a remember waits for its own storing
        )
        self._inflight += 1
        try:
            if not queue:  # nothing else in flight: stored before the answer, as without an intake
                fut = self.service.submit_remember(req, changed_by=changed_by, scope=scope)
                return self.service.finish_remember(await asyncio.wrap_future(fut))
            mem = self.service._prepare(req, scope, hooks=False)
            outcome: Accepted = await asyncio.wrap_future(
                self.db.submit(lambda conn: self._accept_tx(conn, mem, changed_by))
            )
            return self._response(outcome)
        finally:
            self._inflight -= 1

    def _accept_tx(self, conn: Connection, mem: dict[str, Any], changed_by: str) -> Accepted:
        """On the writer thread: the retirement ledger, the stored duplicate, then the intake row
        (a duplicate of a waiting row is the unique index's conflict: no row returned)."""
        chash, agent, project = mem["content_hash"], mem["agent_id"], mem["project"]
        ledger = lifecycle.retirement(conn, chash, agent, project)
        if ledger is not None:
            return Accepted("retired", mem, ledger)
        existing = self.service.live_duplicate(conn, chash, agent, project)
        if existing is not None:
            return Accepted("stored", mem, existing)
        payload = json.dumps({"mem": mem, "changed_by": changed_by}, separators=(",", ":"))
        row = conn.execute(
            "INSERT INTO memory_intake (id, content_hash, agent_id, project_key, payload, accepted_at)"
            " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING RETURNING seq",
            (mem["id"], chash, agent, _project_key(project), payload, now_iso()),
        ).fetchone()
        if row is None:
            waiting = conn.execute(
                "SELECT payload FROM memory_intake WHERE content_hash = ? AND agent_id = ? AND project_key = ?",
                (chash, agent, _project_key(project)),
            ).fetchone()
            if waiting is None:  # a conflict that is not the dedupe index: the id (never reused)
                raise RuntimeError(f"memory {mem['id']} conflicts with an intake row")
            return Accepted("waiting", json.loads(waiting[0])["mem"])
        seq = int(row[0])
        self.db.after_commit(lambda: self._committed(seq))
        return Accepted("queued", mem)

    def _committed(self, seq: int) -> None:
        """After the commit, before the caller is answered: a later request's barrier sees it."""
        with self._cond:
            self._accepted_seq = max(self._accepted_seq, seq)
            now = time.monotonic()
            self._times.append((seq, now))
            self.accepted += 1
            self._cond.notify_all()

    def _response(self, outcome: Accepted) -> RememberResponse:
        if outcome.kind == "retired":
            return self.service.remember_response(Stored(outcome.row, False, retired=True, mem=outcome.mem))
        if outcome.kind == "stored":
            return self.service.remember_response(Stored(outcome.row, True))
        embedding = "unavailable" if self.service.embeddings.state in ("disabled", "unavailable") else "pending"
        return self.service.unstored_response(
            outcome.mem, deduped=outcome.kind == "waiting", embedding=embedding, queued=True
        )

    # -- waiting for what was accepted --------------------------------------------------------
    @property
    def pending(self) -> int:
        """Accepted rows not yet stored (an upper bound: a seq rolled back leaves a gap)."""
        with self._cond:
            return self._waiting()

    def _waiting(self) -> int:
        """Under the lock: see :attr:`pending`."""
        return max(self._accepted_seq - self._done_seq, 0)

    async def settled(self, timeout: float) -> int:
        """Wait until every remember accepted before this call is stored, up to ``timeout``
        seconds; how many of them were still waiting when it returned (0: all stored)."""
        loop = asyncio.get_running_loop()
        event = asyncio.Event()
        with self._cond:
            target = self._accepted_seq
            if self._done_seq >= target:
                return 0

            def wake() -> None:
                # A request whose event loop has closed (its client went away) needs no waking.
                with contextlib.suppress(RuntimeError):
                    loop.call_soon_threadsafe(event.set)

            waiter = _Waiter(target, wake)
            self._waiters.append(waiter)
            self._cond.notify_all()  # someone is waiting: store now, burst or not
        try:
            await asyncio.wait_for(event.wait(), timeout)
        except TimeoutError:
            with self._cond:
                return max(target - self._done_seq, 0)
        finally:
            with self._cond:
                if waiter in self._waiters:
                    self._waiters.remove(waiter)
        return 0

    def wait_stored(self, timeout: float) -> bool:
        """For threads (tests, benchmarks): block until everything accepted so far is stored."""
        deadline = time.monotonic() + timeout
        with self._cond:
            waiter = _Waiter(self._accepted_seq, lambda: None)
            self._waiters.append(waiter)
            self._cond.notify_all()
            try:
                while self._done_seq < waiter.target:
                    left = deadline - time.monotonic()
                    if left <= 0 or self._thread is None:
                        return False
                    self._cond.wait(left)
                return True
            finally:
                if waiter in self._waiters:
                    self._waiters.remove(waiter)

    def _release_waiters(self) -> None:
        """Wake the waiters whose rows are stored (all of them once the thread has stopped)."""
        with self._cond:
            keep = []
            for w in self._waiters:
                if w.target <= self._done_seq or self._thread is None:
                    w.wake()
                else:
                    keep.append(w)
            self._waiters = keep
            self._cond.notify_all()

    # -- storing -----------------------------------------------------------------------------
    def _due(self) -> float | None:
        """Under the lock: 0 when the waiting rows should be stored now, else seconds to sleep
        (None: nothing waits)."""
        waiting = self._accepted_seq > self._done_seq
        if not waiting:
            return None
        now = time.monotonic()
        if now < self._failing_until:
            return self._failing_until - now
        if self._waiters:
            return 0.0
        quiet = self._last_accept + self.settings.quiet_ms / 1000 - now
        oldest = next((t for s, t in self._times if s > self._done_seq), 0.0)
        lag = oldest + self.settings.max_lag_s - now
        if quiet <= 0 or lag <= 0:
            return 0.0
        return min(quiet, lag)

    def _run(self) -> None:
        while True:
            with self._cond:
                while True:
                    if self._stopping:
                        return
                    due = self._due()
                    if due == 0.0:
                        break
                    self._cond.wait(due)
            try:
                self._store_batch()
            except Exception:  # a storage failure: the rows stay committed; try again later
                log.exception("remember intake: storing failed; retrying in %.0f s", RETRY_S)
                with self._cond:
                    self._failing_until = time.monotonic() + RETRY_S
            # The writer was ours for the batch, so the remembers of a burst could not arrive:
            # the pause is counted from now, not from before it.
            self._last_accept = max(self._last_accept, time.monotonic())
            self._release_waiters()

    def _store_batch(self) -> None:
        """Store the oldest ``batch`` waiting rows as memories, and delete them, in one transaction."""
        rows = self.db.read(
            lambda c: c.execute(
                "SELECT seq, id, payload, accepted_at FROM memory_intake ORDER BY seq LIMIT ?",
                (self.settings.batch,),
            ).fetchall()
        )
        if not rows:
            with self._cond:  # nothing committed is left: whatever was counted is stored
                self._advance(self._accepted_seq)
            return
        items: list[_Item] = []
        bad: list[_Failed] = []
        for seq, mem_id, payload, accepted_at in rows:
            try:
                data = json.loads(payload)
                mem = data["mem"]
                self.service.run_prepare_hooks(mem)  # the extractor's work: here, not on the writer
                items.append(_Item(int(seq), mem_id, mem, str(data.get("changed_by") or "api")))
            except Exception as exc:  # noqa: BLE001 - a row that cannot be read is set aside, with why
                bad.append(_Failed(int(seq), mem_id, payload, accepted_at, _reason(exc)))
        last = int(rows[-1][0])
        try:
            results = self.db.write(lambda conn: self._store_tx(conn, items, bad, last), alone=True)
        except Exception as exc:
            if _transient(exc):
                raise
            log.warning("remember intake: a batch of %d failed (%s); storing its rows one by one", len(items), exc)
            results = []
            by_seq = {int(r[0]): r for r in rows}
            for item in items:
                results.extend(self._store_one(item, by_seq[item.seq]))
            self.db.write(lambda conn: self._store_tx(conn, [], bad, last), alone=True)
        self._after_store(items, results, len(bad), last)

    def _store_tx(self, conn: Connection, items: list[_Item], bad: list[_Failed], last: int) -> list[Stored]:
        """The memories, the rows set aside, and the intake emptied up to ``last``: together or not at all."""
        out = [self.service.insert(conn, it.mem, it.changed_by, None) for it in items]
        for f in bad:
            log.error("remember intake: accepted memory %s could not be stored: %s", f.id, f.error)
            conn.execute(
                "INSERT OR REPLACE INTO memory_intake_failed (seq, id, payload, accepted_at, error, failed_at)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                (f.seq, f.id, f.payload, f.accepted_at, f.error, now_iso()),
            )
        if items or bad:
            conn.execute("DELETE FROM memory_intake WHERE seq <= ?", (last,))
        return out

    def _store_one(self, item: _Item, row: Any) -> list[Stored]:
        """One row alone, after its batch failed; if it fails on its own it is set aside."""
        try:
            return list(self.db.write(lambda conn: self._store_tx(conn, [item], [], item.seq), alone=True))
        except Exception as exc:
            if _transient(exc):
                raise
            failed = _Failed(item.seq, item.id, str(row[2]), str(row[3]), _reason(exc))
            self.db.write(lambda conn: self._store_tx(conn, [], [failed], item.seq), alone=True)
            with self._cond:
                self.failed += 1
            return []

    def _after_store(self, items: list[_Item], results: list[Stored], failed: int, last: int) -> None:
        merged = 0
        for item, out in zip(items, results, strict=False):
            if out.deduped and not out.retired and out.row["id"] != item.id:
                merged += 1
                log.info("remember intake: %s was stored first by another write as %s", item.id, out.row["id"])
        if any(not (r.deduped or r.retired) for r in results):
            self.service.embeddings.notify()
        with self._cond:
            self.stored += len(results)
            self.merged += merged
            self.failed += failed
            self._advance(last)

    def _advance(self, seq: int) -> None:
        """Under the lock: every row up to ``seq`` is stored or failed."""
        self._done_seq = max(self._done_seq, seq)
        while self._times and self._times[0][0] <= self._done_seq:
            self._times.popleft()

    # -- status ------------------------------------------------------------------------------
    def status(self) -> IntakeStatus:
        with self._cond:
            oldest = next((t for s, t in self._times if s > self._done_seq), None)
            return IntakeStatus(
                state="on",
                pending=self._waiting(),
                oldest_pending_s=round(time.monotonic() - oldest, 3) if oldest else 0.0,
                accepted=self.accepted,
                stored=self.stored,
                merged=self.merged,
                failed=self.failed,
            )


def _transient(exc: BaseException) -> bool:
    """A failure that says nothing about the rows (the disk, a lock, a freeze, a closing
    database): they are stored again later, never set aside as failed."""
    return isinstance(exc, StorageError | MutationsFrozen) or (
        isinstance(exc, RuntimeError) and str(exc) == "database is closed"
    )
