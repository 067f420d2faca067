"""One real daemon per module (embedding provider ``none``: these tests are about the
protocol, not semantics) and MCP clients on both transports."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Coroutine, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest
from mcp.client.stdio import StdioServerParameters

from signet.workspace import Workspace, setup_workspace
from tests.conftest import DaemonProcess, launch_daemon, write_config

T = TypeVar("T")


def quiet_workspace(root: Path, embedding: str = "none") -> Workspace:
    ws = Workspace(root)
    setup_workspace(ws, agent_name="test-agent", user_name="Tester", embedding_provider=embedding)
    write_config(ws, memory={"pipelineV2": {"enabled": False}})
    return ws


def stdio_params(ws: Workspace, port: int, *args: str, **env: str) -> StdioServerParameters:
    """``signet mcp`` as a harness config runs it: the console entry point, daemon from the env."""
    return StdioServerParameters(
        command=sys.executable,
        args=["-c", "from signet.cli.entry import run; run()", "mcp", *args],
        env={
            "SIGNET_WORKSPACE": str(ws.root),
            "SIGNET_PORT": str(port),
            "SIGNET_HOST": "127.0.0.1",
            "PATH": os.environ.get("PATH", ""),
            # a daemon it starts keeps the session's model cache (tests/conftest.py), not the real home's
            "SIGNET_MODEL_CACHE": os.environ["SIGNET_MODEL_CACHE"],
            **env,
        },
    )


@pytest.fixture(scope="module")
def mcp_daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DaemonProcess]:
    ws = quiet_workspace(tmp_path_factory.mktemp("mcp") / "ws")
    d = launch_daemon(ws)
    yield d
    d.stop()


@pytest.fixture(params=["stdio", "http"])
def target(request: pytest.FixtureRequest, mcp_daemon: DaemonProcess) -> Any:
    """What ``mcp.Client`` connects to: the stdio subprocess, or the daemon's ``/mcp``."""
    if request.param == "http":
        return f"{mcp_daemon.url}/mcp"
    return stdio_params(mcp_daemon.workspace, mcp_daemon.port)


def run(coro: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run``, re-raising the first real error out of anyio's exception groups."""
    try:
        return asyncio.run(coro)
    except BaseExceptionGroup as group:
        leaf: BaseException = group
        while isinstance(leaf, BaseExceptionGroup):
            leaf = leaf.exceptions[0]
        raise leaf from None
