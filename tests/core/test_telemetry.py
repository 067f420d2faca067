"""Telemetry: the local event log (never content), its NDJSON export and bounds, and the opt-in
recall QA ledger (which does hold query text, on purpose), over the real app and store."""

from __future__ import annotations

import json
import signal
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from fastapi.testclient import TestClient

from signet.ops.telemetry import EVENTS, EventName
from signet.runtime import Runtime
from signet.workspace import Workspace
from tests.auth.conftest import bearer, configure, token_for
from tests.conftest import DaemonProcess, StoreConnection, write_config

Client = Callable[..., tuple[Runtime, TestClient]]

# Words that appear only in what users wrote: none may reach the event log.
SECRETS = ("zanzibar", "quetzalcoatl", "marmalade", "xylophone", "brontosaurus", "kumquat", "ptarmigan", "wolverine")


@pytest.fixture
def client(
    make_workspace: Callable[..., Workspace], open_app: Callable[[Workspace], tuple[Runtime, TestClient]]
) -> Client:
    def make(ws: Workspace | None = None, **telemetry: Any) -> tuple[Runtime, TestClient]:
        ws = ws or make_workspace(embedding="none")
        if telemetry:
            write_config(ws, memory={"pipelineV2": {"telemetry": telemetry}})
        return open_app(ws)

    return make


def use_the_memory(api: TestClient, **headers: str) -> None:
    """Remember, recall (three ways), search and hook-inject text made of SECRETS."""
    for i, word in enumerate(SECRETS[:4]):
        r = api.post(
            "/api/memory/remember",
            json={
                "content": f"the {word} plan ships on day {i}",
                "tags": [SECRETS[4]],
                "who": SECRETS[5],
                "why": SECRETS[6],
                "project": "proj",
            },
            headers=headers,
        )
        assert r.status_code == 200, r.text
    assert api.post("/api/memory/recall", json={"query": "zanzibar plan"}, headers=headers).status_code == 200
    assert api.post("/api/memory/recall", json={"query": "wolverine nowhere"}, headers=headers).status_code == 200
    assert api.get("/api/memory/search", params={"q": "marmalade"}, headers=headers).status_code == 200
    r = api.post(
        "/api/hooks/user-prompt-submit",
        json={"harness": "claude-code", "session_id": "s-1", "prompt": "what about xylophone and zanzibar?"},
        headers=headers,
    )
    assert r.status_code == 200, r.text


def raw_rows(rt: Runtime, table: str) -> list[tuple[Any, ...]]:
    with StoreConnection(rt.workspace) as conn:
        return [tuple(r) for r in conn.execute(f"SELECT * FROM {table}").fetchall()]


def test_events_never_hold_content_queries_or_prompts(client: Client) -> None:
    rt, api = client()
    use_the_memory(api)
    events = api.get("/api/telemetry/events", params={"limit": 1000}).json()
    assert events["enabled"] is True
    names = [e["event"] for e in events["events"]]
    assert names.count("memory.created") == 4 and names.count("recall.performed") == 4 and "runtime.started" in names
    surfaces = {e["properties"]["surface"] for e in events["events"] if e["event"] == "recall.performed"}
    assert surfaces == {"POST /api/memory/recall", "GET /api/memory/search", "POST /api/hooks/user-prompt-submit"}
    for e in events["events"]:  # only the properties each event may carry
        assert set(e["properties"]) <= set(EVENTS[e["event"]])
    exported = api.get("/api/telemetry/export").text
    rt.observability.telemetry.flush()
    stored = json.dumps(raw_rows(rt, "telemetry_events"))
    for text in (json.dumps(events), exported, stored):
        for word in SECRETS:
            assert word not in text.lower()
    assert raw_rows(rt, "memory_search_telemetry") == []  # the QA ledger is off by default
    ledger = api.get("/api/telemetry/memory-search").json()
    assert ledger == {"items": [], "count": 0, "total": 0, "enabled": False}


