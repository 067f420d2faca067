"""remember / recall / modify / forget / recover / history over the real app, real embedder,
on both stores: the workspace's SQLite file and PostgreSQL (docs/team.md; a throwaway
PostgreSQL 15 cluster, tests/pgcluster.py)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from signet.runtime import Runtime
from signet.store.backend import StorageBackend
from signet.workspace import Workspace
from tests import pgcluster
from tests.conftest import start_runtime


@pytest.fixture(params=["sqlite", "postgres"])
def storage(request: pytest.FixtureRequest) -> StorageBackend | None:
    """The store under test: None for the workspace's SQLite file, else a PostgreSQL store on
    a fresh database of the session's cluster."""
    if request.param == "sqlite":
        return None
    from signet.store.pg_url import resolve
    from signet.store.postgres import PostgresDatabase

    try:
        cluster = pgcluster.shared("debian15")
    except pgcluster.Unavailable as exc:
        pytest.skip(f"PostgreSQL unavailable: {exc}")
    return PostgresDatabase(resolve(cluster.new_database(), "env:SIGNET_TEST_NO_SUCH_VAR"))


@pytest.fixture
def runtime(workspace: Workspace, storage: StorageBackend | None) -> Iterator[Runtime]:
    rt = start_runtime(workspace, storage=storage)
    try:
        yield rt
    finally:
        rt.stop()


def remember(api: TestClient, content: str, **kw: Any) -> dict[str, Any]:
    r = api.post("/api/memory/remember", json={"content": content, **kw})
    assert r.status_code == 200, r.text
    return r.json()


def recall(api: TestClient, query: str, **kw: Any) -> dict[str, Any]:
    r = api.post("/api/memory/recall", json={"query": query, **kw})
    assert r.status_code == 200, r.text
    return r.json()


CORPUS = [
    "The user prefers PostgreSQL over MySQL for new projects.",
    "Deployments go out every Thursday afternoon after the QA sign-off.",
    "Alice's cat is called Miso and is afraid of the vacuum cleaner.",
    "The CI pipeline caches pip wheels in a shared volume to save time.",
    "Bob is allergic to peanuts, so team lunches avoid Thai food.",
    "The staging cluster runs in eu-west-1 with three worker nodes.",
]


def seed(api: TestClient, runtime: Runtime) -> dict[str, str]:
    ids = {c: remember(api, c)["id"] for c in CORPUS}
    assert runtime.embeddings.wait_idle(60)
    return ids


def test_paraphrase_with_no_shared_words_ranks_right_memory_first(api: TestClient, runtime: Runtime) -> None:
    ids = seed(api, runtime)
    out = recall(api, "Which relational database engine should be picked?")
    assert out["method"] == "hybrid" and out["vector_search"]["available"] is True
    assert out["results"][0]["id"] == ids[CORPUS[0]]
    out = recall(api, "pet feline scared of household appliances")
    assert out["results"][0]["id"] == ids[CORPUS[2]]
    assert out["results"][0]["source"] in ("vector", "hybrid")


def test_keyword_recall_finds_exact_terms(api: TestClient, runtime: Runtime) -> None:
    ids = seed(api, runtime)
    out = recall(api, "eu-west-1")
    assert out["results"][0]["id"] == ids[CORPUS[5]]
    assert out["results"][0]["fts_score"] is not None


def test_memory_is_keyword_searchable_before_its_embedding(workspace: Any, storage: StorageBackend | None) -> None:
    # provider 'none': no vectors at all; recall must say so, and still find by keyword.
    from tests.conftest import write_config

    write_config(workspace, embedding={"provider": "none"})
    rt = start_runtime(workspace, storage=storage)
    try:
        from signet.daemon.app import create_app

        with TestClient(create_app(rt, manage_runtime=False)) as c:
            remember(c, "Grafana dashboards live in the observability repo")
            out = recall(c, "grafana dashboards")
            assert out["results"] and out["method"] == "fts"
            assert out["vector_search"]["available"] is False
            assert "none" in out["vector_search"]["reason"]
            status = c.get("/api/status").json()
            assert status["vector_search"]["available"] is False
            assert any("VECTOR SEARCH IS OFF" in w for w in status["warnings"])
            assert status["status"] == "degraded"
    finally:
        rt.stop()


