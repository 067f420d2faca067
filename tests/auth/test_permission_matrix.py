"""The permission matrix, generated from the app's routes and the one policy table.

Every route x every role x (no token, expired, forged, wrong scope) in team mode, in-process
on the real app. A route added without an entry in ROUTE_PERMISSIONS fails the first test.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from signet.auth.policy import ROLE_PERMISSIONS, ROUTE_PERMISSIONS, role_allows, route_permission
from signet.auth.tokens import ROLES
from signet.daemon.app import create_app, iter_routes
from signet.runtime import Runtime
from signet.workspace import Workspace
from tests.auth.conftest import bearer, configure, expired_token, forged_token, token_for
from tests.conftest import start_runtime

MCP_HEADERS = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-06-18"}


def all_routes() -> list[tuple[str, str]]:
    app = create_app(Workspace.from_env(), manage_runtime=False)
    return sorted({(m, p) for m, p, _ in iter_routes(app.routes)})


def test_every_route_has_a_declared_permission() -> None:
    missing = [(m, p) for m, p in all_routes() if (m, p) not in ROUTE_PERMISSIONS and ("*", p) not in ROUTE_PERMISSIONS]
    assert missing == [], f"routes without a permission in signet.auth.policy.ROUTE_PERMISSIONS: {missing}"
    stale = [k for k in ROUTE_PERMISSIONS if k[0] != "*" and k not in set(all_routes())]
    assert stale == [], f"permission entries for routes that do not exist: {stale}"


def test_role_matrix_is_the_specs() -> None:
    assert ROLE_PERMISSIONS["admin"] >= ROLE_PERMISSIONS["operator"] | {"admin"}
    assert "admin" not in ROLE_PERMISSIONS["operator"]
    assert ROLE_PERMISSIONS["agent"] == {"remember", "recall", "modify", "forget", "recover", "documents"}
    assert ROLE_PERMISSIONS["readonly"] == {"recall"}
    assert route_permission("GET", "/api/memory/abc") == ("recall", "/api/memory/{memory_id}")
    assert route_permission("GET", "/api/memory/search")[0] == "recall"
    assert route_permission("POST", "/mcp")[0] == "recall"
    assert route_permission("GET", "/api/not-a-route") == ("admin", "/api/not-a-route")


@pytest.fixture(scope="module")
def team(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Workspace, Runtime, TestClient, str]]:
    from signet.workspace import setup_workspace
    from tests.conftest import write_config

    ws = Workspace(tmp_path_factory.mktemp("team") / "ws")
    setup_workspace(ws, agent_name="t", user_name="T", embedding_provider="none")
    write_config(ws, memory={"pipelineV2": {"enabled": False, "extraction": {"provider": "none"}}})
    write_config(ws, update={"indexUrl": "http://127.0.0.1:9/pypi"})  # GET /api/update/check: never PyPI
    configure(ws, "team", rateLimits={"default": 100_000, "operations": {}})
    rt = start_runtime(ws)
    app = create_app(rt, manage_runtime=False)
    with TestClient(
        app, raise_server_exceptions=False, base_url="http://localhost:3850", client=("10.1.2.3", 5000)
    ) as c:
        r = c.post(
            "/api/memory/remember",
            headers=bearer(token_for(ws, "admin")),
            json={"content": "the matrix seed memory lives in project alpha", "project": "alpha"},
        )
        assert r.status_code == 200, r.text
        yield ws, rt, c, r.json()["id"]
    rt.stop()


def concrete(path: str, memory_id: str) -> str:
    return (
        path.replace("{memory_id}", memory_id)
        .replace("{domain}", "queue")
        .replace("{asset}", "app.js")
        .replace("{job_id}", "no-such-job")
    )


def call(c: TestClient, method: str, path: str, headers: dict[str, str]) -> Any:
    if path == "/mcp":
        if method != "POST":
            method = "POST"  # GET opens an SSE stream; the route is one permission for all methods
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
        return c.request(method, path, headers={**MCP_HEADERS, **headers}, json=body)
    if method in ("POST", "PATCH"):
        # An empty body: authorised requests fail validation (422) or do a harmless no-op;
        # what matters here is that they got past (or were stopped by) the auth layer.
        return c.request(
            method, path, headers=headers, content=b"{}", params={"reason": "matrix"} if method == "DELETE" else None
        )
    return c.request(method, path, headers=headers, params={"reason": "matrix"} if method == "DELETE" else None)


def test_matrix_no_token_expired_forged(team: tuple[Workspace, Runtime, TestClient, str]) -> None:
    ws, _, c, mid = team
    bad = {"expired": expired_token(ws), "forged": forged_token(ws), "garbage": "not.a.token"}
    failures = []
    for method, path in all_routes():
        perm, _ = route_permission(method, path)
        url = concrete(path, mid)
        r = call(c, method, url, {})
        want_open = perm == "none"
        if (r.status_code == 401) == want_open:
            failures.append((method, path, "no token", r.status_code))
        for label, tok in bad.items():
            r = call(c, method, url, bearer(tok))
            if r.status_code != 401:
                failures.append((method, path, label, r.status_code))
            elif r.json() != {"error": "invalid or expired token", "code": "unauthorized"}:
                failures.append((method, path, label, "detail leaked: " + r.text))
    assert failures == []


def test_matrix_every_role(team: tuple[Workspace, Runtime, TestClient, str]) -> None:
    ws, _, c, mid = team
    failures = []
    for role in ROLES:
        tok = token_for(ws, role, sub=f"matrix-{role}")
        for method, path in all_routes():
            perm, _ = route_permission(method, path)
            if method == "DELETE" and path == "/api/memory/{memory_id}":
                continue  # would delete the seed memory; checked below on a throw-away memory
            r = call(c, method, concrete(path, mid), bearer(tok))
            allowed = role_allows(role, perm)
            if allowed and r.status_code in (401, 403):
                failures.append((role, method, path, "refused", r.status_code, r.text[:100]))
            if not allowed and r.status_code != 403:
                failures.append((role, method, path, "let through", r.status_code))
            if not allowed and r.status_code == 403:
                assert r.json()["code"] == "forbidden"
    assert failures == []
    admin = bearer(token_for(ws, "admin"))
    for role in ROLES:
        victim = c.post(
            "/api/memory/remember", headers=admin, json={"content": f"throw-away memory for {role}"}
        ).json()["id"]
        r = c.delete(f"/api/memory/{victim}", params={"reason": "matrix"}, headers=bearer(token_for(ws, role)))
        assert (r.status_code == 200) == role_allows(role, "forget"), (role, r.status_code, r.text)


def test_matrix_wrong_scope(team: tuple[Workspace, Runtime, TestClient, str]) -> None:
    """An operator token scoped to another project reaches its routes but never the seed memory."""
    ws, _, c, mid = team
    seed_text = "the matrix seed memory"
    for scope in ({"project": "beta"}, {"project": "beta", "agent": "someone-else"}):
        tok = bearer(token_for(ws, "operator", sub="scoped", **scope))
        for method, path in all_routes():
            if method == "DELETE" and path == "/api/memory/{memory_id}":
                continue
            perm, _ = route_permission(method, path)
            r = call(c, method, concrete(path, mid), tok)
            assert (r.status_code == 403) == (not role_allows("operator", perm)), (method, path, r.status_code)
            assert seed_text not in r.text, (method, path, "leaked the seed memory")
            if "{memory_id}" in path:
                assert r.status_code in (404, 422), (method, path, r.status_code, r.text)
        r = c.delete(f"/api/memory/{mid}", params={"reason": "wrong scope"}, headers=tok)
        assert r.status_code == 404
        r = c.post("/api/memory/recall", headers=tok, json={"query": "matrix seed memory", "project": "alpha"})
        assert r.status_code == 403 and r.json()["reason"] == "scope_mismatch"
        r = c.get("/api/memories", headers=tok, params={"project": "alpha"})
        assert r.status_code == 403
    # the right scope sees it
    ok = bearer(token_for(ws, "readonly", sub="alpha-reader", project="alpha"))
    listed = c.get("/api/memories", headers=ok).json()
    assert [m["id"] for m in listed["items"]] == [mid]
    assert c.get(f"/api/memory/{mid}", headers=ok).status_code == 200


def test_mcp_tool_calls_are_held_to_the_tokens_role(team: tuple[Workspace, Runtime, TestClient, str]) -> None:
    """/mcp needs recall; a tool that writes needs the write's permission (it re-enters the API)."""
    ws, _, c, _ = team

    def tool(role: str, name: str, args: dict[str, Any]) -> Any:
        tok = bearer(token_for(ws, role, sub=f"mcp-{role}"))  # type: ignore[arg-type]
        return c.post(
            "/mcp",
            headers={**MCP_HEADERS, **tok},
            json={"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": name, "arguments": args}},
        )

    r = tool("readonly", "memory_store", {"content": "readonly must not write this"})
    assert r.status_code == 200 and r.json()["result"]["isError"] is True
    assert "admin" not in r.text and "remember" in r.text  # the API's 403 message reaches the agent
    r = tool("readonly", "memory_search", {"query": "matrix seed"})
    assert r.status_code == 200 and r.json()["result"]["isError"] is False
    r = tool("agent", "memory_store", {"content": "an agent may write this"})
    assert r.json()["result"]["isError"] is False
    listed = c.get("/api/memories", headers=bearer(token_for(ws, "admin")), params={"limit": 200}).json()["items"]
    contents = [m["content"] for m in listed]
    assert "readonly must not write this" not in contents and "an agent may write this" in contents


def test_hostile_long_paths_are_answered_but_never_cached() -> None:
    """Every request asks route_permission: a cache keyed by 64 KiB paths would hold tens of MB."""
    from signet.auth import policy

    policy._cached_match.cache_clear()
    long_id = "a" * 60_000
    for i in range(20):
        assert policy.route_permission("GET", f"/api/memory/{long_id}{i}") == ("recall", "/api/memory/{memory_id}")
    assert policy._cached_match.cache_info().currsize == 0
    assert policy.route_permission("GET", "/api/memory/abc") == ("recall", "/api/memory/{memory_id}")
    assert policy._cached_match.cache_info().currsize == 1
