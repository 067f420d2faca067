"""The change feed: several daemons on one PostgreSQL store keep their in-memory caches current.

Each daemon holds the vector index in memory (signet.search.vectors). Its own writes reach it
at once (``after_commit``: read-your-writes); another daemon's writes reach it through this
feed. Triggers (PostgreSQL migration 31, signet.store.pg_schema) log every memory whose indexed
state can change and every stored vector in ``signet_changes``, with the writing transaction's
id and the writing daemon's name, and send ``NOTIFY signet_changes`` at commit.

Why the cursor is a snapshot and not the last id read: ids come from a sequence when a row is
inserted, not when its transaction commits, so a transaction that commits later can hold a
smaller id than rows already read, and "id > cursor" would skip it for good. The cursor is the
PostgreSQL snapshot (``pg_current_snapshot()``) the last read ran in; the next read takes the
rows that snapshot could not see (``NOT pg_visible_in_snapshot(xid, cursor)``, bounded below
by its ``xmin`` so the ``xid`` index serves it). Every committed change is read exactly once
after it commits, whatever order the daemons commit in.

Why ``NOTIFY`` only wakes: a notification is lost while the listening connection is down and
is not sent by a transaction that rolls back; so it only shortens the wait. The table is the
truth, read on every wake-up and at least every :data:`POLL_S` seconds without one.

Why the changes are applied on the writer thread: the daemon's own writes update the index in
commit order from that thread. Reading the current state of the changed memories there and
applying it in an ``after_commit`` keeps the feed ordered with them, so a feed read can never
overwrite a newer local write with an older state. Applying is by state (read the memory and
its vector now), not by replaying events: idempotent, so reading a change twice is harmless.
The daemon's own changes are skipped (``origin``): its index already holds them.

The delay between a commit on one daemon and the index of another is one wake-up plus one
read: measured in docs/team.md ("Several daemons"); :meth:`ChangeFeed.status` reports it.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt
import psycopg

from signet.errors import StorageError
from signet.store import vector_blob
from signet.store.pg_url import scrub
from signet.store.postgres import PostgresDatabase

log = logging.getLogger(__name__)


class VectorIndex(Protocol):
    """What the feed uses of the daemon's vector index (signet.search.vectors.VectorIndex,
    which satisfies it: the store layer sits below the search engines and cannot import it)."""

    dimensions: int | None

    def upsert_many(
        self,
        ids: list[str],
        vectors: npt.NDArray[np.float32],
        projects: Sequence[str | None],
        created: Sequence[str | None],
    ) -> None: ...

    def remove(self, memory_id: str) -> None: ...

    def memory_ids(self) -> list[str]: ...


CHANNEL = "signet_changes"
POLL_S = 1.0
"""The longest wait without a notification: the delay's bound when ``LISTEN`` is down."""
RETENTION_S = 24 * 3600.0
"""Changes older than this are deleted (by whichever daemon prunes first). A daemon whose feed
was stalled longer (its cursor older than this) reloads its whole index instead."""
PRUNE_EVERY_S = 300.0

_FETCH = """
SELECT topic, key, EXTRACT(EPOCH FROM clock_timestamp() - MIN(at))::float8 AS age
FROM signet_changes
WHERE xid >= pg_snapshot_xmin(%(cursor)s::pg_snapshot)
  AND NOT pg_visible_in_snapshot(xid, %(cursor)s::pg_snapshot)
  AND origin <> %(me)s
GROUP BY topic, key
"""

_STATE = """
SELECT m.id, m.project, m.created_at, e.vector, e.dimensions
FROM memories m LEFT JOIN embeddings e ON e.content_hash = m.content_hash AND e.model = %(model)s
WHERE m.is_deleted = 0 AND (m.id = ANY(%(ids)s) OR m.content_hash = ANY(%(hashes)s))
"""

_ALL = """
SELECT m.id, m.project, m.created_at, e.vector, e.dimensions
FROM memories m JOIN embeddings e ON e.content_hash = m.content_hash AND e.model = %(model)s
WHERE m.is_deleted = 0
"""


