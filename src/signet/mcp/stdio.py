"""``signet mcp``: the MCP server over stdio, talking to the running daemon over HTTP.

Harness configs run this command (see :mod:`signet.harnesses`). Every tool call goes to
the daemon, so writes stay on its single writer. When the daemon is down a tool call
returns a tool error saying how to start it; with ``--start-daemon`` (or
``SIGNET_MCP_START_DAEMON=1``) the server starts it on first need instead.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from urllib.parse import urlsplit

import anyio
from mcp.server.mcpserver import Context

from signet.errors import DaemonUnavailable
from signet.instance import workspace_header
from signet.mcp.tools import build_server
from signet.sdk import AsyncSignetClient


class DaemonLink:
    """The one HTTP client of a stdio server, and the optional start of a stopped daemon."""

    def __init__(self, client: AsyncSignetClient, *, start_daemon: bool, start_timeout: float = 30.0) -> None:
        self.client = client
        self.start_daemon = start_daemon
        self.start_timeout = start_timeout
        self._seen_alive = False

    async def ensure_daemon(self) -> None:
        if self._seen_alive or not self.start_daemon:
            return
        try:
            await self.client.health()
        except DaemonUnavailable:
            await anyio.to_thread.run_sync(self._start)
        self._seen_alive = True

    def _start(self) -> None:
        """``signet start`` on the host and port this server talks to, then wait for /health."""
        parts = urlsplit(self.client.url)
        cmd = [sys.executable, "-m", "signet.cli.entry", "start", "--wait", str(self.start_timeout)]
        if parts.hostname:
            cmd += ["--host", parts.hostname]
        if parts.port:
            cmd += ["--port", str(parts.port)]
        proc = subprocess.run(
            cmd, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=self.start_timeout + 10, check=False
        )
        if proc.returncode != 0:
            detail = (proc.stderr or proc.stdout).strip().splitlines()
            raise DaemonUnavailable(f"could not start the Signet daemon: {detail[-1] if detail else proc.returncode}")

    @asynccontextmanager
    async def session(self, _: Context) -> AsyncIterator[AsyncSignetClient]:
        await self.ensure_daemon()
        yield self.client


AGENT_HEADER = "X-Signet-Agent"


def serve_stdio(
    url: str | None = None,
    *,
    token: str | None = None,
    start_daemon: bool = False,
    workspace_root: Path | None = None,
    timeout: float = 30.0,
    agent: str | None = None,
) -> None:
    """Run until stdin closes.

    ``agent`` (``signet mcp --agent``) goes out as ``X-Signet-Agent`` on every daemon call:
    the header is how a local caller names its agent to the daemon's auth layer, which then
    stores its memories under that agent and scopes its reads by the roster. Without it a
    local MCP client could only act as nobody (unscoped). When the daemon authenticates a token
    (team mode, hybrid with a token) the token's scope decides and the header is ignored.
    """
    headers = {AGENT_HEADER: agent} if agent else {}
    target = urlsplit(url).hostname if url else None
    if workspace_root is not None and target is not None:
        headers.update(workspace_header(target, workspace_root))  # another workspace's daemon refuses
    client = AsyncSignetClient(url, token=token, actor="mcp", timeout=timeout, headers=headers)
    link = DaemonLink(client, start_daemon=start_daemon)
    server = build_server(link.session, workspace_root)

    async def main() -> None:
        try:
            await server.run_stdio_async()
        finally:
            await link.client.aclose()

    anyio.run(main)
