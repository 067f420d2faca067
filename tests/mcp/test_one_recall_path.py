"""One recall path: a memory stored through MCP is recalled identically through the HTTP
API, the SDK, the CLI and both MCP transports (real daemon, the default local embedder)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from mcp import Client

from signet.sdk import SignetClient
from tests.conftest import DaemonProcess, launch_daemon
from tests.mcp.conftest import quiet_workspace, run, stdio_params

QUERY = "which database should new services use?"
FACTS = [
    "We run PostgreSQL 16 for every new backend service",
    "The staging database is refreshed from production every Sunday night",
    "Alice prefers dark roast coffee",
    "Redis is only used as a cache, never as a primary store",
]


@pytest.fixture(scope="module")
def semantic_daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DaemonProcess]:
    ws = quiet_workspace(tmp_path_factory.mktemp("recall") / "ws", embedding="local")
    d = launch_daemon(ws)
    yield d
    d.stop()


def ranking(data: dict[str, Any]) -> list[tuple[str, float, str]]:
    return [(r["id"], round(r["score"], 6), r["source"]) for r in data["results"]]


def test_stored_through_mcp_recalled_identically_everywhere(semantic_daemon: DaemonProcess) -> None:
    d = semantic_daemon
    stdio = stdio_params(d.workspace, d.port)

    async def store_and_search() -> tuple[list[str], dict[str, Any], dict[str, Any]]:
        async with Client(f"{d.url}/mcp") as c:
            ids = []
            for fact in FACTS:
                r = await c.call_tool("memory_store", {"content": fact, "project": "infra"})
                assert not r.is_error, r.content
                ids.append(r.structured_content["id"])  # type: ignore[index]
            d.wait_embedder()
            via_http_mcp = await c.call_tool("memory_search", {"query": QUERY, "project": "infra"})
        async with Client(stdio) as c:
            via_stdio_mcp = await c.call_tool("memory_search", {"query": QUERY, "project": "infra"})
        return ids, via_http_mcp.structured_content or {}, via_stdio_mcp.structured_content or {}

    ids, via_http_mcp, via_stdio_mcp = run(store_and_search())

    via_api = httpx.post(f"{d.url}/api/memory/recall", json={"query": QUERY, "project": "infra"}, timeout=30).json()
    with SignetClient(d.url) as sdk:
        via_sdk = sdk.recall(QUERY, project="infra").model_dump()
    cli = subprocess.run(
        [sys.executable, "-m", "signet.cli.entry", "recall", QUERY, "--project", "infra", "--json"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
        env={**os.environ, "SIGNET_WORKSPACE": str(d.workspace.root), "SIGNET_PORT": str(d.port)},
    )
    via_cli = json.loads(cli.stdout)

    expected = ranking(via_api)
    assert via_api["method"] == "hybrid" and via_api["vector_search"]["available"] is True
    assert expected[0][0] == ids[0]  # semantics, not keywords: "database" ~ "PostgreSQL … service"
    for name, got in (("sdk", via_sdk), ("cli", via_cli), ("mcp-http", via_http_mcp), ("mcp-stdio", via_stdio_mcp)):
        assert ranking(got) == expected, name
        assert got["method"] == "hybrid", name
