"""A query that names a time draws candidates from that period (signet.search.recall).

Each leg keeps its usual best ``top_k`` and, when the query names a time, adds its best
``top_k`` among the memories created in that (widened) period. The tests set ``top_k`` so
small that the memory from the named month is in neither leg's overall pool: only the period
pool can bring it in, so each test fails without it.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
from fastapi.testclient import TestClient

from signet.daemon.app import create_app
from signet.search.vectors import VectorIndex, epoch
from signet.workspace import Workspace
from tests.conftest import start_runtime


def unit(*xs: float) -> Any:
    v = np.array(xs, dtype=np.float32)
    return v / np.linalg.norm(v)


def test_index_search_keeps_only_the_period_and_never_rows_without_a_time() -> None:
    index = VectorIndex(2)
    index.upsert_many(
        ["jan", "mar", "unknown", "naive"],
        np.stack([unit(1, 0), unit(1, 1), unit(1, 0), unit(1, 0.5)]),
        [None] * 4,
        ["2023-01-10T00:00:00+00:00", "2023-03-10T12:00:00.000000+00:00", None, "2023-03-11T00:00:00"],
    )
    q = unit(1, 0)
    assert [h.memory_id for h in index.search(q, 4)][:1] in (["jan"], ["unknown"])
    march = (epoch("2023-03-01T00:00:00+00:00"), epoch("2023-04-01T00:00:00+00:00"))
    # A stored time without an offset is UTC, like every timestamp the store writes.
    assert [h.memory_id for h in index.search(q, 4, created_between=march)] == ["naive", "mar"]
    assert index.search(q, 4, created_between=(march[1], march[1] + 1)) == []
    assert math.isnan(epoch(None)) and math.isnan(epoch("not a date"))
    # Re-indexing a memory (a new vector after an edit) keeps its time.
    index.upsert("mar", unit(0, 1), None, "2023-03-10T12:00:00+00:00")
    assert {h.memory_id for h in index.search(q, 4, created_between=march)} == {"naive", "mar"}


def test_index_reuses_a_query_product_only_while_the_vectors_are_unchanged() -> None:
    """One recall may search several times with one query (period pool, widened pools); the
    product is computed once, and any change to the vectors invalidates it."""
    index = VectorIndex(2)
    index.upsert_many(["a", "b"], np.stack([unit(1, 0), unit(0, 1)]), [None] * 2, [None] * 2)
    q = unit(1, 0.2)
    assert [h.memory_id for h in index.search(q, 1)] == ["a"]
    assert [h.memory_id for h in index.search(q, 1)] == ["a"]  # same query, same matrix
    index.upsert("b", unit(1, 0.3), None, None)  # b changes
    assert [h.memory_id for h in index.search(q, 1)] == ["b"]
    index.upsert("c", unit(1, 0.2), None, None)  # a new row grows the matrix
    assert [h.memory_id for h in index.search(q, 1)] == ["c"]
    index.remove("c")
    assert [h.memory_id for h in index.search(q, 1)] == ["b"]


def _client(ws: Workspace) -> tuple[Any, TestClient]:
    rt = start_runtime(ws)
    return rt, TestClient(create_app(rt, manage_runtime=False), raise_server_exceptions=False)


def _remember(api: TestClient, content: str, created_at: str) -> str:
    r = api.post("/api/memory/remember", json={"content": content, "created_at": created_at})
    assert r.status_code == 200, r.text
    return str(r.json()["id"])


def test_keyword_leg_draws_from_the_named_month(make_workspace: Callable[..., Workspace]) -> None:
    ws = make_workspace(embedding="none", search={"top_k": 1})
    rt, api = _client(ws)
    try:
        with api:
            for day in (3, 9, 17):
                _remember(
                    api, f"Hiking, hiking and more hiking on the ridge trail, day {day}", f"2023-01-{day:02d}T10:00:00Z"
                )
            march = _remember(api, "Went hiking once with my sister", "2023-03-12T10:00:00Z")
            body = api.post("/api/memory/recall", json={"query": "hiking in March 2023", "limit": 1}).json()
            assert [r["id"] for r in body["results"]] == [march], body
            # Without a named time the best keyword match wins, as before.
            body = api.post("/api/memory/recall", json={"query": "hiking", "limit": 1}).json()
            assert body["results"][0]["id"] != march
    finally:
        rt.stop()


def test_vector_leg_draws_from_the_named_month(make_workspace: Callable[..., Workspace]) -> None:
    ws = make_workspace(search={"top_k": 1})
    rt, api = _client(ws)
    try:
        with api:
            # Both January memories are nearer the query than the March one (cosine 0.49 and
            # 0.37 against 0.35 with the bundled model), so the overall pool of two holds only them.
            for i, text in enumerate(
                ("Trekking over the mountain pass all weekend", "Camping trip by the lake with the kids")
            ):
                _remember(api, text, f"2023-01-{5 + i:02d}T10:00:00Z")
            march = _remember(api, "We took a walk along the river in the park", "2023-03-14T10:00:00Z")
            rt.embeddings.wait_idle(timeout=60)
            # No query word is in any memory: the keyword leg is empty, the vector leg decides.
            body = api.post(
                "/api/memory/recall", json={"query": "outdoor excursions during March 2023", "limit": 2}
            ).json()
            assert body["method"] == "hybrid", body
            assert body["results"][0]["id"] == march, body
    finally:
        rt.stop()
    # After a restart the index is loaded from the store, times included.
    rt, api = _client(ws)
    try:
        with api:
            body = api.post(
                "/api/memory/recall", json={"query": "outdoor excursions during March 2023", "limit": 2}
            ).json()
            assert body["results"][0]["id"] == march, body
    finally:
        rt.stop()


def test_since_and_until_filters_keep_their_edges_in_both_legs(make_workspace: Callable[..., Workspace]) -> None:
    """The engines take their top k inside the filter's period (signet.search.recall.created_bounds)
    instead of widening until enough survive: a memory created exactly at ``since`` or at
    ``until`` is still found (the filter is inclusive), one a millisecond outside is not."""
    from signet.search.recall import created_bounds
    from signet.store.filters import MemoryFilter

    assert created_bounds(MemoryFilter()) is None
    ws = make_workspace(search={"top_k": 2})
    rt, api = _client(ws)
    try:
        with api:
            for day in range(1, 29):  # many better matches outside the period
                _remember(
                    api, f"Deploy the billing service to production, attempt {day}", f"2023-02-{day:02d}T09:00:00Z"
                )
            first = _remember(api, "Deploy billing once more", "2023-03-01T10:00:00.000Z")
            last = _remember(api, "Billing deploy again", "2023-03-02T10:00:00.000Z")
            _remember(api, "Billing deploy after the period", "2023-03-02T10:00:00.001Z")
            rt.embeddings.wait_idle(timeout=60)
            period = {"since": "2023-03-01T10:00:00.000Z", "until": "2023-03-02T10:00:00.000Z"}
            for alpha in (0.0, 0.5, 1.0):
                body = api.post(
                    "/api/memory/recall", json={"query": "deploy billing", "limit": 5, "alpha": alpha, **period}
                ).json()
                assert {r["id"] for r in body["results"]} == {first, last}, (alpha, body)
    finally:
        rt.stop()
