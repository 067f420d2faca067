"""Fills in vectors in the background and answers query embeddings.

``remember`` never waits for an embedding: it writes the row (keyword-searchable at once)
and nudges this service, whose thread embeds whatever lacks a vector for the configured
model, in batches, writes the vectors (keyed by content hash, so unchanged text is never
embedded twice) and adds them to the in-memory index. The model is loaded on that thread
too, so the daemon answers ``/health`` long before torch has finished importing.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable
from datetime import UTC, datetime
from functools import partial
from typing import Any, Literal

import numpy as np

from signet import plugins
from signet.config import EmbeddingSettings
from signet.embedding.base import Embedder, EmbeddingError, ReleasesMemory, Vectors, VectorSink
from signet.errors import Stopping, StorageError, until_stopped
from signet.store import vector_blob
from signet.store.database import Database
from signet.store.sqlite import Connection, sqlite3

log = logging.getLogger(__name__)

State = Literal["loading", "ready", "unavailable", "disabled"]

_WITHOUT_VECTOR = """FROM memories m LEFT JOIN embeddings e ON e.content_hash = m.content_hash
WHERE m.is_deleted = 0 AND (e.content_hash IS NULL OR e.model IS NOT :model)"""
"""Live memories with no vector of the current model (``:model``), by the embeddings table."""

_SWEEP_SQL = (
    f"SELECT m.seq, m.id, m.content, m.content_hash {_WITHOUT_VECTOR} AND m.seq > :after ORDER BY m.seq LIMIT :n"
)
"""Every live memory without a vector of the current model, from ``seq`` on: the first pass
after the model loads (it also finds memories embedded by another model)."""

_NEW_SQL = """
SELECT m.seq, m.id, m.content, m.content_hash FROM memories m INDEXED BY idx_memories_unembedded
WHERE m.embedding_model IS NULL AND m.is_deleted = 0
ORDER BY m.seq LIMIT ?
"""
"""New and edited memories (``embedding_model`` is NULL until their vector is stored), by the
partial index of migration 9 (named: without statistics the planner preferred a scan of
every live memory): what is pending once the first pass is done."""


class QueryEmbeddingPaused(EmbeddingError):
    """``embed_query`` refused without calling the provider: a query embedding failed recently."""


def make_embedder(settings: EmbeddingSettings) -> Embedder:
    factories = plugins.embedders()
    ref = factories.get(settings.provider)
    if ref is None:
        raise EmbeddingError(f"unknown embedding provider '{settings.provider}' (have: {', '.join(sorted(factories))})")
    embedder: Embedder = plugins.resolve(ref).from_settings(settings)
    return embedder


def makes_vectors(provider: str) -> bool:
    """False for a provider that makes no vectors (``none``): recall is keyword-only."""
    ref = plugins.embedders().get(provider)
    return ref is not None and bool(getattr(plugins.resolve(ref), "makes_vectors", True))


IDLE_RELEASE_S = 5.0
"""How long the background embedder waits with nothing to embed before the model gives its run
buffers back (:meth:`EmbeddingService._release_memory`): long enough that a stream of remembers
does not regrow them at every batch."""

BACKGROUND_NICE = 10
"""Niceness of the background embedding thread (Linux: per thread)."""


def lower_priority(nice: int = BACKGROUND_NICE) -> bool:
    """Run the calling thread at a lower CPU priority; False where the OS cannot.

    Background embedding must not compete with the work a caller waits for: a remember is
    accepted (written, keyword-searchable) without its vector, and a recall embeds its query
    on a request thread. At nice 10 the scheduler gives this thread the CPU those leave idle,
    so under load remembers stay fast and vectors catch up afterwards. On Linux niceness is
    per thread (the native thread id is a valid ``PRIO_PROCESS`` target), and threads this
    one creates (torch's pool, when ``embedding.threads`` > 1) inherit it.
    """
    if not sys.platform.startswith("linux"):
        return False
    try:
        tid = threading.get_native_id()
        os.setpriority(os.PRIO_PROCESS, tid, max(os.getpriority(os.PRIO_PROCESS, tid), nice))
    except OSError as exc:
        log.debug("could not lower the embedder's priority: %s", exc)
        return False
    return True


EmbedListener = Callable[[str, int, float, BaseException | None], None]


class EmbeddingService:
    def __init__(self, db: Database, settings: EmbeddingSettings, index: VectorSink) -> None:
        self.db = db
        self.settings = settings
        self.index = index
        self.makes_vectors = makes_vectors(settings.provider)
        self.state: State = "loading" if self.makes_vectors else "disabled"
        self.error: str | None = None if self.makes_vectors else f"embedding provider is '{settings.provider}'"
        self.last_batch_error: str | None = None
        self.stopped_error: str | None = None
        self.loaded = threading.Event()
        """Set once the first load of the model and the stored vectors is over, however it
        ended (ready, unavailable, stopped, no vectors made): the keyword index's build waits
        for it (signet.runtime.Runtime.start_loaders)."""
        self.upstream: Callable[[float], bool] | None = None
        """Waits up to the seconds given until the remembers accepted so far are stored as
        memories (the remember intake's ``wait_stored``); :meth:`wait_idle` calls it first."""
        self.embedder: Embedder | None = None
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._idle = threading.Event()
        # The first pass after the model loads sweeps every memory once, in seq order from
        # a cursor; after it only new and edited memories can lack a vector (_NEW_SQL).
        self._swept = False
        self._sweep_from = 0
        self._query_cache: OrderedDict[str, Vectors] = OrderedDict()
        self._cache_lock = threading.Lock()
        # Circuit breaker for query embeddings (see query_paused). The clock is an attribute
        # so tests can move time instead of sleeping through a cool-down.
        self.clock: Callable[[], float] = time.monotonic
        self._breaker_lock = threading.Lock()
        self._query_failed_at: float | None = None
        self._query_failure: str | None = None
        self._probing = False
        self.listeners: list[EmbedListener] = []
        """Told of every provider call: (kind: query/write/background, texts, seconds, the
        error or None). Analytics and telemetry listen (signet.ops.observe); they must not raise."""

    def _embed(self, texts: list[str], kind: str) -> Vectors:
        """One provider call, timed and reported to :attr:`listeners` (failures too)."""
        assert self.embedder is not None
        started = time.perf_counter()
        error: BaseException | None = None
        try:
            return self.embedder.embed(texts)
        except BaseException as exc:
            error = exc
            raise
        finally:
            for fn in self.listeners:
                fn(kind, len(texts), time.perf_counter() - started, error)

    @property
    def model_key(self) -> str:
        """What is recorded per vector: provider and model, so a change is detectable."""
        return f"{self.settings.provider}:{self.settings.model}"

    @property
    def backend(self) -> str | None:
        """The local model's runtime (``onnx`` or ``torch``) once loaded; None for remote providers."""
        value = getattr(self.embedder, "backend_in_use", None)
        return value if isinstance(value, str) else None

    @property
    def ready(self) -> bool:
        return self.state == "ready"

    # -- lifecycle -------------------------------------------------------------------------
    def start(self) -> None:
        if not self.makes_vectors:
            self.loaded.set()
            return
        self._thread = threading.Thread(target=self._run, name="signet-embedder", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=30)

    def notify(self) -> None:
        self._idle.clear()
        self._wake.set()

    def wait_idle(self, timeout: float = 60.0) -> bool:
        """Block until every memory has a vector (tests, benchmarks, importers); remembers
        accepted but not yet stored (:attr:`upstream`) are waited for first."""
        deadline = time.monotonic() + timeout
        if self.upstream is not None and not self.upstream(timeout):
            return False
        while time.monotonic() < deadline:
            if self.state in ("unavailable", "disabled"):
                return False
            if self.state == "ready" and self._idle.is_set() and self.pending_count() == 0:
                return True
            self._wake.set()
            time.sleep(0.05)
        return False

    def _run(self) -> None:
        """The background embedder: load, then embed pending memories until stopped.

        Provider failures and database errors (disk full, a locked or corrupt file) are
        retried with backoff and shown in ``last_batch_error``; anything else is a bug: it
        is logged with its traceback and recorded in ``stopped_error``, which status reports
        (``degraded``, with the reason), so it never looks as if new memories were still
        being embedded. Recall keeps using the vectors already indexed.
        """
        try:
            self._loop()
        except Stopping:  # stopped while loading the vector index: the daemon is shutting down
            log.info("vector index load abandoned: the daemon is stopping")
        except Exception as exc:  # logged with its traceback and surfaced in status
            log.exception("background embedder stopped")
            self.stopped_error = (
                f"background embedder stopped: {exc!r}; new memories get no vectors "
                "until the daemon restarts (signet restart)"
            )
        finally:
            self.loaded.set()

    def _loop(self) -> None:
        lower_priority()
        backoff = 1.0
        busy = False  # embedded something since the model last gave its buffers back
        while not self._stop.is_set():
            if self.state != "ready":
                try:
                    self._load()
                    backoff = 1.0
                except EmbeddingError as exc:
                    self.state, self.error = "unavailable", str(exc)
                    log.warning("embedding provider unavailable: %s", exc)
                    self.loaded.set()  # retried with backoff: nothing else waits for that
                    self._stop.wait(min(backoff, 60.0))
                    backoff *= 2
                    continue
            try:
                did = self._embed_pending_batch()
            except (EmbeddingError, StorageError, sqlite3.Error, *self.db.engine_errors) as exc:  # a full disk waits
                self.last_batch_error = str(exc)
                log.warning("embedding batch failed (retrying): %s", exc)
                self._stop.wait(min(backoff, 60.0))
                backoff *= 2
                continue
            backoff = 1.0
            busy = busy or did
            if not did:
                self._idle.set()
                woken = self._wake.wait(timeout=IDLE_RELEASE_S)
                self._wake.clear()
                if busy and not woken:  # quiet for a while after a catch-up, not between two remembers
                    busy = False
                    self._release_memory()

    def _release_memory(self) -> None:
        """The catch-up is over: the model's run buffers, grown for its longest batch, go back
        to the system (a daemon that embedded a backlog of long turns otherwise kept 1.2 GB
        more at rest; docs/benchmarks.md). The next batch grows them again."""
        if isinstance(self.embedder, ReleasesMemory):
            try:
                self.embedder.release_memory()
            except EmbeddingError as exc:  # the memory stays held: nothing else is at stake
                log.warning("embedder could not release its buffers: %s", exc)

    def _load(self) -> None:
        self.state, self.error = "loading", None
        embedder = make_embedder(self.settings)
        started = time.perf_counter()
        embedder.load()
        self.embedder = embedder
        self._load_index()
        self._swept, self._sweep_from = False, 0
        self.state = "ready"
        log.info(
            "embedder %s ready in %.1fs (backend %s, %d vectors indexed)",
            self.model_key,
            time.perf_counter() - started,
            self.backend or self.settings.provider,
            len(self.index),
        )
        self.loaded.set()

    def _load_index(self) -> None:
        def fetch(conn: Connection) -> list[Any]:
            rows = conn.execute(
                "SELECT m.id, m.project, m.created_at, e.vector, e.dimensions FROM memories m"
                " JOIN embeddings e ON e.content_hash = m.content_hash "
                "WHERE m.is_deleted = 0 AND e.model = ?",
                (self.model_key,),
            )
            return list(until_stopped(rows, self._stop.is_set))

        rows = self.db.read(fetch)
        if not rows:
            return
        mat, kept = vector_blob.decode_many([r["vector"] for r in rows], [int(r["dimensions"]) for r in rows])
        rows = [rows[i] for i in kept]
        if self._stop.is_set():  # before the index's build (its inverted lists take a while)
            raise Stopping
        self.index.upsert_many(
            [r["id"] for r in rows], mat, [r["project"] for r in rows], [r["created_at"] for r in rows]
        )

    # -- work ------------------------------------------------------------------------------
    def pending_count(self) -> int:
        """Live memories still waiting for a vector of the current model."""
        if self._swept:  # then only new and edited memories can be waiting: an index count
            sql = (
                "SELECT COUNT(*) FROM memories INDEXED BY idx_memories_unembedded"
                " WHERE embedding_model IS NULL AND is_deleted = 0"
            )
        else:
            sql = f"SELECT COUNT(*) {_WITHOUT_VECTOR}"
        row = self.db.read(lambda c: c.execute(sql, {"model": self.model_key}).fetchone())
        return int(row[0])

    def _embed_pending_batch(self) -> bool:
        assert self.embedder is not None
        batch = max(self.settings.batch_size, 1) * 4
        if self._swept and self.db.dialect == "postgres":
            from signet.store.pg_feed import unclaimed_new

            rows = unclaimed_new(self.db, batch)  # type: ignore[arg-type]
        elif self._swept:
            rows = self.db.read(lambda c: list(c.execute(_NEW_SQL, (batch,))))
        else:
            args = {"model": self.model_key, "after": self._sweep_from, "n": batch}
            rows = self.db.read(lambda c: list(c.execute(_SWEEP_SQL, args)))
            if not rows:
                self._swept = True  # every memory has been looked at once
                return self._embed_pending_batch()
        if not rows:
            return False
        by_hash: dict[str, str] = {}
        for r in rows:
            by_hash.setdefault(r["content_hash"], r["content"])
        hashes = list(by_hash)
        if self.db.dialect == "postgres":  # several daemons: each hash is embedded by the one that claims it
            from signet.store.pg_feed import claim_embeddings

            hashes = claim_embeddings(self.db, hashes)  # type: ignore[arg-type]
            if not hashes:
                return False  # another daemon embeds these; its vectors arrive through the change feed
        vectors = self._embed([by_hash[h] for h in hashes], "background")
        self.store_vectors(hashes, vectors)
        if not self._swept:
            self._sweep_from = max(int(r["seq"]) for r in rows)
        self.last_batch_error = None
        self._provider_answered()  # recalls and edits may use it again
        return True

    def store_vectors(self, hashes: list[str], vectors: Vectors) -> None:
        """Persist vectors by content hash and index every live memory with that hash.

        The index is updated right after the write commits, on the writer thread, so it is
        ordered with every other write (a concurrent modify cannot be overtaken by a stale
        vector) and never holds a vector whose write rolled back.
        """
        now = datetime.now(UTC).isoformat()
        model = self.model_key
        dims = int(vectors.shape[1])
        vectors = vector_blob.as_stored(vectors)

        def write(conn: Connection) -> None:
            for h, vec in zip(hashes, vectors, strict=True):
                owner = conn.execute(
                    "SELECT id FROM memories WHERE content_hash = ? ORDER BY is_deleted, seq LIMIT 1", (h,)
                ).fetchone()
                conn.execute(
                    "INSERT INTO embeddings(id, content_hash, vector, dimensions, source_type, source_id, chunk_text,"
                    " provider, model, created_at) VALUES (?, ?, ?, ?, 'memory', ?, ?, ?, ?, ?)"
                    " ON CONFLICT(content_hash) DO UPDATE SET vector = excluded.vector, dimensions = excluded.dimensions,"
                    " provider = excluded.provider, model = excluded.model, created_at = excluded.created_at",
                    (
                        str(uuid.uuid4()),
                        h,
                        vector_blob.encode(vec),
                        dims,
                        owner[0] if owner else "",
                        "",  # chunk_text: the text is the memory's (not a second copy; migration 12)
                        self.settings.provider,
                        model,
                        now,
                    ),
                )
                conn.execute("UPDATE memories SET embedding_model = ? WHERE content_hash = ?", (model, h))
                if self.db.dialect == "postgres":
                    from signet.store.pg_feed import release_embeddings

                    release_embeddings(conn, [h], getattr(self.db, "node", ""))
                live = list(
                    conn.execute(
                        "SELECT id, project, created_at FROM memories WHERE content_hash = ? AND is_deleted = 0", (h,)
                    )
                )
                if live:
                    self.db.after_commit(
                        partial(
                            self.index.upsert_many,
                            [r["id"] for r in live],
                            np.repeat(vec.reshape(1, -1), len(live), axis=0),
                            [r["project"] for r in live],
                            [r["created_at"] for r in live],
                        )
                    )

        self.db.write(write)

    # -- query embeddings and their circuit breaker ----------------------------------------
    def query_paused(self) -> str | None:
        """Why query embedding is skipped right now, or None when a recall may call the provider.

        A remote embedder that hangs makes every recall wait ``embedding.timeout`` before it
        falls back to keyword results. So after one query embedding fails, recall skips the
        vector leg for ``embedding.query_cooldown`` seconds and says why; then a single recall
        probes the provider (the others keep skipping while it is under way) and a success
        closes the breaker. Only query embeddings trip it: the background embedder has its own
        back-off, and stored vectors stay valid.
        """
        with self._breaker_lock:
            return self._paused_reason(self.clock())

    def _paused_reason(self, now: float) -> str | None:
        cooldown = self.settings.query_cooldown
        if self._query_failed_at is None or cooldown <= 0:
            return None
        ago = now - self._query_failed_at
        failed = f"embedding provider failed {ago:.1f} s ago ({self._query_failure})"
        if ago < cooldown:
            return f"{failed}; retrying after {cooldown - ago:.1f} s"
        if self._probing:
            return f"{failed}; a retry is under way"
        return None

    def embed_query(self, text: str) -> Vectors | None:
        """The query's vector, or None when the embedder is not ready (never blocks on loading).

        Raises :class:`EmbeddingError` when the provider fails, and
        :class:`QueryEmbeddingPaused` (without calling it) while the breaker is open.
        """
        if not self.ready or self.embedder is None:
            return None
        with self._cache_lock:
            hit = self._query_cache.get(text)
            if hit is not None:
                self._query_cache.move_to_end(text)
                return hit
        with self._breaker_lock:
            paused = self._paused_reason(self.clock())
            if paused is not None:
                raise QueryEmbeddingPaused(paused)
            probe = self._query_failed_at is not None
            self._probing = self._probing or probe
        try:
            vec: Vectors = self._embed([text], "query")[0]
        except EmbeddingError as exc:
            self._provider_failed(exc)
            raise
        finally:
            if probe:
                with self._breaker_lock:
                    self._probing = False
        self._provider_answered()
        with self._cache_lock:
            self._query_cache[text] = vec
            if len(self._query_cache) > 512:
                self._query_cache.popitem(last=False)
        return vec

    def embed_texts(self, texts: list[str]) -> Vectors | None:
        """Embed now, for callers that must have vectors before they write (modify, pipeline).

        None when the embedder is not ready or the breaker is open (see :meth:`query_paused`):
        the caller writes without vectors and the background embedder fills them in later,
        instead of every edit waiting out a hanging provider's timeout. A failure here opens
        the breaker as a failed query embedding does (same provider); a success here or in a
        background batch closes it.
        """
        if not self.ready or self.embedder is None:
            return None
        with self._breaker_lock:
            if self._paused_reason(self.clock()) is not None:
                return None
        try:
            vectors = self._embed(texts, "write")
        except EmbeddingError as exc:
            self._provider_failed(exc)
            raise
        self._provider_answered()
        return vectors

    def _provider_failed(self, exc: EmbeddingError) -> None:
        """Open the breaker (or restart its cool-down): recalls and edits skip the provider."""
        with self._breaker_lock:
            self._query_failed_at, self._query_failure = self.clock(), str(exc)

    def _provider_answered(self) -> None:
        """Close the breaker: the provider answered a query, an edit or a background batch."""
        with self._breaker_lock:
            if self._query_failed_at is not None:
                log.info("the embedding provider answers again; the breaker is closed")
            self._query_failed_at = self._query_failure = None
