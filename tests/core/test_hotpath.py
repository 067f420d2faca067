"""The hot path (signet.daemon.hotpath) answers remember and recall exactly as the FastAPI routes do.

Two apps on two runtimes: one as built (valid remembers and recalls skip the router), one
with the hot path taken out of the middleware list, so every request goes through FastAPI's
routes. The same request must get the same status and the same body (ids and clocks aside)
from both, for valid bodies, every kind of invalid one, deduplication, actors and agents.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from signet.daemon.app import create_app
from signet.daemon.hotpath import HotPath
from signet.runtime import Runtime
from signet.workspace import Workspace
from tests.conftest import start_runtime

Clients = tuple[TestClient, TestClient, Runtime, Runtime]


@pytest.fixture
def clients(make_workspace: Callable[..., Workspace]) -> Iterator[Clients]:
    rt_hot = start_runtime(make_workspace(embedding="none"))
    rt_route = start_runtime(make_workspace(embedding="none"))
    hot = create_app(rt_hot, manage_runtime=False)
    route = create_app(rt_route, manage_runtime=False)
    route.user_middleware = [m for m in route.user_middleware if m.cls is not HotPath]
    assert len(route.user_middleware) == len(hot.user_middleware) - 1
    try:
        with TestClient(hot, raise_server_exceptions=False) as a, TestClient(route, raise_server_exceptions=False) as b:
            yield a, b, rt_hot, rt_route
    finally:
        rt_hot.stop()
        rt_route.stop()


CLOCKS = ("id", "created_at", "took_ms")


def _comparable(r: Any) -> tuple[int, Any, str | None]:
    body = r.json()
    if r.status_code == 200:
        body = {k: v for k, v in body.items() if k not in CLOCKS}
        if "results" in body:
            body["results"] = [{k: v for k, v in x.items() if k not in CLOCKS} for x in body["results"]]
    return r.status_code, body, r.headers.get("content-type")


def _same(c: Clients, content: bytes, headers: dict[str, str] | None = None, path: str = "/api/memory/remember") -> Any:
    hot, route, _, _ = c
    a = hot.post(path, content=content, headers=headers or {})
    b = route.post(path, content=content, headers=headers or {})
    assert _comparable(a) == _comparable(b), (content[:200], a.text[:300], b.text[:300])
    return a


JSON = {"content-type": "application/json"}

CASES: list[tuple[bytes, dict[str, str]]] = [
    (b'{"content": "Alice prefers tabs over spaces"}', JSON),
    (b'{"content": "critical: never push to main"}', JSON),
    (b'{"content": "[deploy,ops]: the runbook lives in ops/", "tags": ["x"], "who": "bob", "project": "p1"}', JSON),
    (
        b'{"content": "dated import", "created_at": "2024-03-01T10:00:00+01:00", "importance": 0.3, "type": "decision"}',
        JSON,
    ),
    (b'{"content": "no content type header"}', {}),  # the route does not parse it: 422 from both
    (b'{"content": "upper case type"}', {"content-type": "Application/JSON"}),
    (b'{"content": "vendor json type"}', {"content-type": "application/vnd.signet+json; charset=utf-8"}),
    (b'{"content": "text plain is not json"}', {"content-type": "text/plain"}),
    (b'{"content": "Alice prefers tabs over spaces"}', JSON),  # a duplicate: deduped in both
    (b"{not json", JSON),
    (b"", JSON),
    (b"[1, 2]", JSON),
    (b"\xff\xfe", JSON),
    (b'{"content": 5}', JSON),
    (b'{"content": "   "}', JSON),
    (b'{"content": "x", "importance": 7}', JSON),
    (b'{"content": "x", "bogus": 1}', JSON),
    (b'{"content": "x", "created_at": "yesterday"}', JSON),
    (b'{"content": "x", "visibility": "nowhere"}', JSON),
    (b'{"content": "actor named"}', {**JSON, "x-signet-actor": "importer-7"}),
    (b'{"content": "who wins over the actor", "who": "w"}', {**JSON, "x-signet-actor": "importer-7"}),
    (b'{"content": "actor too long"}', {**JSON, "x-signet-actor": "a" * 201}),
    (b'{"content": "x" , "importance": 7}', {**JSON, "x-signet-actor": "a" * 201}),  # both wrong: header first
    (b'{"content": "agent named", "agent_id": "helper"}', JSON),
    (b'{"content": "agent by header"}', {**JSON, "x-signet-agent": "helper"}),
]


RECALLS: list[tuple[bytes, dict[str, str]]] = [
    (b'{"query": "tabs or spaces"}', JSON),
    (b'{"query": "runbook", "limit": 1, "project": "p1", "tags": ["deploy"]}', JSON),
    (b'{"query": "main", "type": "fact", "importance_min": 0.5, "since": "2020-01-01T00:00:00Z"}', JSON),
    (b'{"query": "imports", "until": "2024-06-01T00:00:00+02:00", "alpha": 0, "min_score": 0}', JSON),
    (b'{"query": "agent", "agent_id": "helper"}', JSON),
    (b'{"query": ""NEAR(a b)" OR *"}', JSON),
    (b'{"query": ""}', JSON),
    (b'{"query": "x", "limit": 0}', JSON),
    (b'{"query": "x", "limit": 201}', JSON),
    (b'{"query": "x", "bogus": true}', JSON),
    (b'{"limit": 3}', JSON),
    (b'{"query": "x", "since": "soon"}', JSON),
    (b'{"query": "tabs"}', {"content-type": "text/plain"}),
    (b'{"query": "tabs"}', {}),
    (b"[]", JSON),
    (b"{", JSON),
]


def test_hot_path_answers_as_the_route(clients: Clients) -> None:
    for body, headers in CASES:
        _same(clients, body, headers)
    for body, headers in RECALLS:
        _same(clients, body, headers, path="/api/memory/recall")
    hot_rt, route_rt = clients[2], clients[3]

    def history(rt: Runtime) -> list[tuple[Any, ...]]:
        rows = rt.db.read(
            lambda c: list(
                c.execute(
                    "SELECT m.content, m.agent_id, m.project, m.type, m.tags, m.importance, m.pinned, h.changed_by, h.reason,"
                    " h.metadata FROM memories m JOIN memory_history h ON h.memory_id = m.id ORDER BY m.seq"
                )
            )
        )
        return [tuple(r) for r in rows]

    stored = history(hot_rt)
    assert stored == history(route_rt)  # the same rows and audit trail, field by field
    assert (
        "actor named",
        "default",
        None,
        "fact",
        "[]",
        0.8,
        0,
        "importer-7",
        "remember",
        '{"source_type": null, "type": "fact"}',
    ) in stored
    assert any(r[0] == "agent named" and r[1] == "helper" for r in stored)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    data=st.dictionaries(
        st.sampled_from(
            ["content", "type", "importance", "tags", "who", "project", "pinned", "created_at", "why", "x"]
        ),
        st.one_of(
            st.none(),
            st.booleans(),
            st.integers(-3, 3),
            st.floats(allow_nan=False),
            st.text(max_size=30),
            st.lists(st.text(max_size=8), max_size=3),
            st.sampled_from(["fact", "decision", "2024-01-02"]),
        ),
        max_size=5,
    )
)
def test_hot_path_matches_the_route_on_arbitrary_bodies(clients: Clients, data: dict[str, Any]) -> None:
    _same(clients, json.dumps(data).encode(), JSON)


def test_hot_path_serves_valid_requests_and_hands_the_rest_to_the_route(runtime: Runtime) -> None:
    """Without the router in reach (an inner app that records what reaches it), a valid
    remember is stored and answered, a valid recall finds it; an invalid one reaches the inner
    app with its body intact."""
    import asyncio

    reached: list[bytes] = []

    async def inner(scope: Any, receive: Any, send: Any) -> None:
        msg = await receive()
        reached.append(msg["body"])
        await send({"type": "http.response.start", "status": 599, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    class App:  # what the middleware reads from scope["app"]
        class state:
            pass

    App.state.runtime = runtime  # type: ignore[attr-defined]
    hot = HotPath(inner)

    def call(body: bytes, path: str = "/api/memory/remember") -> tuple[int, bytes]:
        sent: list[dict[str, Any]] = []
        chunks = [
            {"type": "http.request", "body": body[:3], "more_body": True},
            {"type": "http.request", "body": body[3:], "more_body": False},
        ]

        async def receive() -> dict[str, Any]:
            return chunks.pop(0)

        async def send(msg: dict[str, Any]) -> None:
            sent.append(msg)

        scope = {
            "type": "http",
            "method": "POST",
            "path": path,
            "root_path": "",
            "app": App,
            "headers": [(b"content-type", b"application/json")],
            "state": {},
        }
        asyncio.run(hot(scope, receive, send))
        return sent[0]["status"], b"".join(m.get("body", b"") for m in sent[1:])

    status, payload = call(b'{"content": "served without the router"}')
    assert status == 200 and json.loads(payload)["content"] == "served without the router"
    assert reached == []
    assert runtime.service.get(json.loads(payload)["id"]).content == "served without the router"

    status, payload = call(b'{"query": "router", "track_access": false}', path="/api/memory/recall")
    assert status == 200 and [r["content"] for r in json.loads(payload)["results"]] == ["served without the router"]
    assert reached == []

    assert call(b'{"content": "x", "bogus": 1}')[0] == 599
    assert reached == [b'{"content": "x", "bogus": 1}']  # both chunks, replayed whole
    assert call(b'{"content": "other path"}', path="/api/memory/remember/batch")[0] == 599
