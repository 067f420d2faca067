"""The vector index's coarse stage (signet.search.vectors): above ``coarse_min_rows`` a search
scores a principal-direction projection first and re-scores the best rows exactly.

The data is anisotropic like real sentence embeddings (a few dozen latent directions plus
noise), so the projection keeps the ranking; isotropic data must switch the stage off.
Every check compares against the same index with the stage disabled (exact search).
"""

from __future__ import annotations

import numpy as np

from signet.search.vectors import VectorIndex, epoch

DIMS = 384


def anisotropic(n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    latent = rng.standard_normal((n, 24)).astype(np.float32) * np.linspace(3.0, 0.5, 24, dtype=np.float32)
    mixing = rng.standard_normal((24, DIMS)).astype(np.float32)
    x = latent @ mixing + 0.15 * rng.standard_normal((n, DIMS)).astype(np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    return x


def build(vectors: np.ndarray, min_rows: int) -> VectorIndex:
    index = VectorIndex()
    index.coarse_min_rows = min_rows
    n = len(vectors)
    projects = ["p0" if i % 5 == 0 else "p1" for i in range(n)]
    created = [f"2024-{1 + i % 12:02d}-15T00:00:00+00:00" for i in range(n)]
    index.upsert_many([f"m{i}" for i in range(n)], vectors, projects, created)
    return index


def ids(hits: list) -> list[str]:  # type: ignore[type-arg]
    return [h.memory_id for h in hits]


def test_coarse_search_returns_the_exact_ranking_and_scores() -> None:
    vecs = anisotropic(6000, seed=1)
    fast, exact = build(vecs, 2000), build(vecs, 10**9)
    assert fast.coarse_dims is not None and fast.coarse_dims <= DIMS // 3
    assert exact.coarse_dims is None
    queries = anisotropic(40, seed=2)
    march = (epoch("2024-03-01T00:00:00+00:00"), epoch("2024-04-01T00:00:00+00:00"))
    for q in queries:
        a, b = fast.search(q, 50), exact.search(q, 50)
        assert ids(a) == ids(b)
        assert np.allclose([h.score for h in a], [h.score for h in b], atol=1e-5)  # exact cosines
        assert ids(fast.search(q, 20, project="p0")) == ids(exact.search(q, 20, project="p0"))
        assert ids(fast.search(q, 20, created_between=march)) == ids(exact.search(q, 20, created_between=march))


def test_coarse_rows_follow_upserts_and_removals_and_refit_as_the_index_grows() -> None:
    vecs = anisotropic(3000, seed=3)
    index = build(vecs, 2000)
    assert index.coarse_dims is not None
    q = anisotropic(1, seed=4)[0]
    index.upsert("new", q, "p1", None)  # its coarse row must be written: it is the best match
    assert ids(index.search(q, 1)) == ["new"]
    index.upsert("m7", q, "p1", None)  # a changed vector too
    assert set(ids(index.search(q, 2))) == {"new", "m7"}
    index.remove("new")
    assert ids(index.search(q, 1)) == ["m7"]
    fitted = index._fitted_at
    more = anisotropic(3500, seed=5)
    index.upsert_many([f"x{i}" for i in range(len(more))], more, ["p1"] * len(more), [None] * len(more))
    assert index._fitted_at > fitted  # the index doubled: the projection was refitted
    exact = VectorIndex()
    exact.coarse_min_rows = 10**9
    every = np.concatenate([vecs, more])
    exact.upsert_many(
        [f"m{i}" for i in range(len(vecs))] + [f"x{i}" for i in range(len(more))],
        every,
        ["p1"] * len(every),
        [None] * len(every),
    )
    exact.upsert("m7", q, "p1", None)
    for probe in anisotropic(20, seed=6):
        assert ids(index.search(probe, 30)) == ids(exact.search(probe, 30))


def test_isotropic_vectors_keep_every_search_exact() -> None:
    rng = np.random.default_rng(7)
    vecs = rng.standard_normal((2500, DIMS)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    index = build(vecs, 2000)
    assert index.coarse_dims is None  # 95% of the energy needs far more than a third of the dims
    assert ids(index.search(vecs[3], 1)) == ["m3"]
