"""A persistent text → vector cache for the yardstick benchmarks (``--vector-cache DIR``).

Embedding is nearly all of a yardstick run's time: LongMemEval-S dev150 holds 67,860 distinct
turns of about 1,000 characters, four core-hours on a 2-core machine, while storing and
recalling them takes minutes. Vectors depend only on the model and the text, so a cache keyed
by both changes no result and lets a run stopped half-way resume where it was, and a change
to ranking be measured again in minutes. It is for benchmarks only: the daemon never uses it.

One SQLite file per model (``<provider>_<model>.sqlite``), keyed by the SHA-256 of the text;
float32 rows. :func:`harvest` fills it from a bench store's own ``embeddings`` table (a run
that was stopped keeps its temp workspace only if you copied it).
"""

from __future__ import annotations

import hashlib
import re
import sqlite3
import threading
from pathlib import Path

import numpy as np

from signet.embedding.base import Embedder, Vectors


def cache_file(directory: Path, model_key: str) -> Path:
    """The cache file of one model (``model_key`` as recorded per vector: ``provider:model``)."""
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", model_key).strip("_") or "model"
    return directory / f"{safe}.sqlite"


class VectorCache:
    """A thread-safe SQLite map from SHA-256(text) to a float32 vector."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._lock = threading.Lock()
        self._conn = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None)
        self._conn.execute("PRAGMA journal_mode = WAL")
        self._conn.execute("CREATE TABLE IF NOT EXISTS vectors (key BLOB PRIMARY KEY, vector BLOB NOT NULL)")
        self.hits = 0
        self.misses = 0

    @staticmethod
    def key(text: str) -> bytes:
        return hashlib.sha256(text.encode("utf-8")).digest()

    def get_many(self, texts: list[str]) -> list[np.ndarray | None]:
        keys = [self.key(t) for t in texts]
        found: dict[bytes, bytes] = {}
        with self._lock:
            for i in range(0, len(keys), 500):
                chunk = keys[i : i + 500]
                marks = ",".join("?" * len(chunk))
                found.update(self._conn.execute(f"SELECT key, vector FROM vectors WHERE key IN ({marks})", chunk))
        return [None if k not in found else np.frombuffer(found[k], dtype=np.float32) for k in keys]

    def put_many(self, texts: list[str], vectors: Vectors) -> None:
        rows = [(self.key(t), np.asarray(v, dtype=np.float32).tobytes()) for t, v in zip(texts, vectors, strict=True)]
        with self._lock:
            self._conn.execute("BEGIN")
            self._conn.executemany("INSERT OR IGNORE INTO vectors(key, vector) VALUES (?, ?)", rows)
            self._conn.execute("COMMIT")

    def __len__(self) -> int:
        with self._lock:
            return int(self._conn.execute("SELECT COUNT(*) FROM vectors").fetchone()[0])

    def close(self) -> None:
        with self._lock:
            self._conn.close()


class CachedEmbedder:
    """An :class:`Embedder` that answers from a :class:`VectorCache` and embeds only the rest."""

    def __init__(self, inner: Embedder, cache: VectorCache) -> None:
        self.inner = inner
        self.cache = cache
        self.provider = inner.provider
        self.model = inner.model
        self.backend_in_use = getattr(inner, "backend_in_use", None)

    @property
    def dimensions(self) -> int | None:
        return self.inner.dimensions

    def load(self) -> None:
        self.inner.load()

    def embed(self, texts: list[str]) -> Vectors:
        cached = self.cache.get_many(texts)
        missing = [i for i, v in enumerate(cached) if v is None]
        self.cache.hits += len(texts) - len(missing)
        self.cache.misses += len(missing)
        if missing:
            fresh = self.inner.embed([texts[i] for i in missing])
            self.cache.put_many([texts[i] for i in missing], fresh)
            for j, i in enumerate(missing):
                cached[i] = np.asarray(fresh[j], dtype=np.float32)
        return np.vstack([v for v in cached if v is not None]).astype(np.float32)


def harvest(db_path: Path, cache: VectorCache, model_key: str) -> int:
    """Copy a bench store's vectors of ``model_key`` into ``cache``; returns how many were new.

    Each stored vector belongs to a memory's text (``embeddings.content_hash`` =
    ``memories.content_hash``), and the embedder was given exactly that text. Only vectors
    stored at the model's precision (float32, by stores before signet.store.vector_blob): the
    cache holds what the model gave, and a half-precision copy is not that."""
    src = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
    try:
        rows = src.execute(
            "SELECT m.content, e.vector FROM embeddings e JOIN memories m ON m.content_hash = e.content_hash"
            " WHERE e.model = ? AND length(e.vector) = 4 * e.dimensions GROUP BY e.content_hash",
            (model_key,),
        ).fetchall()
    finally:
        src.close()
    before = len(cache)
    texts = [str(r[0]) for r in rows]
    if rows:
        cache.put_many(texts, np.vstack([np.frombuffer(r[1], dtype=np.float32) for r in rows]))
    return len(cache) - before