def test_dedup_returns_existing_id(api: TestClient) -> None:
    a = remember(api, "Use ruff for linting.")
    b = remember(api, "  use RUFF   for linting!!  ")
    assert b["deduped"] is True and b["id"] == a["id"]
    assert api.get("/api/memories").json()["total"] == 1


def test_prefixes_and_type_inference(api: TestClient) -> None:
    m = remember(api, "critical: [auth,security]: never expose tokens in logs")
    assert m["pinned"] is True and m["importance"] == 1.0
    assert m["tags"] == ["auth", "security"]
    assert m["content"] == "never expose tokens in logs"
    assert m["type"] == "rule"
    assert remember(api, "We decided to ship on Fridays")["type"] == "decision"
    assert remember(api, "Plain statement about widgets")["type"] == "fact"
    assert remember(api, "She likes tea", type="semantic")["type"] == "semantic"
    assert remember(api, "explicit default importance")["importance"] == 0.8


def test_filters(api: TestClient, runtime: Runtime) -> None:
    remember(api, "alpha project uses kafka", project="alpha", tags=["infra"], who="alice")
    remember(api, "beta project uses kafka too", project="beta", tags=["infra", "queue"], who="bob")
    remember(api, "kafka retention is seven days", project="alpha", created_at="2020-01-01T00:00:00Z")
    runtime.embeddings.wait_idle(60)
    assert {r["project"] for r in recall(api, "kafka", project="alpha")["results"]} == {"alpha"}
    assert [r["who"] for r in recall(api, "kafka", who="bob")["results"]] == ["bob"]
    assert len(recall(api, "kafka", tags=["infra", "queue"])["results"]) == 1
    old = recall(api, "kafka", until="2021-01-01T00:00:00Z")["results"]
    assert [r["content"] for r in old] == ["kafka retention is seven days"]
    assert all(r["created_at"] >= "2021" for r in recall(api, "kafka", since="2021-01-01T00:00:00Z")["results"])
    assert recall(api, "kafka", pinned=True)["results"] == []


def test_modify_versions_history_and_reembed(api: TestClient, runtime: Runtime) -> None:
    mid = remember(api, "The office wifi password rotates monthly")["id"]
    other = remember(api, "Lunch is at noon")["id"]
    runtime.embeddings.wait_idle(60)
    r = api.post(
        "/api/memory/modify", json={"patches": [{"id": mid, "content": "The office wifi password rotates weekly"}]}
    )
    assert r.status_code == 400 and "reason" in r.json()["error"]
    r = api.post(
        "/api/memory/modify",
        json={
            "reason": "policy changed",
            "patches": [
                {"id": mid, "content": "The office wifi password rotates weekly", "if_version": 1},
                {"id": other, "content": "The office wifi password rotates weekly"},
                {"id": "nope", "importance": 0.1},
                {"id": other, "importance": 0.3, "if_version": 7},
            ],
        },
    )
    assert r.status_code == 200, r.text
    res = r.json()["results"]
    assert res[0]["status"] == "updated" and res[0]["new_version"] == 2 and res[0]["content_changed"]
    assert res[0]["embedded"] is True
    assert res[1]["status"] == "duplicate" and res[1]["duplicate_memory_id"] == mid
    assert res[2]["status"] == "not_found"
    assert res[3]["status"] == "version_conflict" and res[3]["current_version"] == 1
    # the new content is what vector search sees now
    top = recall(api, "how often does the wireless passphrase change")["results"][0]
    assert top["id"] == mid and "weekly" in top["content"]
    # PATCH with a stale version -> 409 version_conflict
    r = api.patch(f"/api/memory/{mid}", json={"importance": 0.2, "reason": "x", "if_version": 1})
    assert r.status_code == 409 and r.json()["code"] == "version_conflict"
    r = api.patch(f"/api/memory/{mid}", json={"importance": 0.2, "reason": "less important", "if_version": 2})
    assert r.status_code == 200 and r.json()["new_version"] == 3
    r = api.patch(f"/api/memory/{other}", json={"content": "the office wifi password rotates weekly.", "reason": "dup"})
    assert r.status_code == 409 and r.json()["code"] == "duplicate" and r.json()["duplicate_memory_id"] == mid
    assert api.patch("/api/memory/missing", json={"importance": 0.2, "reason": "x"}).status_code == 404
    hist = api.get(f"/api/memory/{mid}/history").json()["events"]
    assert [e["event"] for e in hist] == ["created", "modified", "modified"]
    assert hist[1]["old_content"] == "The office wifi password rotates monthly"
    assert hist[1]["reason"] == "policy changed"
    assert hist[2]["metadata"]["previous"] == {"importance": 0.8}
    mem = api.get(f"/api/memory/{mid}").json()
    assert mem["version"] == 3 and mem["importance"] == 0.2