class ChangeFeed:
    """Follows ``signet_changes`` and applies other daemons' writes to this daemon's vector index.

    ``model_key`` and ``ready`` come from the embedding service: vectors of the configured model
    are indexed, and nothing is applied while the index is still loading (the cursor is taken
    before the load starts, so what changed meanwhile is applied once it is done).
    """

    def __init__(
        self,
        db: PostgresDatabase,
        index: VectorIndex,
        *,
        model_key: Callable[[], str],
        ready: Callable[[], bool],
        poll_s: float = POLL_S,
    ) -> None:
        self.db = db
        self.index = index
        self.model_key = model_key
        self.ready = ready
        self.poll_s = poll_s
        self.cursor: str | None = None
        """The snapshot (``pg_snapshot`` as text) the last applied read ran in."""
        self._cursor_at = 0.0
        self.applied = 0
        """Changed memories applied so far (each read's distinct keys)."""
        self.last_delay_s: float | None = None
        """Age of the oldest change the last non-empty read applied (commit on the writing daemon
        to this daemon's index, bounded by one wake-up plus one read)."""
        self.max_delay_s = 0.0
        self.listening = False
        self.error: str | None = None
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._pruned = 0.0
        self._synced = threading.Condition()
        self._rounds = 0

    # -- lifecycle ---------------------------------------------------------------------------
    def start(self) -> None:
        """Take the cursor now (before the vector index loads) and start following."""
        self.cursor = self.db.read(lambda c: str(c.raw.execute("SELECT pg_current_snapshot()::text").fetchone()[0]))
        self._cursor_at = time.monotonic()
        self._stop.clear()
        for target, name in ((self._listen, "signet-feed-listen"), (self._run, "signet-feed")):
            t = threading.Thread(target=target, name=name, daemon=True)
            t.start()
            self._threads.append(t)

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        for t in self._threads:
            t.join(timeout=5)
        self._threads.clear()

    def wait_synced(self, timeout: float = 30.0) -> bool:
        """Block until a read that started after this call has been applied (tests, benchmarks)."""
        deadline = time.monotonic() + timeout
        with self._synced:
            target = self._rounds + 2  # the round under way may have started before the call
            self._wake.set()
            while self._rounds < target:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._synced.wait(min(left, 0.1))
                self._wake.set()
        return True

    def status(self) -> dict[str, Any]:
        """What diagnostics and ``signet status`` show of the feed (no query: safe to poll)."""
        return {
            "listening": self.listening,
            "poll_s": self.poll_s,
            "cursor_age_s": round(time.monotonic() - self._cursor_at, 3) if self.cursor is not None else None,
            "last_delay_s": None if self.last_delay_s is None else round(self.last_delay_s, 3),
            "max_delay_s": round(self.max_delay_s, 3),
            "applied": self.applied,
            "error": self.error,
        }

    def behind(self) -> dict[str, Any]:
        """How far the cursor is behind the head: changes committed by other daemons and not
        applied here yet, and the age of the oldest one (a query: for diagnostics)."""
        cursor = self.cursor
        if cursor is None:
            return {"changes": 0, "seconds": 0.0}

        def read(c: Any) -> tuple[int, float]:
            row = c.raw.execute(
                "SELECT COUNT(*), COALESCE(EXTRACT(EPOCH FROM clock_timestamp() - MIN(at)), 0)::float8"
                " FROM signet_changes WHERE xid >= pg_snapshot_xmin(%(cursor)s::pg_snapshot)"
                " AND NOT pg_visible_in_snapshot(xid, %(cursor)s::pg_snapshot) AND origin <> %(me)s",
                {"cursor": cursor, "me": self.db.node},
            ).fetchone()
            return int(row[0]), float(row[1])

        changes, seconds = self.db.read(read)
        return {"changes": changes, "seconds": round(seconds, 3)}

    # -- threads -----------------------------------------------------------------------------
    def _listen(self) -> None:
        """Hold a ``LISTEN`` connection; every notification wakes the reader. Reconnects with
        back-off; meanwhile the reader polls every :data:`POLL_S` seconds."""
        backoff = 1.0
        while not self._stop.is_set():
            try:
                conn = self.db._connect()
            except psycopg.Error as exc:
                self._listen_failed(exc, backoff)
                backoff = min(backoff * 2, 30.0)
                continue
            try:
                conn.execute(f"LISTEN {CHANNEL}")
                self.listening = True
                backoff = 1.0
                self._wake.set()  # anything committed before LISTEN took effect is read now
                while not self._stop.is_set():
                    for note in conn.notifies(timeout=0.5, stop_after=64):
                        if note.payload != self.db.node:  # its own writes are in the index already
                            self._wake.set()
            except psycopg.Error as exc:
                self._listen_failed(exc, backoff)
                backoff = min(backoff * 2, 30.0)
            finally:
                self.listening = False
                conn.close()

    def _listen_failed(self, exc: psycopg.Error, backoff: float) -> None:
        log.warning(
            "change feed: LISTEN on %s failed (polling every %.1fs meanwhile): %s",
            self.db.target.shown,
            self.poll_s,
            scrub(str(exc), self.db.target.password),
        )
        self._stop.wait(backoff)

    def _run(self) -> None:
        backoff = 1.0
        while not self._stop.is_set():
            self._wake.wait(timeout=self.poll_s)
            self._wake.clear()
            if self._stop.is_set():
                return
            try:
                self.sync()
                self.error = None
                backoff = 1.0
            except (StorageError, psycopg.Error, RuntimeError) as exc:  # RuntimeError: closed at shutdown
                if self._stop.is_set():
                    return
                self.error = f"change feed: {scrub(str(exc), self.db.target.password)}"
                log.warning("%s (retrying in %.0fs)", self.error, backoff)
                self._stop.wait(backoff)
                backoff = min(backoff * 2, 30.0)

    # -- reading and applying ----------------------------------------------------------------
    def sync(self) -> int:
        """Read the changes after the cursor and apply them; the number of keys applied.

        Nothing is read while the vector index is loading (:attr:`ready` False): the cursor
        stays, so the changes are applied after the load."""
        if not self.ready():
            self._round_done()
            return 0
        if time.monotonic() - self._cursor_at > RETENTION_S / 2:
            self._reload()
            return 0
        started = time.monotonic()
        n = self.db.write(self._apply)
        if time.monotonic() - self._pruned > PRUNE_EVERY_S:
            self._pruned = time.monotonic()
            self.db.write(
                lambda c: c.raw.execute(
                    "DELETE FROM signet_changes WHERE at < clock_timestamp() - make_interval(secs => %s)",
                    (RETENTION_S,),
                )
            )
        log.debug("change feed: %d keys in %.1f ms", n, (time.monotonic() - started) * 1000)
        return n

    def _apply(self, conn: Any) -> int:
        """On the writer thread: the next snapshot, the changes it sees that the cursor did not,
        the current state of what they name; the index is updated once this commits."""
        raw = conn.raw
        cursor = self.cursor
        snap = str(raw.execute("SELECT pg_current_snapshot()::text").fetchone()[0])
        rows = raw.execute(_FETCH, {"cursor": cursor, "me": self.db.node}).fetchall()
        ids = [str(r[1]) for r in rows if r[0] == "memory"]
        hashes = [str(r[1]) for r in rows if r[0] == "embedding"]
        oldest = max((float(r[2]) for r in rows), default=None)
        state = (
            raw.execute(_STATE, {"model": self.model_key(), "ids": ids, "hashes": hashes}).fetchall() if rows else []
        )
        fetched = time.monotonic()

        def publish() -> None:
            self._publish(ids, state)
            self.cursor, self._cursor_at = snap, fetched
            if oldest is not None:
                self.last_delay_s = oldest + (time.monotonic() - fetched)
                self.max_delay_s = max(self.max_delay_s, self.last_delay_s)
                self.applied += len(rows)
            self._round_done()

        self.db.after_commit(publish)
        return len(rows)

    def _publish(self, ids: list[str], state: list[Any]) -> None:
        live = _indexable(state, self.index.dimensions)
        mat, kept = vector_blob.decode_many([bytes(r[3]) for r in live], [int(r[4]) for r in live])
        live = [live[i] for i in kept]
        for mid in set(ids) - {r[0] for r in live}:
            self.index.remove(mid)  # forgotten, deleted, or its content changed and is not embedded yet
        for mid in {r[0] for r in state} - {r[0] for r in live}:
            self.index.remove(mid)
        if live:
            self.index.upsert_many([r[0] for r in live], mat, [r[1] for r in live], [r[2] for r in live])

    def _reload(self) -> None:
        """The feed stalled past the retention: changes may be gone, so load every vector again
        and drop what is no longer live (on the writer thread, like :meth:`_apply`)."""
        log.warning("change feed: behind by more than %.0f h; reloading the vector index", RETENTION_S / 3600)

        def apply(conn: Any) -> None:
            raw = conn.raw
            snap = str(raw.execute("SELECT pg_current_snapshot()::text").fetchone()[0])
            state = raw.execute(_ALL, {"model": self.model_key()}).fetchall()
            fetched = time.monotonic()

            def publish() -> None:
                keep = {r[0] for r in state}
                for mid in self.index.memory_ids():
                    if mid not in keep:
                        self.index.remove(mid)
                self._publish([], state)
                self.cursor, self._cursor_at = snap, fetched
                self._round_done()

            self.db.after_commit(publish)

        self.db.write(apply)

    def _round_done(self) -> None:
        with self._synced:
            self._rounds += 1
            self._synced.notify_all()


