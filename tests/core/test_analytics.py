"""Analytics: usage counters, the error ring, latency histograms, /metrics, memory safety,
continuity and feature flags, over the real app and store (docs/operations.md)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import pytest
from fastapi.testclient import TestClient
from prometheus_client.parser import text_string_to_metric_families
from starlette.types import Receive, Scope, Send

from signet.daemon.analytics_middleware import AnalyticsMiddleware, classify
from signet.daemon.app import create_app
from signet.daemon.errors import CatchAll
from signet.ops.analytics import ERROR_CODES, Analytics, LatencyHistogram, latency_snapshot
from signet.runtime import Runtime
from signet.workspace import Workspace
from tests.auth.conftest import bearer, configure, token_for
from tests.conftest import DaemonProcess, StoreConnection, start_runtime, write_config

Client = Callable[..., tuple[Runtime, TestClient]]


@pytest.fixture
def client(
    make_workspace: Callable[..., Workspace], open_app: Callable[[Workspace], tuple[Runtime, TestClient]]
) -> Client:
    """Factory: a started runtime without an embedder (fast) and a client over its real app."""

    def make(**sections: Any) -> tuple[Runtime, TestClient]:
        return open_app(make_workspace(embedding="none", **sections))

    return make


def remember(api: TestClient, content: str, **kw: Any) -> str:
    r = api.post("/api/memory/remember", json={"content": content, **kw})
    assert r.status_code == 200, r.text
    return str(r.json()["id"])


# -- the pure parts --------------------------------------------------------------------------


def test_percentiles_are_nearest_rank_over_the_window() -> None:
    h = LatencyHistogram(window=100)
    for ms in range(1, 101):  # 1..100
        h.observe(float(ms))
    snap = latency_snapshot(h.count, h.total_ms, h.samples())
    assert (snap["p50"], snap["p95"], snap["p99"], snap["count"], snap["mean"]) == (50, 95, 99, 100, 50.5)
    for _ in range(100):  # the window now holds only 1000s; count and mean keep everything
        h.observe(1000.0)
    snap = latency_snapshot(h.count, h.total_ms, h.samples())
    assert snap["p50"] == 1000 and snap["window"] == 100 and snap["count"] == 200
    assert snap["mean"] == pytest.approx((5050 + 100_000) / 200)
    assert sum(h.buckets) == 200 and h.buckets[-1] == 0  # 1000 ms is within the 1 s bucket, none in +Inf


def test_the_error_ring_keeps_the_last_500_and_counts_all() -> None:
    a = Analytics()
    for i in range(520):
        a.record_error("MUTATION_CONFLICT" if i % 2 else "EMBEDDING_TIMEOUT", f"error {i}")
    errors = a.errors(limit=500)
    assert len(errors) == 500
    assert errors[0]["message"] == "error 519" and errors[-1]["message"] == "error 20"  # oldest 20 evicted
    s = a.error_summary()
    assert s["total"] == 520 and s["buffered"] == 500 and s["capacity"] == 500
    assert s["by_code"] == {"EMBEDDING_TIMEOUT": 260, "MUTATION_CONFLICT": 260}
    assert s["by_stage"] == {"embedding": 260, "mutation": 260}
    assert [e["code"] for e in a.errors(stage="embedding", limit=3)] == ["EMBEDDING_TIMEOUT"] * 3
    assert a.errors(since=time.time() + 60) == []


def test_actors_are_bounded() -> None:
    a = Analytics(max_actors=3)
    for i in range(10):
        a.record_request("POST /api/memory/recall", "recall", f"agent-{i}", 200, 1.0)
    actors = a.usage()["actors"]
    assert len(actors) == 4 and actors["(other)"]["recall"] == 7


def test_routes_are_templates_and_unknown_paths_share_one_row() -> None:
    assert classify("GET", "/api/memory/0123abcd") == ("GET /api/memory/{memory_id}", "recall")
    assert classify("PATCH", "/api/memory/x") == ("PATCH /api/memory/{memory_id}", "mutate")
    assert classify("POST", "/api/memory/remember") == ("POST /api/memory/remember", "remember")
    assert classify("GET", "/api/diagnostics") == ("GET /api/diagnostics", "other")
    assert classify("POST", "/mcp")[1] == "other"  # its tool calls re-enter and are counted themselves
    assert classify("GET", "/no/such/" + "x" * 5000) == classify("BREW", "/wp-admin") == ("(unmatched)", "other")
    assert classify("WHATEVER", "/mcp") == ("* /mcp", "other")


# -- over the real app -----------------------------------------------------------------------


def test_counters_and_histograms_move_with_real_requests(client: Client) -> None:
    _, api = client()
    ids = [remember(api, f"deploys happen on day {i}") for i in range(3)]
    for _ in range(2):
        assert api.post("/api/memory/recall", json={"query": "deploys"}).status_code == 200
    assert api.get(f"/api/memory/{ids[0]}").status_code == 200
    assert api.get("/api/memory/no-such-id").status_code == 404
    assert api.get("/definitely/not/a/route").status_code == 404

    usage = api.get("/api/analytics/usage").json()
    eps = usage["endpoints"]
    assert eps["POST /api/memory/remember"]["calls"] == 3 and eps["POST /api/memory/remember"]["errors"] == 0
    assert eps["POST /api/memory/recall"]["calls"] == 2
    assert eps["GET /api/memory/{memory_id}"] == {**eps["GET /api/memory/{memory_id}"], "calls": 2, "errors": 1}
    assert eps["(unmatched)"]["calls"] == 1
    assert not any(i in key for key in eps for i in ids)  # templates, never raw ids
    assert usage["actors"]["local"]["remember"] == 3 and usage["actors"]["local"]["recall"] == 4
    assert usage["totals"]["errors"] == 2 and usage["connectors"] == {}

    lat = api.get("/api/analytics/latency").json()
    assert lat["unit"] == "ms"
    ops = lat["operations"]
    assert ops["remember"]["count"] == 3 and ops["recall"]["count"] == 4
    assert ops["search"]["count"] == 2  # the recall engine itself, once per recall
    for snap in (ops["remember"], ops["search"], lat["routes"]["POST /api/memory/recall"]):
        assert 0 < snap["p50"] <= snap["p95"] <= snap["p99"] and snap["mean"] > 0
    assert ops["jobs"] == {"count": 0, "mean": None, "p50": None, "p95": None, "p99": None, "window": 0}


def test_mutation_errors_land_in_the_ring_with_their_codes(client: Client) -> None:
    _, api = client()
    mid = remember(api, "the staging cluster runs in eu-west-1")
    r = api.patch(f"/api/memory/{mid}", json={"content": "eu-west-2", "if_version": 7, "reason": "moved"})
    assert r.status_code == 409
    r = api.post(f"/api/memory/{mid}/recover", json={"reason": "oops"})
    assert r.status_code == 409  # not deleted: a conflict too
    out = api.get("/api/analytics/errors", params={"stage": "mutation"}).json()
    assert [e["code"] for e in out["errors"]] == ["MUTATION_CONFLICT", "MUTATION_CONFLICT"]
    newest = out["errors"][0]
    assert newest["route"] == "POST /api/memory/{memory_id}/recover" and newest["actor"] == "local"
    assert newest["memory_id"] == mid and "not_deleted" in newest["message"]
    assert out["summary"]["by_code"] == {"MUTATION_CONFLICT": 2} and out["summary"]["capacity"] == 500
    assert api.get("/api/analytics/errors", params={"code": "EMBEDDING_TIMEOUT"}).json()["errors"] == []
    assert len(api.get("/api/analytics/errors", params={"limit": 1}).json()["errors"]) == 1
    future = "2999-01-01T00:00:00Z"
    assert api.get("/api/analytics/errors", params={"since": future}).json()["errors"] == []

    safety = api.get("/api/analytics/memory-safety").json()
    assert len(safety["recent_errors"]) == 2 and safety["error_summary"]["total"] == 2


def test_the_ring_is_capped_at_500_over_the_api(client: Client) -> None:
    rt, api = client()
    mid = remember(api, "a memory to conflict on")
    for _ in range(3):  # real answers first ...
        assert api.patch(f"/api/memory/{mid}", json={"content": "x", "if_version": 9, "reason": "r"}).status_code == 409
    for i in range(510):  # ... then enough to overflow the ring
        rt.observability.analytics.record_error("EMBEDDING_PROVIDER_DOWN", f"provider down {i}")
    out = api.get("/api/analytics/errors", params={"limit": 500}).json()
    assert len(out["errors"]) == 500 and out["summary"]["buffered"] == 500
    assert out["summary"]["total"] == 513 and out["summary"]["by_code"]["MUTATION_CONFLICT"] == 3
    assert all(e["code"] == "EMBEDDING_PROVIDER_DOWN" for e in out["errors"])  # the conflicts were evicted


def test_scope_refusals_are_mutation_scope_denied(make_workspace: Callable[..., Workspace]) -> None:
    ws = configure(make_workspace(embedding="none"), "team")
    rt = start_runtime(ws)
    try:
        with TestClient(create_app(rt, manage_runtime=False), raise_server_exceptions=False) as api:
            admin = bearer(token_for(ws, "admin"))
            mid = api.post(
                "/api/memory/remember", json={"content": "billing runs nightly", "project": "b"}, headers=admin
            )
            assert mid.status_code == 200, mid.text
            agent = bearer(token_for(ws, "agent", sub="scoped-bot", project="a"))
            r = api.post("/api/memory/remember", json={"content": "sneaky", "project": "b"}, headers=agent)
            assert r.status_code == 403 and r.json()["reason"] == "scope_mismatch"
            out = api.get("/api/analytics/errors", headers=admin).json()
            assert [(e["code"], e["actor"]) for e in out["errors"]] == [("MUTATION_SCOPE_DENIED", "scoped-bot")]
            usage = api.get("/api/analytics/usage", headers=admin).json()
            assert usage["actors"]["scoped-bot"]["remember"] == 1
            assert usage["actors"]["admin-user"]["remember"] == 1
            # analytics is an operator's view: an agent token may not read it
            assert api.get("/api/analytics/usage", headers=agent).status_code == 403
    finally:
        rt.stop()


def test_a_handler_that_raises_is_a_server_error_entry() -> None:
    async def broken(scope: Scope, receive: Receive, send: Send) -> None:
        raise RuntimeError("boom")

    async def failing(scope: Scope, receive: Receive, send: Send) -> None:
        body = b'{"error": "disk full (3 MB free) at /x", "code": "disk_full"}'
        await send({"type": "http.response.start", "status": 507, "headers": [(b"content-type", b"application/json")]})
        await send({"type": "http.response.body", "body": body})

    for app, expected in ((broken, "500 unhandled RuntimeError"), (failing, "507 disk_full: disk full")):
        a = Analytics()
        stack = CatchAll(AnalyticsMiddleware(app, analytics=a))
        r = TestClient(stack, raise_server_exceptions=False).post("/api/memory/remember", json={})
        assert r.status_code >= 500 and r.headers["content-type"].startswith("application/json")
        (entry,) = a.errors()
        assert entry["code"] == "HTTP_SERVER_ERROR" and entry["stage"] == "http"
        assert entry["message"].startswith(expected) and entry["route"] == "POST /api/memory/remember"
        assert a.usage()["endpoints"]["POST /api/memory/remember"]["errors"] == 1


def test_metrics_export_histograms_and_counters_that_parse(client: Client) -> None:
    rt, api = client()
    remember(api, "the CI caches pip wheels")
    for _ in range(3):
        api.post("/api/memory/recall", json={"query": "wheels"})
    rt.observability.analytics.record_error("DECISION_INVALID", "job x: 1 decision(s) rejected")
    text = api.get("/metrics").text
    families = {f.name: f for f in text_string_to_metric_families(text)}
    http = families["signet_http_request_duration_seconds"]
    recall = [s for s in http.samples if s.labels.get("route") == "/api/memory/recall" and s.labels["method"] == "POST"]
    buckets = [s for s in recall if s.name.endswith("_bucket")]
    counts = [s.value for s in buckets]
    assert counts == sorted(counts) and buckets[-1].labels["le"] == "+Inf" and counts[-1] == 3
    assert next(s.value for s in recall if s.name.endswith("_count")) == 3
    assert next(s.value for s in recall if s.name.endswith("_sum")) > 0
    ops = {
        s.labels["operation"]: s.value
        for s in families["signet_operation_duration_seconds"].samples
        if s.name.endswith("_count")
    }
    assert ops["recall"] == 3 and ops["remember"] == 1 and ops["search"] == 3
    errors = {(s.labels["stage"], s.labels["code"]): s.value for s in families["signet_errors"].samples}
    assert errors[("decision", "DECISION_INVALID")] == 1 and len(errors) == len(ERROR_CODES)
    actors = {(s.labels["actor"], s.labels["kind"]): s.value for s in families["signet_actor_requests"].samples}
    assert actors[("local", "recall")] == 3
    assert "signet_http_request_errors" in families and "signet_provider_calls" in families


def test_memory_safety_counts_forgets_and_recoveries(client: Client) -> None:
    rt, api = client()
    ids = [remember(api, f"fact number {i} about the release") for i in range(3)]
    for mid in ids[:2]:
        assert api.delete(f"/api/memory/{mid}", params={"reason": "stale"}).status_code == 200
    assert api.post(f"/api/memory/{ids[0]}/recover", json={"reason": "needed"}).status_code == 200
    rt.db.write(
        lambda c: c.execute(
            "INSERT INTO memory_jobs(id, job_type, status, payload, attempts, max_attempts, created_at, updated_at)"
            " VALUES ('dead-1', 'extract', 'dead', '{}', 3, 3, '2026-01-01', '2026-01-01')"
        )
    )
    s = api.get("/api/analytics/memory-safety").json()
    assert s["history_7d"]["created"] == 3 and s["history_7d"]["deleted"] == 2 and s["history_7d"]["recovered"] == 1
    assert s["deleted"] == 1 and s["dead_jobs"] == 1
    assert s["mutation"]["status"] == "healthy" and s["mutation"]["metrics"]["recoveries_7d"] == 1
    assert s["guards"] == {"mutations_frozen": False, "shadow_mode": False, "allow_update_delete": False}


def test_continuity_is_empty_and_well_formed_until_scores_exist(client: Client) -> None:
    rt, api = client()
    assert api.get("/api/analytics/continuity").json() == {
        "available": True,
        "scores": [],
        "summary": {"count": 0, "average": None, "latest": None, "trend": None},
    }
    assert api.get("/api/analytics/continuity/latest").json() == {
        "available": True,
        "scores": [],
        "summary": {"count": 0},
    }

    # Scores written at session end (signet.continuity: session_scores) show, newest first.
    def write(c: Any) -> None:
        for i, (proj, score) in enumerate((("web", 0.5), ("web", 0.7), ("api", 0.9), ("web", 0.9))):
            c.execute(
                "INSERT INTO session_scores(id, session_key, project, score, memories_recalled, memories_used,"
                " novel_context_count, created_at) VALUES (?, ?, ?, ?, 1, 1, 0, ?)",
                (f"s{i}", f"k{i}", proj, score, f"2026-01-0{i + 1}"),
            )

    rt.db.write(write)
    out = api.get("/api/analytics/continuity", params={"project": "web"}).json()
    assert out["available"] and [s["score"] for s in out["scores"]] == [0.9, 0.7, 0.5]
    assert out["summary"]["latest"] == 0.9 and out["summary"]["trend"] == pytest.approx(0.4)
    latest = api.get("/api/analytics/continuity/latest").json()["scores"]
    assert {(s["project"], s["score"]) for s in latest} == {("web", 0.9), ("api", 0.9)}

    # A database without the table (an older one opened read-only elsewhere) answers unavailable.
    rt.db.write(lambda c: c.execute("DROP TABLE session_scores"))
    assert api.get("/api/analytics/continuity").json()["available"] is False


def test_features_reflect_the_configuration(client: Client) -> None:
    _, api = client()
    f = api.get("/api/features").json()
    assert f["keyword_index"] is True and f["graph"] is True and f["auth_mode"] == "local"
    assert f["telemetry"] == {"events": True, "memory_search_qa": False}
    assert f["embedding"]["provider"] == "none" and f["vector_search"] is False
    assert f["pipeline"]["enabled"] is True and f["pipeline"]["running"] is False  # provider 'none'

    _, api = client(
        search={"keyword_index": False},
        memory={
            "pipelineV2": {
                "enabled": False,
                "shadowMode": True,
                "graph": {"enabled": False},
                "telemetry": {"enabled": False, "memorySearchQaEnabled": True},
            }
        },
    )
    f = api.get("/api/features").json()
    assert f["keyword_index"] is False and f["graph"] is False
    assert f["pipeline"]["enabled"] is False and f["pipeline"]["shadow_mode"] is True
    assert f["telemetry"] == {"events": False, "memory_search_qa": True}


@pytest.mark.parametrize(
    "path, params",
    [
        ("/api/analytics/errors", {"limit": "0"}),
        ("/api/analytics/errors", {"limit": "99999999999999999999"}),
        ("/api/analytics/errors", {"since": "yesterday"}),
        ("/api/analytics/errors", {"since": "0001-01-01T00:00+01:00"}),
        ("/api/analytics/errors", {"stage": "'; DROP TABLE memories; --"}),
        ("/api/analytics/errors", {"code": "NOPE"}),
        ("/api/analytics/errors", {"bogus": "1"}),
        ("/api/analytics/continuity", {"limit": "-1"}),
        ("/api/analytics/continuity", {"project": "p" * 500}),
        ("/api/telemetry/events", {"event": "../../etc/passwd"}),
        ("/api/telemetry/events", {"limit": "1e9"}),
        ("/api/telemetry/export", {"until": "\u0000"}),
        ("/api/telemetry/memory-search", {"no_hits": "maybe"}),
        ("/api/telemetry/memory-search", {"offset": "-5"}),
        ("/api/telemetry/memory-search/export", {"limit": "10001"}),
        ("/api/telemetry/stats", {"since": "2026-13-45"}),
    ],
)
def test_hostile_query_parameters_are_4xx_json(client: Client, path: str, params: dict[str, str]) -> None:
    _, api = client()
    r = api.get(path, params=params)
    assert 400 <= r.status_code < 500, r.text
    body = r.json()
    assert body["code"] == "invalid_request" and body["error"]


def test_a_real_daemon_counts_its_requests(workspace: Workspace, start_daemon: Callable[..., DaemonProcess]) -> None:
    write_config(workspace, embedding={"provider": "none"})
    d = start_daemon(workspace)
    with d.client() as c:
        for i in range(4):
            assert c.post("/api/memory/remember", json={"content": f"daemon fact {i}"}).status_code == 200
        assert c.post("/api/memory/recall", json={"query": "daemon"}).status_code == 200
        usage = c.get("/api/analytics/usage").json()
        assert usage["endpoints"]["POST /api/memory/remember"]["calls"] == 4
        text = c.get("/metrics").text
    fams = {f.name: f for f in text_string_to_metric_families(text)}
    counts = {
        s.labels["operation"]: s.value
        for s in fams["signet_operation_duration_seconds"].samples
        if s.name.endswith("_count")
    }
    assert counts["remember"] == 4 and counts["recall"] == 1


def test_analytics_tables_exist_after_migration(client: Client) -> None:
    rt, _ = client()
    with StoreConnection(rt.workspace) as conn:
        names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()}
    assert {"telemetry_events", "memory_search_telemetry"} <= names


def test_embedding_calls_and_failures_are_counted(make_workspace: Callable[..., Workspace]) -> None:
    from tests.core.fake_embedder import FakeEmbeddingServer

    with FakeEmbeddingServer() as emb:
        ws = make_workspace(embedding="none")
        write_config(
            ws,
            embedding={
                "provider": "ollama",
                "model": "nomic-embed-text",
                "base_url": emb.url,
                "timeout": 1,
                "query_cooldown": 0,
            },
        )
        rt = start_runtime(ws)
        try:
            with TestClient(create_app(rt, manage_runtime=False), raise_server_exceptions=False) as api:
                remember(api, "the okapi census runs quarterly")
                assert rt.embeddings.wait_idle(30)
                assert api.post("/api/memory/recall", json={"query": "okapi"}).json()["method"] == "hybrid"
                emb.mode = "down500"
                api.post("/api/memory/recall", json={"query": "census"})
                emb.mode = "hang"
                api.post("/api/memory/recall", json={"query": "quarterly"})
                emb.mode = "ok"
                errors = api.get("/api/analytics/errors", params={"stage": "embedding"}).json()["errors"]
                assert [e["code"] for e in errors][:2] == ["EMBEDDING_TIMEOUT", "EMBEDDING_PROVIDER_DOWN"]
                assert errors[1]["message"].startswith("query embedding of 1 text(s) with ollama failed")
                p = api.get("/api/analytics/usage").json()["providers"]["embedding:ollama"]
                assert p["calls"] >= 4 and p["failures"] >= 1 and p["timeouts"] >= 1
                assert api.get("/api/analytics/latency").json()["operations"]["embed"]["count"] == p["calls"]
                events = api.get("/api/telemetry/events", params={"event": "embedding.call"}).json()["events"]
                kinds = {(e["properties"]["kind"], e["properties"]["outcome"]) for e in events}
                assert {
                    ("background", "success"),
                    ("query", "success"),
                    ("query", "failure"),
                    ("query", "timeout"),
                } <= kinds
                assert "okapi" not in json.dumps(events)
        finally:
            rt.stop()