def test_ndjson_export_parses_and_filters(client: Client) -> None:
    rt, api = client()
    use_the_memory(api)
    r = api.get("/api/telemetry/export")
    assert r.status_code == 200 and r.headers["content-type"].startswith("application/x-ndjson")
    lines = [json.loads(line) for line in r.text.splitlines()]
    assert len(lines) >= 9 and [x["id"] for x in lines] == sorted(x["id"] for x in lines)
    assert all(set(x) == {"id", "event", "at", "properties"} for x in lines)
    only = [
        json.loads(x) for x in api.get("/api/telemetry/export", params={"event": "memory.created"}).text.splitlines()
    ]
    assert len(only) == 4 and {x["event"] for x in only} == {"memory.created"}
    assert all(x["properties"]["has_project"] is True for x in only)
    assert len(api.get("/api/telemetry/export", params={"limit": 2}).text.splitlines()) == 2
    future = (datetime.now(UTC) + timedelta(days=1)).isoformat()
    assert api.get("/api/telemetry/export", params={"since": future}).text == ""
    # a large export is read a page at a time and still arrives whole
    tel = rt.observability.telemetry
    for i in range(2500):
        tel.emit("embedding.call", {"provider": "local", "kind": "background", "texts": i, "duration_ms": 1.5})
    big = api.get("/api/telemetry/export", params={"event": "embedding.call", "limit": 100_000}).text.splitlines()
    assert len(big) == 2500 and json.loads(big[-1])["properties"]["texts"] == 2499


def test_stats_aggregate_the_events(client: Client) -> None:
    _, api = client()
    use_the_memory(api)
    s = api.get("/api/telemetry/stats").json()
    assert s["enabled"] is True and s["events"]["memory.created"] == 4
    assert s["recall"]["calls"] == 4 and s["recall"]["no_hits"] >= 1
    assert s["recall"]["by_method"] == {"fts": 4} and s["recall"]["p50"] is not None
    assert s["total_events"] == sum(s["events"].values())
    assert s["llm"]["calls"] == 0 and "errors_by_code" in s
    future = (datetime.now(UTC) + timedelta(days=1)).isoformat()
    assert api.get("/api/telemetry/stats", params={"since": future}).json()["total_events"] == 0


def test_the_event_log_is_bounded(client: Client) -> None:
    rt, _ = client(maxEvents=1000, retentionDays=30)
    tel = rt.observability.telemetry
    for i in range(1500):
        tel.emit("pipeline.job", {"job_type": "extract", "outcome": "done", "duration_ms": float(i)})
    tel.flush()
    old = (datetime.now(UTC) - timedelta(days=31)).isoformat()
    rt.db.write(
        lambda c: c.execute(
            "INSERT INTO telemetry_events(event, at, properties) VALUES ('runtime.started', ?, '{}')", (old,)
        )
    )
    tel.prune()
    with StoreConnection(rt.workspace) as conn:
        rows = conn.execute("SELECT event, at, properties FROM telemetry_events").fetchall()
    assert len(rows) == 1000 and all(r["at"] > old for r in rows)
    kept = [json.loads(r["properties"])["duration_ms"] for r in rows if r["event"] == "pipeline.job"]
    assert max(kept) == 1499.0  # the newest are kept


def test_emit_keeps_only_allowed_properties() -> None:
    from signet.config import TelemetrySettings
    from signet.ops.telemetry import TelemetryLog, allowed

    class NoDb:  # emit never touches the database: it only buffers
        pass

    tel = TelemetryLog(NoDb(), TelemetrySettings())  # type: ignore[arg-type]
    tel.emit("recall.performed", {"surface": "x" * 500, "query": "zanzibar", "results": 3, "method": ["a"]})
    ((event, _, props),) = list(tel._buf)
    assert allowed(event, props) == {"surface": "x" * 80, "results": 3, "method": None}
    assert set(EventName.__args__) == set(EVENTS)  # type: ignore[attr-defined]


def test_telemetry_can_be_switched_off(client: Client) -> None:
    rt, api = client(enabled=False)
    use_the_memory(api)
    rt.observability.telemetry.flush()
    assert raw_rows(rt, "telemetry_events") == []
    assert api.get("/api/telemetry/events").json() == {"events": [], "count": 0, "enabled": False}
    assert api.get("/api/telemetry/export").text == ""
    # the in-memory analytics still count
    assert api.get("/api/analytics/usage").json()["endpoints"]["POST /api/memory/remember"]["calls"] == 4