def test_forget_preview_execute_recover(api: TestClient, runtime: Runtime) -> None:
    ids = [remember(api, f"temporary note number {i} about the release", tags=["tmp"])["id"] for i in range(4)]
    keep = remember(api, "permanent note")["id"]
    assert api.post("/api/memory/forget", json={"mode": "execute", "reason": "x"}).status_code == 400
    prev = api.post("/api/memory/forget", json={"tags": ["tmp"]}).json()
    assert prev["mode"] == "preview" and prev["count"] == 4 and set(c["id"] for c in prev["candidates"]) == set(ids)
    assert api.get(f"/api/memory/{ids[0]}").json()["is_deleted"] is False  # preview wrote nothing
    r = api.post("/api/memory/forget", json={"tags": ["tmp"], "mode": "execute"})
    assert r.status_code == 400 and "reason" in r.json()["error"]
    r = api.post(
        "/api/memory/forget", json={"tags": ["tmp"], "mode": "execute", "reason": "cleanup", "confirm_token": "wrong"}
    )
    assert r.status_code == 400 and r.json()["code"] == "confirm_token_mismatch"
    r = api.post(
        "/api/memory/forget",
        json={"tags": ["tmp"], "mode": "execute", "reason": "cleanup", "confirm_token": prev["confirm_token"]},
    )
    assert r.status_code == 200 and sorted(r.json()["deleted"]) == sorted(ids)
    assert api.get("/api/memories").json()["total"] == 1
    assert all(x["id"] == keep for x in recall(api, "temporary note release", min_score=0.0)["results"])
    # recover: not_deleted, version_conflict, then success
    r = api.post(f"/api/memory/{keep}/recover", json={"reason": "oops"})
    assert r.status_code == 409 and r.json()["code"] == "not_deleted"
    r = api.post(f"/api/memory/{ids[0]}/recover", json={"reason": "oops", "if_version": 1})
    assert r.status_code == 409 and r.json()["code"] == "version_conflict"
    r = api.post(f"/api/memory/{ids[0]}/recover", json={"reason": "oops", "if_version": 2})
    assert r.status_code == 200 and r.json() == {
        "id": ids[0],
        "status": "recovered",
        "current_version": 2,
        "new_version": 3,
    }
    runtime.embeddings.wait_idle(60)
    assert recall(api, "temporary note number 0")["results"][0]["id"] == ids[0]
    events = [e["event"] for e in api.get(f"/api/memory/{ids[0]}/history").json()["events"]]
    assert events == ["created", "deleted", "recovered"]
    assert api.post("/api/memory/missing/recover", json={"reason": "x"}).status_code == 404


