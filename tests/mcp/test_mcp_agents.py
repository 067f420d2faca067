"""Naming the agent over MCP: ``signet mcp --agent`` / ``SIGNET_AGENT`` and the caller's
``X-Signet-Agent`` header on ``/mcp``. Memories stored through MCP belong to that agent and
its reads follow its roster policy (here ``isolated``: its own memories only)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from mcp import Client

from tests.conftest import DaemonProcess, launch_daemon, write_config
from tests.mcp.conftest import quiet_workspace, run, stdio_params


@pytest.fixture(scope="module")
def roster_daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DaemonProcess]:
    ws = quiet_workspace(tmp_path_factory.mktemp("mcp-agents") / "ws")
    write_config(
        ws, agents={"roster": [{"name": "alice", "readPolicy": "isolated"}, {"name": "bob", "readPolicy": "isolated"}]}
    )
    d = launch_daemon(ws)
    yield d
    d.stop()


def owner(d: DaemonProcess, memory_id: str) -> str:
    """The stored agent_id, read by a local caller that names no agent (it sees everything)."""
    r = httpx.get(f"{d.url}/api/memory/{memory_id}", timeout=10)
    assert r.status_code == 200, r.text
    return str(r.json()["agent_id"])


def test_stdio_agent_option_and_env(roster_daemon: DaemonProcess) -> None:
    d = roster_daemon
    ws = d.workspace
    # --agent wins over SIGNET_AGENT, as for every option with an env default.
    as_alice = stdio_params(ws, d.port, "--agent", "alice", SIGNET_AGENT="bob")
    as_bob = stdio_params(ws, d.port, SIGNET_AGENT="bob")

    async def session(params: Any, content: str) -> tuple[str, list[str], list[str], bool]:
        async with Client(params) as c:
            stored = await c.call_tool("memory_store", {"content": content})
            assert not stored.is_error, stored.content
            assert stored.structured_content is not None
            found = await c.call_tool("memory_search", {"query": "staging cluster"})
            listed = await c.call_tool("memory_list", {})
            assert found.structured_content is not None and listed.structured_content is not None
            other = await c.call_tool("memory_get", {"id": "placeholder"})
            return (
                str(stored.structured_content["id"]),
                [h["id"] for h in found.structured_content["results"]],
                [m["id"] for m in listed.structured_content["items"]],
                other.is_error,
            )

    alice_id, alice_found, alice_listed, _ = run(session(as_alice, "The staging cluster for alice runs on Hetzner"))
    bob_id, bob_found, bob_listed, _ = run(session(as_bob, "The staging cluster for bob runs on OVH"))
    assert owner(d, alice_id) == "alice" and owner(d, bob_id) == "bob"
    assert alice_id in alice_found and bob_id not in alice_found and bob_id not in alice_listed
    assert bob_id in bob_found and alice_id not in bob_found and alice_id not in bob_listed

    async def read_other() -> None:
        async with Client(as_bob) as c:
            r = await c.call_tool("memory_get", {"id": alice_id})
            assert r.is_error and "[not_found]" in r.content[0].text  # type: ignore[union-attr]

    run(read_other())


HEADERS = {
    "Accept": "application/json, text/event-stream",
    "Content-Type": "application/json",
    "MCP-Protocol-Version": "2025-06-18",
}


def call(d: DaemonProcess, tool: str, arguments: dict[str, Any], agent: str | None) -> dict[str, Any]:
    """One ``tools/call`` on ``/mcp`` as a plain JSON-RPC POST, naming ``agent`` by header."""
    headers = {**HEADERS, **({"X-Signet-Agent": agent} if agent else {})}
    r = httpx.post(
        f"{d.url}/mcp",
        headers=headers,
        timeout=30,
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": tool, "arguments": arguments}},
    )
    assert r.status_code == 200, r.text
    result: dict[str, Any] = r.json()["result"]
    assert not result.get("isError"), result
    return dict(result["structuredContent"])


def test_http_endpoint_forwards_the_callers_agent_header(roster_daemon: DaemonProcess) -> None:
    d = roster_daemon
    alice_id = call(d, "memory_store", {"content": "The release train for alice leaves on Fridays"}, "alice")["id"]
    bob_id = call(d, "memory_store", {"content": "The release train for bob leaves on Tuesdays"}, "bob")["id"]
    anon_id = call(d, "memory_store", {"content": "The release train for nobody leaves on Sundays"}, None)["id"]
    assert owner(d, alice_id) == "alice" and owner(d, bob_id) == "bob" and owner(d, anon_id) == "default"

    def found(agent: str | None) -> set[str]:
        res = call(d, "memory_search", {"query": "release train", "limit": 20}, agent)
        return {h["id"] for h in res["results"]}

    assert found("alice") == {alice_id}
    assert found("bob") == {bob_id}
    assert {alice_id, bob_id, anon_id} <= found(None)  # naming no agent is unscoped, as on /api


def test_agent_name_is_checked_at_start() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "signet.cli.entry", "mcp", "--agent", "not a name"],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    assert out.returncode == 2 and "--agent" in out.stderr, out.stderr