def test_the_qa_ledger_records_recalls_only_when_on(client: Client) -> None:
    rt, api = client(memorySearchQaEnabled=True)
    use_the_memory(api)
    rt.db.write(lambda c: None)  # the rows are queued on the writer thread
    out = api.get("/api/telemetry/memory-search").json()
    assert out["enabled"] is True and out["total"] == 4 and out["count"] == 4
    by_query = {i["query"]: i for i in out["items"]}
    # The ledger stores query text and result content on purpose (spec: a sensitive QA ledger).
    hit = by_query["zanzibar plan"]
    assert hit["route"] == "POST /api/memory/recall" and hit["no_hits"] is False and hit["result_count"] >= 1
    assert "zanzibar" in hit["results"][0]["content"] and hit["results"][0]["rank"] == 1
    assert hit["top_score"] == hit["results"][0]["score"] and hit["filters"]["limit"] == 10
    assert by_query["wolverine nowhere"]["no_hits"] is True
    assert "what about xylophone and zanzibar?" in by_query
    assert api.get("/api/telemetry/memory-search", params={"no_hits": "true"}).json()["total"] >= 1
    only = api.get("/api/telemetry/memory-search", params={"route": "GET /api/memory/search"}).json()
    assert [i["query"] for i in only["items"]] == ["marmalade"]
    page = api.get("/api/telemetry/memory-search", params={"limit": 1, "offset": 1}).json()
    assert page["count"] == 1 and page["total"] == 4
    lines = api.get("/api/telemetry/memory-search/export").text.splitlines()
    assert sorted(json.loads(x)["query"] for x in lines) == sorted(by_query)
    # ... while the event log still carries none of it
    rt.observability.telemetry.flush()
    stored = json.dumps(raw_rows(rt, "telemetry_events")).lower()
    assert not any(word in stored for word in SECRETS)


def test_a_scoped_token_sees_only_its_own_ledger_rows(make_workspace: Callable[..., Workspace], client: Client) -> None:
    ws = configure(make_workspace(embedding="none"), "team")
    rt, api = client(ws, memorySearchQaEnabled=True)
    admin = bearer(token_for(ws, "admin"))
    bot = bearer(token_for(ws, "agent", sub="bot", agent="bot-a"))
    assert (
        api.post("/api/memory/remember", json={"content": "kumquat harvest is in May"}, headers=admin).status_code
        == 200
    )
    assert api.post("/api/memory/recall", json={"query": "admin asks about kumquat"}, headers=admin).status_code == 200
    assert api.post("/api/memory/recall", json={"query": "bot asks about kumquat"}, headers=bot).status_code == 200
    rt.db.write(lambda c: None)
    everything = api.get("/api/telemetry/memory-search", headers=admin).json()
    assert everything["total"] == 2
    viewer = bearer(token_for(ws, "operator", sub="viewer", agent="bot-a"))
    mine = api.get("/api/telemetry/memory-search", headers=viewer).json()
    assert [(i["query"], i["agent_id"]) for i in mine["items"]] == [("bot asks about kumquat", "bot-a")]
    lines = api.get("/api/telemetry/memory-search/export", headers=viewer).text.splitlines()
    assert [json.loads(x)["query"] for x in lines] == ["bot asks about kumquat"]
    assert api.get("/api/telemetry/memory-search", headers=bot).status_code == 403  # agents lack 'analytics'
    assert api.get("/api/telemetry/events").status_code == 401  # team mode: a token is required


def test_events_survive_a_daemon_restart(workspace: Workspace, start_daemon: Callable[..., DaemonProcess]) -> None:
    write_config(workspace, embedding={"provider": "none"})
    d = start_daemon(workspace)
    with d.client() as c:
        assert c.post("/api/memory/remember", json={"content": "brontosaurus bones in the attic"}).status_code == 200
        assert c.post("/api/memory/recall", json={"query": "brontosaurus"}).status_code == 200
    d.stop(signal.SIGTERM)
    d = start_daemon(workspace, port=d.port)
    with d.client() as c:
        events = c.get("/api/telemetry/events", params={"limit": 1000}).json()["events"]
        export = c.get("/api/telemetry/export").text
    names = [e["event"] for e in reversed(events)]  # oldest first
    assert names[:4] == ["runtime.started", "memory.created", "recall.performed", "runtime.stopped"]
    assert names[4] == "runtime.started"
    stopped = next(e for e in events if e["event"] == "runtime.stopped")
    assert stopped["properties"]["requests"] >= 2
    assert "brontosaurus" not in export