def test_large_forget_needs_confirm_token(make_workspace: Any, storage: StorageBackend | None) -> None:
    ws = make_workspace(embedding="none", memory={"forget_confirm_threshold": 2})
    rt = start_runtime(ws, storage=storage)
    try:
        from signet.daemon.app import create_app

        with TestClient(create_app(rt, manage_runtime=False)) as c:
            for i in range(3):
                remember(c, f"bulk item {i}", project="p")
            r = c.post("/api/memory/forget", json={"project": "p", "mode": "execute", "reason": "bulk"})
            assert r.status_code == 400 and r.json()["code"] == "confirm_token_required"
            token = c.post("/api/memory/forget", json={"project": "p"}).json()["confirm_token"]
            r = c.post(
                "/api/memory/forget", json={"project": "p", "mode": "execute", "reason": "bulk", "confirm_token": token}
            )
            assert r.json()["count"] == 3
    finally:
        rt.stop()


def test_retention_expired(make_workspace: Any, storage: StorageBackend | None) -> None:
    ws = make_workspace(embedding="none", retention={"tombstone_days": 0})
    rt = start_runtime(ws, storage=storage)
    try:
        from signet.daemon.app import create_app

        with TestClient(create_app(rt, manage_runtime=False)) as c:
            mid = remember(c, "short lived")["id"]
            assert c.delete(f"/api/memory/{mid}", params={"reason": "gone"}).status_code == 200
            r = c.post(f"/api/memory/{mid}/recover", json={"reason": "back"})
            assert r.status_code == 409 and r.json()["code"] == "retention_expired"
    finally:
        rt.stop()


def test_delete_version_guard_and_hard_delete(api: TestClient) -> None:
    mid = remember(api, "deletable")["id"]
    r = api.delete(f"/api/memory/{mid}", params={"reason": "x", "if_version": 5})
    assert r.status_code == 409 and r.json()["code"] == "version_conflict"
    assert api.delete(f"/api/memory/{mid}").status_code == 422  # reason required
    r = api.delete(f"/api/memory/{mid}", params={"reason": "x", "force": True})
    assert r.status_code == 200 and r.json()["hard_deleted"] is True
    assert api.get(f"/api/memory/{mid}").status_code == 404
    events = api.get(f"/api/memory/{mid}/history").json()["events"]
    assert events[-1]["event"] == "deleted" and events[-1]["metadata"]["hard"] is True
    assert api.delete("/api/memory/unknown", params={"reason": "x"}).status_code == 404


def test_list_pagination_similar_and_export(api: TestClient, runtime: Runtime) -> None:
    ids = seed(api, runtime)
    page1 = api.get("/api/memories", params={"limit": 4}).json()
    page2 = api.get("/api/memories", params={"limit": 4, "offset": 4}).json()
    assert page1["total"] == len(CORPUS) and len(page1["items"]) == 4 and len(page2["items"]) == 2
    assert not {m["id"] for m in page1["items"]} & {m["id"] for m in page2["items"]}
    sim = api.get("/memory/similar", params={"id": ids[CORPUS[0]], "limit": 3}).json()
    assert len(sim["results"]) == 3 and ids[CORPUS[0]] not in [r["id"] for r in sim["results"]]
    assert api.get("/memory/similar", params={"id": "nope"}).status_code == 404
    exp = api.get("/api/embeddings", params={"vectors": True, "limit": 2}).json()
    assert exp["total"] == len(CORPUS) and len(exp["items"][0]["vector"]) == 384
    assert api.get("/api/embeddings").json()["items"][0]["vector"] is None
    legacy = api.get("/memory/search", params={"q": "peanuts"}).json()
    assert legacy["results"][0]["id"] == ids[CORPUS[4]] and legacy["results"][0]["source"] == "fts"


def test_recall_tracks_access_and_decay(api: TestClient, runtime: Runtime) -> None:
    mid = remember(api, "Access tracked memory about zebras", importance=0.5)["id"]
    recall(api, "zebras")
    runtime.db.write(lambda c: None)  # flush queued access-tracking writes
    m = api.get(f"/api/memory/{mid}").json()
    assert m["access_count"] == 1 and m["last_accessed"] is not None
    runtime.db.write(
        lambda c: c.execute("UPDATE memories SET last_accessed = '2000-01-01T00:00:00+00:00' WHERE id = ?", (mid,))
    )
    m = api.get(f"/api/memory/{mid}").json()
    assert m["importance"] == 0.5 and m["effective_importance"] < 0.01
    assert recall(api, "zebras", importance_min=0.1, track_access=False)["results"] == []


