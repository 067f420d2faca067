"""The embedding map: a 2-D (or 3-D) projection of every live memory's vector, for the dashboard.

Why PCA and not UMAP (docs/dashboard.md, "Embedding map"): on this project's reference machine
``umap-learn`` took 12.6 s just to import (numba) and over a minute for 10k vectors, against
0.04 s for a PCA of the same 10k; the map is a browsing aid (clusters, outliers, click → the
memory), and a linear projection of normalised sentence embeddings already separates topics.
The projection is computed once in a background thread and kept in ``umap_cache`` (the spec's
table name) until the number of embedded live memories changes; a request meanwhile gets
``202``. A map of 100k points is computed whole, then down-sampled per request (``limit``)
with a fixed stride, so the browser never draws more than it can.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from threadpoolctl import threadpool_limits

from signet.store import vector_blob
from signet.store.database import Database
from signet.store.filters import MemoryFilter
from signet.store.scope import UNSCOPED, ReadScope

log = logging.getLogger(__name__)

SPAN = 210.0
"""Coordinates are scaled to [-SPAN, SPAN] on each axis (the spec's range)."""

METHOD = "pca"
FIT_SAMPLE = 10_000
"""The axes are fitted on at most this many vectors (an even stride), then every vector is
projected: a 100k-memory map costs what a 10k one does, plus one cheap matrix product."""


def project(vectors: np.ndarray, dims: int) -> np.ndarray:
    """Project row vectors onto their top ``dims`` principal axes, scaled to [-SPAN, SPAN].

    The axes come from a d x d covariance (384 x 384 for MiniLM) of at most FIT_SAMPLE vectors,
    then every vector is projected: 0.5 s for 100k vectors (measured), no extra dependency.
    """
    # One BLAS thread: the matrices are small, and on a busy machine a thread pool per core
    # made the 384 x 384 eigendecomposition take seconds instead of 50 ms (measured).
    with threadpool_limits(limits=1, user_api="blas"):
        return _project(vectors, dims)


def _project(vectors: np.ndarray, dims: int) -> np.ndarray:
    n = vectors.shape[0]
    if n == 0:
        return np.zeros((0, dims), dtype=np.float32)
    x = vectors.astype(np.float32, copy=False)
    x = x - x.mean(axis=0)
    if n == 1:
        out = np.zeros((1, dims))
    else:
        fit = x[:: max(1, n // FIT_SAMPLE)].astype(np.float64)
        cov = fit.T @ fit
        _vals, vecs = np.linalg.eigh(cov)
        axes = vecs[:, ::-1][:, :dims].astype(np.float32)
        out = (x @ axes).astype(np.float64)
        # eigh's sign is arbitrary: fix it so the same data always draws the same way round.
        signs = np.sign(out[np.abs(out).argmax(axis=0), range(out.shape[1])])
        out = out * np.where(signs == 0, 1.0, signs)
        if out.shape[1] < dims:  # fewer dimensions than asked (tiny models in tests)
            out = np.hstack([out, np.zeros((n, dims - out.shape[1]))])
    lo, hi = out.min(axis=0), out.max(axis=0)
    width = np.where(hi - lo > 0, hi - lo, 1.0)
    scaled: np.ndarray = ((out - lo) / width * 2 * SPAN - SPAN).astype(np.float32)
    return scaled


@dataclass
class _Job:
    dims: int
    count: int
    started: float = field(default_factory=time.monotonic)
    error: str | None = None


class ProjectionService:
    """Computes projections in the background and serves them from ``umap_cache``."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self._lock = threading.Lock()
        self._jobs: dict[int, _Job] = {}
        self._memo: dict[int, tuple[tuple[int, str], dict[str, Any]]] = {}  # dims -> ((count, cached_at), result)

    def embedded_count(self) -> int:
        """The cache key: embedded live memories (any change in it recomputes the map).

        Every map request asks, so it walks the partial (live, hashed) dedupe index, which holds
        the hash, instead of reading each live row: 50-90 ms at 100k memories instead of 0.45 s."""
        row = self.db.read(
            lambda c: c.execute(
                "SELECT COUNT(*) FROM memories m INDEXED BY idx_memories_content_hash_scope"
                " JOIN embeddings e ON e.content_hash = m.content_hash"
                " WHERE m.is_deleted = 0 AND m.content_hash IS NOT NULL"
            ).fetchone()
        )
        return int(row[0])

    def status(self) -> dict[str, Any]:
        """What ``/api/embeddings/status`` reports about the map: cached rows and running jobs."""
        rows = self.db.read(
            lambda c: c.execute("SELECT dimensions, embedding_count, cached_at FROM umap_cache").fetchall()
        )
        with self._lock:
            computing = sorted(d for d, j in self._jobs.items() if j.error is None)
            errors = {d: j.error for d, j in self._jobs.items() if j.error is not None}
        return {
            "cached": [{"dimensions": r[0], "embedding_count": r[1], "cached_at": r[2]} for r in rows],
            "computing": computing,
            "errors": errors,
        }

    def get(self, dims: int) -> dict[str, Any] | None:
        """The cached projection for ``dims`` if it matches the current count, else ``None``
        after making sure a background computation is running (the caller answers 202)."""
        count = self.embedded_count()
        row = self.db.read(
            lambda c: c.execute(
                "SELECT embedding_count, cached_at FROM umap_cache WHERE dimensions = ?", (dims,)
            ).fetchone()
        )
        if row is not None and int(row[0]) == count:
            return self._parsed(dims, (count, str(row[1])))
        with self._lock:
            job = self._jobs.get(dims)
            if job is not None and job.error is not None and job.count == count:
                raise RuntimeError(job.error)  # failed for this very data: say so, do not loop
            if job is None or job.error is not None:
                self._jobs[dims] = _Job(dims, count)
                threading.Thread(target=self._run, args=(dims,), name=f"projection-{dims}d", daemon=True).start()
        return None

    def _parsed(self, dims: int, key: tuple[int, str]) -> dict[str, Any]:
        """The cached row, parsed once per computation (10 MB of JSON for 100k points)."""
        with self._lock:
            memo = self._memo.get(dims)
        if memo is not None and memo[0] == key:
            return memo[1]
        raw = self.db.read(
            lambda c: c.execute("SELECT result_json FROM umap_cache WHERE dimensions = ?", (dims,)).fetchone()
        )
        result: dict[str, Any] = json.loads(raw[0])
        result["cached_at"] = key[1]
        with self._lock:
            self._memo[dims] = (key, result)
        return result

    def _run(self, dims: int) -> None:
        try:
            result = self._compute(dims)
            now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
            payload = json.dumps(result, separators=(",", ":"))

            def write(conn: Any) -> None:
                conn.execute(
                    "INSERT INTO umap_cache(dimensions, embedding_count, result_json, cached_at) VALUES (?, ?, ?, ?)"
                    " ON CONFLICT(dimensions) DO UPDATE SET embedding_count = excluded.embedding_count,"
                    " result_json = excluded.result_json, cached_at = excluded.cached_at",
                    (dims, result["embedding_count"], payload, now),
                )

            self.db.write(write)
            with self._lock:
                self._jobs.pop(dims, None)
        except Exception as exc:  # reported by the next request (and logged): never a silent stall
            log.exception("embedding projection (%dd) failed", dims)
            with self._lock:
                job = self._jobs.get(dims)
                if job is not None:
                    job.error = f"{type(exc).__name__}: {exc}"

    def _compute(self, dims: int) -> dict[str, Any]:
        started = time.perf_counter()

        def read(conn: Any) -> list[Any]:
            return list(
                conn.execute(
                    "SELECT m.id, m.type, m.project, m.source_type, m.who, e.vector, e.dimensions"
                    " FROM memories m JOIN embeddings e ON e.content_hash = m.content_hash"
                    " WHERE m.is_deleted = 0 ORDER BY m.seq"
                )
            )

        rows = self.db.read(read)
        # One model's vectors (a re-embed in flight leaves rows of another dimension).
        vectors, kept = vector_blob.decode_many([r[5] for r in rows], [int(r[6]) for r in rows])
        usable = [rows[i] for i in kept]
        if not usable:
            vectors = np.zeros((0, 1), dtype=np.float32)
        coords = project(vectors, dims)
        points = [
            {
                "id": r[0],
                "type": r[1],
                "project": r[2],
                "source": r[3] or r[4] or "unknown",
                "xyz": [round(float(v), 2) for v in coords[i]],
            }
            for i, r in enumerate(usable)
        ]
        return {
            "dimensions": dims,
            "method": METHOD,
            "embedding_count": len(rows),
            "took_ms": round((time.perf_counter() - started) * 1000, 1),
            "points": points,
        }


def visible_ids(db: Database, scope: ReadScope, decay_rate: float) -> set[str] | None:
    """The ids a scoped caller may see (``None``: everything, the unscoped case)."""
    if scope is UNSCOPED:
        return None
    where, params = MemoryFilter(scope=scope).sql(decay_rate)
    rows = db.read(lambda c: c.execute(f"SELECT m.id FROM memories m WHERE {where}", params).fetchall())
    return {r[0] for r in rows}


def sample(points: list[dict[str, Any]], limit: int) -> list[dict[str, Any]]:
    """At most ``limit`` points, an even stride through the list (stable across requests)."""
    if len(points) <= limit:
        return points
    step = len(points) / limit
    return [points[int(i * step)] for i in range(limit)]