def _indexable(state: list[Any], dims: int | None) -> list[Any]:
    """Rows with a vector the index can hold (one of its dimension, once it has one)."""
    out = [r for r in state if r[3] is not None]
    if not out:
        return out
    width = dims or int(out[0][4])
    return [r for r in out if int(r[4]) == width]


CLAIM_S = 60.0
"""How long a daemon's claim to embed a content hash holds: past it (the daemon died
mid-batch) another daemon takes the hash. A batch is a few seconds with the local model; one
that outlasts its claim may be embedded twice, which is harmless (the same vector, upserted)."""
CLAIM_WAIT_MS = 200
"""The longest a claim waits for another daemon's uncommitted claim of the same hash."""


def claim_embeddings(db: PostgresDatabase, hashes: list[str], lease_s: float = CLAIM_S) -> list[str]:
    """The hashes this daemon may embed now: those no other daemon holds an unexpired claim on
    (one atomic upsert: two daemons claiming the same hash at once, one gets it). So each new
    memory is embedded once, by whichever daemon claims it; the others load the stored vector
    through the feed."""
    if not hashes:
        return []
    ordered = sorted(set(hashes))  # one lock order for every daemon

    def claim(conn: Any) -> list[str]:
        # Never wait long on another daemon's write group (it holds its rows until it commits):
        # a short lock timeout inside a savepoint, and a batch that meets one is tried later.
        raw = conn.raw
        raw.execute("SAVEPOINT signet_claim")
        try:
            before = raw.execute("SELECT current_setting('lock_timeout')").fetchone()[0]
            raw.execute("SELECT set_config('lock_timeout', %s, true)", (f"{CLAIM_WAIT_MS}ms",))
            rows = raw.execute(
                "INSERT INTO signet_embedding_claims(content_hash, owner, until)"
                " SELECT h, %(me)s, clock_timestamp() + make_interval(secs => %(lease)s)"
                " FROM unnest(%(hashes)s::text[]) AS h"
                " ON CONFLICT (content_hash) DO UPDATE SET owner = EXCLUDED.owner, until = EXCLUDED.until"
                " WHERE signet_embedding_claims.until < clock_timestamp()"
                " OR signet_embedding_claims.owner = EXCLUDED.owner"
                " RETURNING content_hash",
                {"me": db.node, "lease": lease_s, "hashes": ordered},
            ).fetchall()
            raw.execute("SELECT set_config('lock_timeout', %s, true)", (before,))
        except (psycopg.errors.DeadlockDetected, psycopg.errors.LockNotAvailable) as exc:
            raw.execute("ROLLBACK TO SAVEPOINT signet_claim")  # undoes the setting too
            raw.execute("RELEASE SAVEPOINT signet_claim")
            log.info("embedding claims: %s; this batch is tried again later", exc.diag.message_primary)
            return []
        raw.execute("RELEASE SAVEPOINT signet_claim")
        return [str(r[0]) for r in rows]

    got = set(db.write(claim))
    return [h for h in hashes if h in got]