def test_batch_remember_is_atomic(api: TestClient) -> None:
    r = api.post(
        "/api/memory/remember/batch", json={"items": [{"content": "one"}, {"content": "two"}, {"content": "one"}]}
    )
    assert r.status_code == 200 and r.json()["created"] == 2 and r.json()["deduped"] == 1
    r = api.post("/api/memory/remember/batch", json={"items": [{"content": "three"}, {"content": ""}]})
    assert r.status_code == 422
    assert api.get("/api/memories").json()["total"] == 2


def test_a_date_in_the_query_prefers_memories_from_then(api: TestClient, runtime: Runtime) -> None:
    """Same words, different months: the question's own date decides (signet.search.timeframe)."""
    march = remember(
        api,
        "Jolene: I've been working on a robotics project for my engineering class.",
        who="Jolene",
        created_at="2023-03-02T10:00:00Z",
    )["id"]
    august = remember(
        api,
        "Jolene: I've been working on a solar energy project for the community.",
        who="Jolene",
        created_at="2023-08-10T10:00:00Z",
    )["id"]
    assert runtime.embeddings.wait_idle(60)
    first = [
        recall(api, f"What project was Jolene working on in {month} 2023?")["results"][0]["id"]
        for month in ("March", "August")
    ]
    assert first == [march, august]
    # Without a date the two stay in their plain order, whichever it is: the nudge made the difference.
    plain = [r["id"] for r in recall(api, "What project was Jolene working on?")["results"][:2]]
    assert set(plain) == {march, august}


def test_dedupe_is_per_project_and_moves_keep_it(api: TestClient) -> None:
    """The same text in two projects is two memories (a project-scoped recall must see its own);
    modify and recover refuse to make two live copies in one scope (migration 8)."""
    a = remember(api, "Run the migrations before the deploy.", project="alpha")
    b = remember(api, "Run the migrations before the deploy.", project="beta")
    assert b["deduped"] is False and b["id"] != a["id"]
    assert remember(api, "run the migrations before the deploy", project="beta")["id"] == b["id"]
    out = recall(api, "migrations deploy", project="beta")
    assert [r["id"] for r in out["results"]] == [b["id"]]
    moved = api.patch(f"/api/memory/{b['id']}", json={"project": "alpha", "reason": "move"})
    assert moved.status_code == 409 and a["id"] in moved.text, moved.text
    assert api.delete(f"/api/memory/{b['id']}", params={"reason": "test"}).status_code == 200
    c = remember(api, "Run the migrations before the deploy.", project="beta")
    assert c["deduped"] is False
    r = api.post(f"/api/memory/{b['id']}/recover", json={"reason": "undo"})
    assert r.status_code == 409 and c["id"] in r.text


def test_camel_case_input_is_accepted_and_answers_are_snake_case(api: TestClient) -> None:
    """One casing out (snake_case); the spec's camelCase names are accepted in."""
    mid = remember(api, "the staging cluster runs on three nodes")["id"]
    r = api.patch(
        f"/api/memory/{mid}",
        json={"content": "the staging cluster runs on five nodes", "reason": "grew", "ifVersion": 1},
    )
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["current_version"] == 1 and body["new_version"] == 2 and body["content_changed"] is True
    assert not [k for k in body if any(c.isupper() for c in k)]
    stale = api.patch(f"/api/memory/{mid}", json={"content": "four nodes", "reason": "x", "if_version": 1})
    assert stale.status_code == 409 and stale.json()["current_version"] == 2
    typo = api.patch(f"/api/memory/{mid}", json={"content": "x", "reason": "x", "ifVersoin": 2})
    assert typo.status_code == 422 and "ifVersoin" in typo.text
