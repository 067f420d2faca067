"""What each transport adds: the stdio server without a daemon (a clear tool error, or a
daemon it starts when asked), and ``/mcp`` as plain HTTP (JSON-RPC POST, Host checks)."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.shared.exceptions import MCPError

from signet.store.schema_feedback import FEEDBACK_SCHEMA
from tests.conftest import DaemonProcess, free_port
from tests.mcp.conftest import quiet_workspace, run, stdio_params
from tests.mcp.test_mcp_server import TOOLS


def test_stdio_without_daemon_says_how_to_start_it(tmp_path: Path) -> None:
    ws = quiet_workspace(tmp_path / "ws")
    port = free_port()  # nothing listens here

    async def scenario() -> None:
        async with Client(stdio_params(ws, port)) as c:
            assert len((await c.list_tools()).tools) == len(TOOLS)  # listing needs no daemon
            for _ in range(2):  # and the server survives the failure
                r = await c.call_tool("memory_search", {"query": "anything"})
                assert r.is_error
                text = r.content[0].text  # type: ignore[union-attr]
                assert "not running" in text and "signet start" in text and "[daemon_unavailable]" in text
            # identity resources are the workspace's files: no daemon needed; a missing one is an error
            soul = await c.read_resource("signet://identity/SOUL.md")
            assert soul.contents[0].text == (ws.root / "SOUL.md").read_text(encoding="utf-8")  # type: ignore[union-attr]
            with pytest.raises(MCPError, match=r"MEMORY\.md does not exist"):
                await c.read_resource("signet://identity/MEMORY.md")
            assert len((await c.list_tools()).tools) == len(TOOLS)

    (ws.root / "MEMORY.md").unlink(missing_ok=True)
    run(scenario())


def test_stdio_starts_the_daemon_when_asked(tmp_path: Path) -> None:
    ws = quiet_workspace(tmp_path / "ws")
    port = free_port()
    env = {**os.environ, "SIGNET_WORKSPACE": str(ws.root)}

    async def scenario() -> None:
        async with Client(stdio_params(ws, port, SIGNET_MCP_START_DAEMON="1")) as c:
            r = await c.call_tool("memory_store", {"content": "started on demand"})
            assert not r.is_error, r.content
            assert r.structured_content is not None and r.structured_content["deduped"] is False

    try:
        run(scenario())
        health = httpx.get(f"http://127.0.0.1:{port}/health", timeout=5).json()
        assert health["status"] == "ok"
        assert ws.pid_path.exists()
    finally:
        subprocess.run(
            [sys.executable, "-m", "signet.cli.entry", "stop"], env=env, check=False, capture_output=True, timeout=30
        )
    assert not ws.pid_path.exists()


def _rpc(method: str, params: dict[str, object] | None = None, id_: int = 1) -> dict[str, object]:
    return {"jsonrpc": "2.0", "id": id_, "method": method, "params": params or {}}


HEADERS = {
    "Accept": "application/json, text/event-stream",
    "Content-Type": "application/json",
    "MCP-Protocol-Version": "2025-06-18",
}


def test_http_endpoint_speaks_plain_json_rpc(mcp_daemon: DaemonProcess) -> None:
    url = f"{mcp_daemon.url}/mcp"
    init = httpx.post(
        url,
        headers=HEADERS,
        json=_rpc(
            "initialize",
            {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "curl", "version": "1"}},
        ),
    )
    assert init.status_code == 200, init.text
    assert init.json()["result"]["serverInfo"]["name"] == "signet"
    listed = httpx.post(url, headers=HEADERS, json=_rpc("tools/list", id_=2))
    assert listed.status_code == 200, listed.text
    assert len(listed.json()["result"]["tools"]) == len(TOOLS)
    called = httpx.post(
        url, headers=HEADERS, json=_rpc("tools/call", {"name": "memory_get", "arguments": {"id": "missing"}}, id_=3)
    )
    result = called.json()["result"]
    assert result["isError"] is True and "[not_found]" in result["content"][0]["text"]


def test_http_endpoint_refuses_foreign_hosts_and_origins(mcp_daemon: DaemonProcess) -> None:
    url = f"{mcp_daemon.url}/mcp"
    body = _rpc("tools/list")
    rebinding = httpx.post(url, headers={**HEADERS, "Host": "evil.example:80"}, json=body)
    assert rebinding.status_code in (403, 421), rebinding.text
    cross_site = httpx.post(url, headers={**HEADERS, "Origin": "http://evil.example"}, json=body)
    assert cross_site.status_code == 403, cross_site.text
    # the rest of the API is unaffected by the mount
    assert httpx.get(f"{mcp_daemon.url}/health").status_code == 200


def test_the_entry_signet_install_writes_runs_the_server(tmp_path: Path, mcp_daemon: DaemonProcess) -> None:
    """`signet install claude-code` writes an MCP entry; running exactly that entry serves the tools."""
    home = tmp_path / "home"
    home.mkdir()
    env = {
        **os.environ,
        "HOME": str(home),
        "SIGNET_WORKSPACE": str(mcp_daemon.workspace.root),
        "SIGNET_PORT": str(mcp_daemon.port),
        "SIGNET_HOST": "127.0.0.1",
    }
    subprocess.run(
        [sys.executable, "-m", "signet.cli.entry", "install", "claude-code"],
        env=env,
        check=True,
        capture_output=True,
        timeout=60,
    )
    entry = json.loads((home / ".claude.json").read_text())["mcpServers"]["signet"]
    assert entry["type"] == "stdio" and entry["args"][-1] == "mcp"
    params = StdioServerParameters(
        command=entry["command"],
        args=entry["args"],
        env={k: env[k] for k in ("HOME", "SIGNET_WORKSPACE", "SIGNET_PORT", "SIGNET_HOST", "PATH")},
    )

    async def scenario() -> None:
        async with Client(params) as c:
            r = await c.call_tool("memory_store", {"content": "installed through claude-code's own entry"})
            assert not r.is_error, r.content
            found = await c.call_tool("memory_search", {"query": "claude-code's own entry"})
            assert found.structured_content is not None
            assert found.structured_content["results"][0]["id"] == r.structured_content["id"]  # type: ignore[index]

    run(scenario())


def test_signet_mcp_imports_no_model_code() -> None:
    """`signet mcp` must start fast: the CLI and the stdio server import no torch or numpy."""
    code = (
        "import sys; import signet.cli.main, signet.mcp.stdio; "
        "print(','.join(m for m in ('torch', 'sentence_transformers', 'numpy') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert out.stdout.strip() == ""


def test_a_server_fault_is_a_readable_tool_error(mcp_daemon: DaemonProcess) -> None:
    """A broken database (the feedback table dropped under the daemon) gives a tool error naming
    the failure, on both transports, and both keep serving."""
    db = sqlite3.connect(mcp_daemon.workspace.database_path(mcp_daemon.workspace.settings()))
    mid = httpx.post(f"{mcp_daemon.url}/api/memory/remember", json={"content": "fault injection target"}).json()["id"]
    db.execute("DROP TABLE agent_feedback")
    db.commit()

    async def scenario(target: object) -> None:
        async with Client(target) as c:  # type: ignore[arg-type]
            r = await c.call_tool(
                "memory_feedback", {"session_id": "s", "ratings": [{"memory_id": mid, "feedback": "positive"}]}
            )
            assert r.is_error
            text = r.content[0].text  # type: ignore[union-attr]
            assert "internal error: OperationalError" in text and "[internal_error]" in text
            assert not (await c.call_tool("memory_get", {"id": mid})).is_error

    try:
        run(scenario(f"{mcp_daemon.url}/mcp"))
        run(scenario(stdio_params(mcp_daemon.workspace, mcp_daemon.port)))
    finally:
        db.executescript(FEEDBACK_SCHEMA)
        db.close()


def test_mcp_endpoint_outside_the_lifespan_is_a_clear_503(make_workspace: Any) -> None:
    from fastapi.testclient import TestClient

    from signet.daemon.app import create_app

    ws = make_workspace(embedding="none", memory={"pipelineV2": {"enabled": False}})
    client = TestClient(create_app(ws), base_url="http://127.0.0.1:3850")  # no `with`: lifespan never runs
    r = client.post("/mcp", headers=HEADERS, json=_rpc("tools/list"))
    assert r.status_code == 503 and r.json()["code"] == "daemon_unavailable"
    with TestClient(create_app(ws), base_url="http://127.0.0.1:3850") as running:
        listed = running.post("/mcp", headers=HEADERS, json=_rpc("tools/list"))
        assert listed.status_code == 200 and len(listed.json()["result"]["tools"]) == len(TOOLS)


def test_mcp_tool_calls_reach_the_api_with_the_callers_credentials(make_workspace: Any) -> None:
    """The contract auth relies on: a tool call on /mcp is an API request carrying the MCP
    request's Authorization header and peer address (recorded here by an outer middleware)."""
    from fastapi.testclient import TestClient
    from starlette.types import ASGIApp, Receive, Scope, Send

    from signet.daemon.app import create_app

    seen: list[tuple[str, str | None, str | None, str | None]] = []

    class Record:
        def __init__(self, app: ASGIApp) -> None:
            self.app = app

        async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
            if scope["type"] == "http":
                headers = {k.decode(): v.decode() for k, v in scope["headers"]}
                client = scope.get("client")
                seen.append(
                    (
                        scope["path"],
                        headers.get("authorization"),
                        client[0] if client else None,
                        headers.get("x-signet-actor"),
                    )
                )
            await self.app(scope, receive, send)

    ws = make_workspace(embedding="none", memory={"pipelineV2": {"enabled": False}})
    app = create_app(ws)
    app.add_middleware(Record)
    with TestClient(app, base_url="http://127.0.0.1:3850", client=("10.1.2.3", 4567)) as c:
        r = c.post(
            "/mcp",
            headers={**HEADERS, "Authorization": "Bearer tok-123"},
            json=_rpc("tools/call", {"name": "memory_get", "arguments": {"id": "m-1"}}),
        )
        assert r.status_code == 200 and r.json()["result"]["isError"] is True
    assert seen[0] == ("/mcp", "Bearer tok-123", "10.1.2.3", None)
    assert seen[1] == ("/api/memory/m-1", "Bearer tok-123", "10.1.2.3", "mcp")
