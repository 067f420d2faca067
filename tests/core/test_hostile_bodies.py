"""Hostile bodies get a 4xx with the JSON error shape, never a 500, on every route that reads
one; unknown fields on write and admin routes are errors; an unexpected 500 keeps the
connection open (the real app; a real uvicorn for the connection test)."""

from __future__ import annotations

import http.client
import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import uvicorn
from fastapi.testclient import TestClient

from signet.daemon.app import create_app, iter_routes
from signet.pipeline import queue
from signet.runtime import Runtime
from signet.workspace import Workspace
from tests.auth.conftest import bearer, configure, token_for
from tests.conftest import free_port

DEEP = {
    "array 2,000 deep": "[" * 2000 + "]" * 2000,
    "object 2,000 deep": '{"a":' * 2000 + "1" + "}" * 2000,
    "100,000 open brackets": "[" * 100_000,
    "deep inside a field": '{"content": ' + "[" * 3000 + "]" * 3000 + "}",
    "65 levels": '{"content": "x", "tags": ' + "[" * 64 + "]" * 64 + "}",
}
MALFORMED = {
    "truncated": b'{"content": "x"',
    "invalid utf-8": b'{"content": "\xff\xfe"}',
    "not an object": b"[1, 2, 3]",
    "a bare string": b'"hello"',
    "empty": b"",
    "nul bytes": b'{"content": "a\x00b"}',
}


def body_routes(app: object) -> list[tuple[str, str, bool]]:
    """Every POST/PATCH/PUT route of the app (path parameters filled with a dummy id), and
    whether it reads a body."""
    out = []
    for method, path, route in iter_routes(app.routes):  # type: ignore[attr-defined]
        if method in ("POST", "PATCH", "PUT") and not path.startswith("/mcp"):
            reads = getattr(route, "body_field", None) is not None
            out.append((method, path.replace("{memory_id}", "nope").replace("{name}", "claude-code"), reads))
    return sorted(set(out))


@pytest.fixture
def apps(make_workspace: object) -> Iterator[tuple[Runtime, TestClient, TestClient, dict[str, str]]]:
    """A local-mode app and a team-mode app (where the auth middleware decodes every body)."""
    ws_local = make_workspace(embedding="none")  # type: ignore[operator]
    ws_team = configure(make_workspace(embedding="none"), "team")  # type: ignore[operator]
    rts = [Runtime(ws_local).start(), Runtime(ws_team).start()]
    clients = [TestClient(create_app(rt, manage_runtime=False), raise_server_exceptions=False) for rt in rts]
    for c in clients:
        c.__enter__()
    try:
        yield rts[0], clients[0], clients[1], bearer(token_for(ws_team, "admin"))
    finally:
        for c in clients:
            c.__exit__(None, None, None)
        for rt in rts:
            rt.stop()


def _json_error(resp: object) -> dict[str, object]:
    body = resp.json()  # type: ignore[attr-defined]
    assert isinstance(body, dict) and isinstance(body.get("error"), str) and isinstance(body.get("code"), str), body
    return body


def test_deep_and_malformed_bodies_are_4xx_everywhere(
    apps: tuple[Runtime, TestClient, TestClient, dict[str, str]],
) -> None:
    _, local, team, auth = apps
    routes = body_routes(local.app)
    assert ("POST", "/api/memory/remember", True) in routes and ("POST", "/api/memory/modify", True) in routes
    for client, headers in ((local, {}), (team, auth)):
        for method, path, reads in routes:
            for name, raw in [*((k, v.encode()) for k, v in DEEP.items()), *MALFORMED.items()]:
                resp = client.request(
                    method, path, content=raw, headers={"content-type": "application/json", **headers}
                )
                if (name == "empty" or not reads) and resp.status_code < 300:
                    continue  # a route without a body, or whose body is optional, ignores it
                assert 400 <= resp.status_code < 500, (method, path, name, resp.status_code, resp.text[:200])
                _json_error(resp)
    deep = local.post(
        "/api/memory/remember", content=DEEP["array 2,000 deep"], headers={"content-type": "application/json"}
    )
    assert deep.status_code == 400 and "nested too deeply" in deep.json()["error"]


