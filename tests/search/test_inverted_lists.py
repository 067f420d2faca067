"""The vector index's inverted lists (signet.search.inverted): from ``lists_min_rows`` on a search
reads the cells near its query instead of every row, then re-scores exactly.

The data is anisotropic like real sentence embeddings (tests/search/test_coarse_stage.py).
Each check compares against the same rows in an exact index. The lists are approximate, so
the unfiltered checks bound the overlap with the exact top k; filters narrow enough for an
exact search over their rows must give exactly the exact answer.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np
import pytest

from signet.models import RecallRequest
from signet.search import vectors
from signet.search.vectors import VectorIndex, epoch
from signet.workspace import Workspace
from tests.conftest import start_runtime, write_config
from tests.search.test_coarse_stage import anisotropic
from tests.search.test_keyword_recall import seed

N = 24_000


def build(vecs: np.ndarray, *, lists: bool) -> VectorIndex:
    index = VectorIndex()
    index.coarse_min_rows = 2_000 if lists else 10**9
    index.lists_min_rows = 20_000 if lists else 10**9
    n = len(vecs)
    projects = ["small" if i % 10 == 0 else "big" for i in range(n)]
    created = [f"2024-{1 + i % 12:02d}-15T00:00:00+00:00" for i in range(n)]
    index.upsert_many([f"m{i}" for i in range(n)], vecs, projects, created)
    return index


def ids(hits: list[vectors.VectorHit]) -> list[str]:
    return [h.memory_id for h in hits]


@pytest.fixture(scope="module")
def pair() -> tuple[VectorIndex, VectorIndex, np.ndarray]:
    vecs = anisotropic(N, seed=11)
    return build(vecs, lists=True), build(vecs, lists=False), vecs


def test_lists_find_the_exact_top_k_with_exact_scores(pair: tuple[VectorIndex, VectorIndex, np.ndarray]) -> None:
    fast, exact, _ = pair
    assert fast.inverted_lists is not None and fast.inverted_lists == int(np.sqrt(N))
    assert exact.inverted_lists is None
    overlap = []
    for q in anisotropic(60, seed=12):
        a, b = fast.search(q, 10), exact.search(q, 10)
        overlap.append(len(set(ids(a)) & set(ids(b))) / 10)
        truth = {h.memory_id: h.score for h in exact.search(q, 400)}
        for h in a:  # every score is the exact cosine, and ranked by it
            if h.memory_id in truth:
                assert h.score == pytest.approx(truth[h.memory_id], abs=1e-5)
        assert [h.score for h in a] == sorted((h.score for h in a), reverse=True)
    assert float(np.mean(overlap)) >= 0.97, overlap


def test_a_filter_keeping_few_rows_is_searched_exactly(pair: tuple[VectorIndex, VectorIndex, np.ndarray]) -> None:
    fast, exact, _ = pair
    march = (epoch("2024-03-01T00:00:00+00:00"), epoch("2024-04-01T00:00:00+00:00"))
    for q in anisotropic(20, seed=13):
        assert ids(fast.search(q, 20, project="small")) == ids(exact.search(q, 20, project="small"))
        assert ids(fast.search(q, 20, created_between=march)) == ids(exact.search(q, 20, created_between=march))
        assert fast.search(q, 5, project="nowhere") == []


def test_a_wide_filter_probes_the_lists_and_keeps_to_the_filter(
    pair: tuple[VectorIndex, VectorIndex, np.ndarray], monkeypatch: pytest.MonkeyPatch
) -> None:
    fast, exact, _ = pair
    monkeypatch.setattr(vectors, "LISTS_EXACT_BELOW", 100)  # even "small" (2,400 rows) goes to the lists
    overlap = []
    for q in anisotropic(30, seed=14):
        got = fast.search(q, 10, project="small")
        assert got and all(int(h.memory_id[1:]) % 10 == 0 for h in got)
        overlap.append(len(set(ids(got)) & set(ids(exact.search(q, 10, project="small")))) / 10)
    # A tenth of the rows allowed: ten times the cells probed, so the filter is not starved.
    assert float(np.mean(overlap)) >= 0.95, overlap


def test_lists_follow_new_changed_and_removed_rows() -> None:
    vecs = anisotropic(N, seed=15)
    index = build(vecs, lists=True)
    # A memory like the others (a real store's new turn lies in the same directions as its old ones).
    q = vecs[7] + 0.05 * np.asarray(np.random.default_rng(16).standard_normal(vecs.shape[1]), dtype=np.float32)
    q /= np.linalg.norm(q)
    index.upsert("new", q, "big", None)  # a new row is added to the lists: it is the best match
    assert ids(index.search(q, 1)) == ["new"]
    index.upsert("m5", q, "big", None)  # a changed vector moves to its new cell
    assert set(ids(index.search(q, 2))) == {"new", "m5"}
    index.upsert("m5", -q, "big", None)  # and away again: its old entry does not linger
    assert ids(index.search(q, 2))[0] == "new" and "m5" not in ids(index.search(q, 50))
    index.remove("new")
    assert "new" not in ids(index.search(q, 50))
    index.upsert("new", q, "big", None)  # back after a removal
    assert ids(index.search(q, 1)) == ["new"]


def test_lists_need_no_coarse_projection_and_small_indexes_keep_none() -> None:
    index = build(anisotropic(5_000, seed=17), lists=True)  # under lists_min_rows: the coarse stage
    assert index.coarse_dims is not None and index.inverted_lists is None
    rng = np.random.default_rng(18)
    iso = rng.standard_normal((N, 384)).astype(np.float32)
    iso /= np.linalg.norm(iso, axis=1, keepdims=True)
    index = build(iso, lists=True)  # too isotropic for a projection (real turns are): lists all the same
    assert index.coarse_dims is None and index.inverted_lists is not None
    q = iso[123] + 0.05 * rng.standard_normal(384).astype(np.float32)
    assert ids(index.search(q / np.linalg.norm(q), 1)) == ["m123"]


def test_the_setting_puts_a_real_stores_recall_on_inverted_lists(make_workspace: Callable[..., Workspace]) -> None:
    """``search.vector_lists_min_rows``: a daemon's runtime over a store past it recalls through the
    lists (the real model, the real recall path), restarts onto them, and ``0`` turns them off."""
    ws = make_workspace(search={"vector_lists_min_rows": 40})
    rt = start_runtime(ws)
    try:
        seed(rt, 120)
        deadline = time.monotonic() + 120
        while len(rt.index) < 120 and time.monotonic() < deadline:  # the embedder's thread indexes them
            time.sleep(0.05)
        assert rt.index.inverted_lists is not None
        hits = rt.service.recall(RecallRequest(query="who went climbing at the gym?", limit=5)).results
        assert hits and "climbing" in hits[0].content
    finally:
        rt.stop()
    rt = start_runtime(ws)  # loaded at start: built once over every stored vector
    try:
        assert rt.index.inverted_lists == int(np.sqrt(120))
        first = rt.service.recall(RecallRequest(query="road trip to Woodhaven", limit=5)).results
        assert first and "Woodhaven" in first[0].content
    finally:
        rt.stop()
    write_config(ws, search={"vector_lists_min_rows": 0})
    rt = start_runtime(ws)
    try:
        assert rt.index.inverted_lists is None and rt.index.lists_min_rows > 10**15
    finally:
        rt.stop()
