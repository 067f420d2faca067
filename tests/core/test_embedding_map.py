"""The embedding map's API: ``/api/embeddings/projection`` answers 202 while the projection is
computed in the background, then serves it from ``umap_cache`` until the number of embeddings
changes; ``/api/embeddings/status``; the projection itself (signet.embedding.projection)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np
from fastapi.testclient import TestClient

from signet.embedding.projection import FIT_SAMPLE, SPAN, project, sample
from signet.runtime import Runtime
from signet.workspace import Workspace
from tests.auth.conftest import bearer, token_for
from tests.conftest import StoreConnection

TEXTS = [
    "We use PostgreSQL for every new service",
    "Postgres is our relational database",
    "Deploys happen on Thursdays",
    "We ship to production every Thursday",
    "The user likes dark mode",
    "Dark themes are preferred in every editor",
]


def ready(api: TestClient, **params: Any) -> dict[str, Any]:
    """Ask until the projection is ready (202 until then), as the dashboard does."""
    deadline = time.monotonic() + 30
    while True:
        r = api.get("/api/embeddings/projection", params=params)
        if r.status_code == 200:
            body: dict[str, Any] = r.json()
            return body
        assert r.status_code == 202, r.text
        assert r.json()["status"] == "computing"
        assert time.monotonic() < deadline, "the projection never became ready"
        time.sleep(0.05)


def seed(api: TestClient, runtime: Runtime, texts: list[str]) -> list[str]:
    ids = [api.post("/api/memory/remember", json={"content": t, "project": "p"}).json()["id"] for t in texts]
    assert runtime.embeddings.wait_idle(60)
    return ids


def test_computing_then_cached_until_the_count_changes(api: TestClient, runtime: Runtime) -> None:
    ids = seed(api, runtime, TEXTS)
    first = api.get("/api/embeddings/projection")
    assert first.status_code == 202 and first.json() == {"status": "computing", "dimensions": 2, "embedding_count": 6}
    body = ready(api)
    assert body["status"] == "ready" and body["method"] == "pca" and body["embedding_count"] == 6
    assert body["total"] == body["returned"] == 6 and {p["id"] for p in body["points"]} == set(ids)
    for p in body["points"]:
        assert len(p["xyz"]) == 2 and all(-SPAN <= v <= SPAN for v in p["xyz"])
        m = api.get(f"/api/memory/{p['id']}").json()
        assert p["type"] == m["type"] and p["project"] == "p" and p["source"] == "unknown"
    # near-paraphrases land nearer each other than unrelated memories
    at = {p["id"]: np.array(p["xyz"]) for p in body["points"]}
    pg, pg2, deploy = at[ids[0]], at[ids[1]], at[ids[2]]
    assert np.linalg.norm(pg - pg2) < np.linalg.norm(pg - deploy)

    again = api.get("/api/embeddings/projection")
    assert again.status_code == 200 and again.json()["cached_at"] == body["cached_at"]  # from umap_cache
    with StoreConnection(runtime.workspace) as conn:
        rows = [tuple(r) for r in conn.execute("SELECT dimensions, embedding_count FROM umap_cache").fetchall()]
    assert rows == [(2, 6)]

    seed(api, runtime, ["Alice owns the billing service"])
    assert api.get("/api/embeddings/projection").status_code == 202  # the count changed: recomputed
    assert ready(api)["embedding_count"] == 7
    assert api.delete(f"/api/memory/{ids[0]}", params={"reason": "test"}).status_code == 200
    assert api.get("/api/embeddings/projection").status_code == 202  # a forgotten memory leaves the map
    after = ready(api)
    assert after["embedding_count"] == 6 and ids[0] not in {p["id"] for p in after["points"]}


def test_three_dimensions_down_sampling_and_status(api: TestClient, runtime: Runtime) -> None:
    seed(api, runtime, TEXTS)
    three = ready(api, dimensions=3, limit=4)
    assert three["dimensions"] == 3 and three["total"] == 6 and three["returned"] == 4
    assert all(len(p["xyz"]) == 3 for p in three["points"])
    st = api.get("/api/embeddings/status").json()
    assert st["state"] == "ready" and st["memories"] == st["embedded"] == 6 and st["coverage"] == 1.0
    assert st["pending"] == 0 and st["projection"]["cached"][0]["dimensions"] == 3


def test_hostile_parameters_are_4xx(api: TestClient) -> None:
    for params in ({"dimensions": 4}, {"dimensions": 1}, {"dimensions": "x"}, {"limit": 0}, {"limit": 10**9}):
        r = api.get("/api/embeddings/projection", params=params)
        assert r.status_code == 422 and "error" in r.json(), (params, r.text)


def test_an_empty_store_has_an_empty_map(api: TestClient) -> None:
    body = ready(api)
    assert body["points"] == [] and body["total"] == 0 and body["embedding_count"] == 0


def test_project_is_deterministic_scaled_and_handles_edge_cases() -> None:
    rng = np.random.default_rng(1)
    x = rng.normal(size=(50, 16)).astype(np.float32)
    a, b = project(x, 2), project(x.copy(), 2)
    assert a.shape == (50, 2) and np.array_equal(a, b)
    assert np.isclose(a.min(axis=0), -SPAN).all() and np.isclose(a.max(axis=0), SPAN).all()
    # the first axis carries the most variance: stretch one direction and it becomes x
    x[:, 5] *= 50
    stretched = project(x, 2)
    assert abs(np.corrcoef(stretched[:, 0], x[:, 5])[0, 1]) > 0.99
    assert project(np.zeros((0, 16), dtype=np.float32), 2).shape == (0, 2)
    assert project(np.ones((1, 16), dtype=np.float32), 3).shape == (1, 3)
    assert project(np.ones((5, 1), dtype=np.float32), 3).shape == (5, 3)  # fewer dimensions than asked


def test_big_maps_fit_on_a_sample_and_down_sample_evenly() -> None:
    rng = np.random.default_rng(2)
    centers = rng.normal(size=(5, 64)).astype(np.float32) * 4
    labels = rng.integers(0, 5, FIT_SAMPLE * 3)
    x = centers[labels] + rng.normal(size=(len(labels), 64)).astype(np.float32)
    started = time.perf_counter()
    out = project(x, 2)
    assert time.perf_counter() - started < 10
    # clusters stay apart: each cluster's spread is small next to the distance between centres
    means = np.array([out[labels == k].mean(axis=0) for k in range(5)])
    spread = max(out[labels == k].std(axis=0).max() for k in range(5))
    gaps = [np.linalg.norm(means[i] - means[j]) for i in range(5) for j in range(i + 1, 5)]
    assert sorted(gaps)[len(gaps) // 2] > spread
    points = [{"id": str(i)} for i in range(100)]
    assert [p["id"] for p in sample(points, 4)] == ["0", "25", "50", "75"]
    assert sample(points, 500) == points


def test_a_project_scoped_token_sees_only_its_project_on_the_map(
    make_workspace: Callable[..., Workspace], open_app: Callable[[Workspace], tuple[Runtime, TestClient]]
) -> None:
    ws = make_workspace(auth={"mode": "team"})
    rt, client = open_app(ws)
    admin = bearer(token_for(ws, "admin"))
    for text, proj in [
        ("Web deploys on Thursdays", "web"),
        ("Infra uses Postgres", "infra"),
        ("Web uses React", "web"),
    ]:
        assert (
            client.post("/api/memory/remember", json={"content": text, "project": proj}, headers=admin).status_code
            == 200
        )
    assert rt.embeddings.wait_idle(60)
    assert client.get("/api/embeddings/projection").status_code == 401  # no token, no map
    web = bearer(token_for(ws, "readonly", project="web"))
    deadline = time.monotonic() + 30
    while (r := client.get("/api/embeddings/projection", headers=web)).status_code == 202:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    body = r.json()
    assert body["embedding_count"] == 3 and body["total"] == 2 and {p["project"] for p in body["points"]} == {"web"}
    me = client.get("/api/auth/whoami", headers=web).json()
    assert me["permissions"] == ["recall"]  # what the dashboard shows: no write actions
    assert client.get("/api/auth/whoami").json()["permissions"] == []
    assert "local" in client.get("/api/auth/whoami", headers=admin).json()["permissions"]


def test_config_dry_run_validates_without_writing(api: TestClient, runtime: Runtime) -> None:
    path = runtime.workspace.config_path
    before = path.read_text()
    bad = api.post(
        "/api/config", json={"file": "agent.yaml", "content": before + "search:\n  alpha: 7\n", "dry_run": True}
    )
    assert bad.status_code == 400 and "search.alpha" in bad.json()["error"]
    good = api.post("/api/config", json={"file": "agent.yaml", "content": before + "# checked\n", "dry_run": True})
    assert good.status_code == 200 and good.json()["dry_run"] is True and good.json()["restart_required"] is False
    assert path.read_text() == before
    unparsable = api.post("/api/config", json={"file": "x.yaml", "content": "a: [", "dry_run": True})
    assert unparsable.status_code == 400 and "not valid YAML" in unparsable.json()["error"]
    local = set(api.get("/api/auth/whoami").json()["permissions"])
    assert {"local", "admin", "modify", "forget", "recover"} <= local  # a local caller may do everything