def test_oversized_and_wrong_content_type(apps: tuple[Runtime, TestClient, TestClient, dict[str, str]]) -> None:
    _, local, _, _ = apps
    big = json.dumps({"content": "x" * (9 * 1024 * 1024)})
    resp = local.post("/api/memory/remember", content=big, headers={"content-type": "application/json"})
    assert resp.status_code == 413 and _json_error(resp)["code"] == "payload_too_large"
    resp = local.post("/api/memory/remember", content=b"content=x", headers={"content-type": "text/plain"})
    assert 400 <= resp.status_code < 500
    _json_error(resp)


def test_unknown_fields_are_refused_on_write_and_admin_routes(
    apps: tuple[Runtime, TestClient, TestClient, dict[str, str]],
) -> None:
    rt, local, _, _ = apps

    def dead_jobs(n: int) -> list[str]:
        def write(conn: object) -> list[str]:
            ids = [queue.enqueue(conn, "extract", payload={"session_key": f"s{i}"})[0] for i in range(n)]  # type: ignore[arg-type]
            conn.execute(  # type: ignore[attr-defined]
                f"UPDATE memory_jobs SET status = 'dead' WHERE id IN ({','.join('?' * len(ids))})", ids
            )
            return ids

        return rt.db.write(write)

    def dead() -> int:
        return int(
            rt.db.read(lambda c: c.execute("SELECT COUNT(*) FROM memory_jobs WHERE status = 'dead'").fetchone()[0])
        )

    ids = dead_jobs(50)
    # A misspelled filter used to be ignored, and all 50 jobs came back instead of one.
    resp = local.post("/api/repair/requeue-dead", json={"job_ids": ids[0]})
    assert resp.status_code == 422 and "job_ids" in _json_error(resp)["error"], resp.text
    assert dead() == 50
    resp = local.post("/api/repair/requeue-dead", json={"job_id": ids[0]})
    assert resp.status_code == 200 and resp.json()["requeued"] == [ids[0]] and dead() == 49
    # The spec's camelCase spelling is the same field, not an unknown one.
    resp = local.post("/api/repair/requeue-dead", json={"jobId": ids[1]})
    assert resp.status_code == 200 and resp.json()["requeued"] == [ids[1]] and dead() == 48
    for path, body in (
        ("/api/memory/remember", {"content": "x", "projcet": "p"}),
        ("/api/memory/recall", {"query": "x", "limt": 3}),
        ("/api/memory/modify", {"patches": [{"id": "x", "content": "y", "imporance": 1}], "reason": "r"}),
        ("/api/auth/token", {"sub": "x", "role": "agent", "projct": "p"}),
    ):
        resp = local.post(path, json=body)
        assert resp.status_code in (400, 403, 422), (path, resp.status_code, resp.text)
        _json_error(resp)


@pytest.fixture
def served(tmp_path: Path) -> Iterator[int]:
    """A real uvicorn on loopback serving the real app, plus one route that fails for real
    (it divides by zero) as an unexpected bug would."""
    from signet.workspace import setup_workspace

    ws = Workspace(tmp_path / "ws")
    setup_workspace(ws, agent_name="t", user_name=None, embedding_provider="none", llm_provider="none")
    rt = Runtime(ws)
    app = create_app(rt)

    @app.get("/api/test/bug")
    def bug() -> int:
        return 1 // 0

    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_config=None))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.05)
    try:
        yield port
    finally:
        server.should_exit = True
        thread.join(timeout=30)


def test_a_500_keeps_the_connection_open(served: int) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", served, timeout=10)
    try:
        for _ in range(2):
            conn.request("GET", "/api/test/bug")
            resp = conn.getresponse()
            body = json.loads(resp.read())
            assert resp.status == 500 and body["code"] == "internal_error" and "ZeroDivisionError" in body["error"]
            assert (resp.getheader("connection") or "").lower() != "close"
        conn.request("GET", "/health")  # the same connection still serves
        resp = conn.getresponse()
        assert resp.status == 200 and json.loads(resp.read()) == {"status": "ok"}
    finally:
        conn.close()