def release_embeddings(conn: Any, hashes: list[str], owner: str) -> None:
    """Inside the write that stores the vectors: this daemon's claims on them end."""
    conn.raw.execute(
        "DELETE FROM signet_embedding_claims WHERE content_hash = ANY(%s::text[]) AND owner = %s", (hashes, owner)
    )


def unclaimed_new(db: PostgresDatabase, limit: int) -> list[dict[str, Any]]:
    """New and edited memories waiting for a vector that no other daemon has claimed: what this
    daemon's embedder takes next (without the filter every daemon would pick the same oldest
    rows, and all but one would find them claimed and wait)."""
    from psycopg.rows import dict_row

    def read(conn: Any) -> list[dict[str, Any]]:
        cur: psycopg.Cursor[dict[str, Any]] = conn.raw.cursor(row_factory=dict_row)
        cur.execute(
            "SELECT m.seq, m.id, m.content, m.content_hash FROM memories m"
            " WHERE m.embedding_model IS NULL AND m.is_deleted = 0 AND NOT EXISTS ("
            "   SELECT 1 FROM signet_embedding_claims c WHERE c.content_hash = m.content_hash"
            "   AND c.owner <> %s AND c.until > clock_timestamp())"
            " ORDER BY m.seq LIMIT %s",
            (db.node, limit),
        )
        return cur.fetchall()

    return db.read(read)
