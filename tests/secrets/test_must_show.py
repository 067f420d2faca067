"""Issue 24's must-show, against a real daemon on loopback in team mode: a command run with a
secret prints it raw and base64-encoded, and neither form reaches the output, the log, the
audit row or any API answer; readonly, agent and operator tokens get 403 on every secrets
route and from the MCP tools; the store file holds no plaintext."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from signet.auth.tokens import Role
from signet.daemon.app import create_app, iter_routes
from signet.workspace import Workspace
from tests.auth.conftest import bearer, configure, token_for
from tests.conftest import DaemonProcess
from tests.secrets.conftest import VALUE, assert_hidden, workspace_text

MCP_HEADERS = {
    "Accept": "application/json, text/event-stream",
    "Content-Type": "application/json",
    "MCP-Protocol-Version": "2025-06-18",
}
COMMAND = ["sh", "-c", "echo $TOKEN; echo $TOKEN | base64"]


def secrets_routes() -> list[tuple[str, str]]:
    app = create_app(Workspace.from_env(), manage_runtime=False)
    routes = sorted({(m, p) for m, p, _ in iter_routes(app.routes) if p.startswith("/api/secrets")})
    assert len(routes) == 6, routes
    return routes


def call(c: httpx.Client, method: str, path: str, headers: dict[str, str]) -> httpx.Response:
    url = path.replace("{name}", "TOKEN").replace("{job_id}", "some-run")
    body = {"POST": {"command": COMMAND, "secrets": ["TOKEN"], "wait": True}}.get(method)
    if path == "/api/secrets" and method == "POST":
        body = {"name": "STOLEN", "value": "an agent's attempt"}
    if path.endswith("{name}/exec"):
        body = {"command": COMMAND, "wait": True}
    return c.request(method, url, headers=headers, json=body)


def mcp_call(c: httpx.Client, headers: dict[str, str], tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    r = c.post(
        "/mcp",
        headers={**MCP_HEADERS, **headers},
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": tool, "arguments": arguments}},
    )
    assert r.status_code == 200, r.text
    result: dict[str, Any] = r.json()["result"]
    return result


@pytest.mark.sqlite_only("searches the workspace's SQLite file for the secret's value")
def test_secrets_are_used_but_never_seen(
    make_workspace: Callable[..., Workspace], start_daemon: Callable[..., DaemonProcess]
) -> None:
    ws = make_workspace(embedding="none", secrets={"exec": {"allow": ["sh"], "timeoutSeconds": 10}})
    configure(ws, "team", rateLimits={"default": 100_000, "operations": {}})
    d = start_daemon(ws)
    answers: list[str] = []
    admin = bearer(token_for(ws, "admin"))
    with d.client() as c:
        r = c.post("/api/secrets", headers=admin, json={"name": "TOKEN", "value": VALUE})
        assert r.status_code == 200, r.text
        answers.append(r.text)

        # 1. the command prints the value and its base64: the answer shows neither
        r = c.post("/api/secrets/exec", headers=admin, json={"command": COMMAND, "secrets": ["TOKEN"], "wait": True})
        assert r.status_code == 200, r.text
        run = r.json()
        assert run["status"] == "done" and run["exit_code"] == 0
        assert run["stdout"].splitlines()[0] == "[REDACTED:TOKEN]" and run["redactions"] == 2
        answers.append(r.text)

        # the spec's queued form, polled
        r = c.post("/api/secrets/TOKEN/exec", headers=admin, json={"command": COMMAND})
        assert r.status_code == 202, r.text
        answers.append(r.text)
        deadline = time.monotonic() + 30
        while True:
            polled = c.get(f"/api/secrets/exec/{r.json()['id']}", headers=admin)
            answers.append(polled.text)
            if polled.json()["status"] == "done" or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        assert polled.json()["stdout"] == run["stdout"]

        # 2. through MCP as an admin: the same redacted run
        listed = mcp_call(c, admin, "secret_list", {})
        assert not listed["isError"] and [s["name"] for s in listed["structuredContent"]["secrets"]] == ["TOKEN"]
        ran = mcp_call(c, admin, "secret_exec", {"command": COMMAND, "secrets": ["TOKEN"]})
        assert not ran["isError"], ran
        assert ran["structuredContent"]["stdout"] == run["stdout"]
        answers += [str(listed), str(ran)]

        # 3. every token below admin: 403 on every secrets route, and from both MCP tools
        roles: tuple[Role, ...] = ("readonly", "agent", "operator")
        for role in roles:
            headers = bearer(token_for(ws, role, sub=f"{role}-caller"))
            for method, path in secrets_routes():
                r = call(c, method, path, headers)
                assert r.status_code == 403, (role, method, path, r.status_code, r.text)
                assert r.json()["code"] == "forbidden"
                answers.append(r.text)
            # /mcp itself needs recall, which all three have: the tools' own API calls are refused
            for tool, args in (("secret_list", {}), ("secret_exec", {"command": COMMAND, "secrets": ["TOKEN"]})):
                result = mcp_call(c, headers, tool, args)
                assert result["isError"] is True and "[forbidden]" in result["content"][0]["text"], (role, result)
                answers.append(str(result))
        assert c.get("/api/secrets", headers=admin).json()["secrets"][0]["name"] == "TOKEN"  # nothing was stored

        # what an operator reads to diagnose the daemon
        for path in ("/api/logs", "/api/analytics/errors", "/api/analytics/usage", "/api/telemetry/events"):
            r = c.get(path, headers=admin, params={"limit": 500} if path == "/api/logs" else None)
            assert r.status_code == 200, (path, r.text)
            answers.append(r.text)

    for i, text in enumerate(answers):
        assert_hidden(text, f"API answer #{i}")
    d.stop()

    # the audit rows: one per run asked for, refused ones included, none with the value
    db = sqlite3.connect(ws.database_path())
    try:
        rows = db.execute("SELECT status, actor, command, stdout, stderr, error FROM secret_exec_runs").fetchall()
    finally:
        db.close()
    statuses = sorted(r[0] for r in rows)
    assert statuses.count("done") == 3, statuses
    assert {r[1] for r in rows} == {"admin-user"}  # refused callers never got past the auth layer
    for row in rows:
        assert_hidden(repr(row), "an audit row")

    # every file the daemon wrote: logs, its console, the database and WAL, the store
    files = workspace_text(ws.root)
    logs = "".join(text for name, text in files.items() if ".daemon/logs/" in name)
    assert f"secret exec run {run['id']}" in logs  # the log records each run (by name, never by value)
    assert ".secrets/store.json" in files
    for name, text in files.items():
        assert_hidden(text, name)
