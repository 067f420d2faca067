"""The benchmarks' text → vector cache changes no result: a second run answers every text from
the cache and ranks exactly as the first; vectors harvested from a store equal the model's."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from signet.bench import longmemeval
from signet.bench.harness import bench_runtime, wait_vectors
from signet.bench.vector_cache import CachedEmbedder, VectorCache, cache_file, harvest
from signet.models import RememberRequest
from signet.store.sqlite import sqlite3
from tests.bench.test_bench import _lme_file


def test_a_second_run_embeds_nothing_and_ranks_the_same(tmp_path: Path) -> None:
    data, cache_dir = _lme_file(tmp_path), tmp_path / "cache"
    first_out, second_out = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    first = longmemeval.run(data, out=first_out, vector_cache=cache_dir)
    (path,) = cache_dir.glob("*.sqlite")
    assert path == cache_file(cache_dir, "local:all-MiniLM-L6-v2-int8")
    cache = VectorCache(path)
    stored = len(cache)
    assert stored > 0
    second = longmemeval.run(data, out=second_out, vector_cache=cache_dir)
    assert len(cache) == stored  # nothing new was embedded
    assert first_out.read_text() == second_out.read_text()
    assert first["overall"] == second["overall"]
    cache.close()


def test_cached_vectors_equal_the_models_and_harvest_copies_a_store(tmp_path: Path) -> None:
    texts = ["user: we drove to Woodhaven on the road trip", "assistant: the scenery was lovely", "user: bye"]
    root = tmp_path / "ws"
    with bench_runtime("local", root=root) as rt:
        assert rt.embeddings.embedder is not None
        direct = rt.embeddings.embedder.embed(texts)
        cache = VectorCache(tmp_path / "c.sqlite")
        cached = CachedEmbedder(rt.embeddings.embedder, cache)
        assert np.array_equal(cached.embed(texts), direct) and cache.misses == 3
        assert np.array_equal(cached.embed(texts[::-1]), direct[::-1]) and cache.hits == 3
        rt.service.remember_batch([RememberRequest(content=t, project="p") for t in texts], changed_by="test")
        wait_vectors(rt)
        key = rt.embeddings.model_key
        db_path = rt.db.path
    fresh = VectorCache(tmp_path / "h.sqlite")
    assert harvest(Path(db_path), fresh, key) == 0  # stored in half precision: not the model's vectors
    # A store from before half precision held the model's float32 vectors: those are harvested.
    conn = sqlite3.connect(str(db_path))
    with conn:
        for text, vec in zip(texts, direct, strict=True):
            conn.execute(
                "UPDATE embeddings SET vector = ? WHERE content_hash = (SELECT content_hash FROM memories WHERE content = ?)",
                (np.asarray(vec, dtype="<f4").tobytes(), text),
            )
    conn.close()
    assert harvest(Path(db_path), fresh, key) == 3
    got = fresh.get_many(texts)
    assert all(g is not None for g in got)
    assert np.allclose(np.vstack([g for g in got if g is not None]), direct, atol=1e-6)
    assert harvest(Path(db_path), fresh, "local:another-model") == 0
