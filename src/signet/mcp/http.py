"""``/mcp`` on the daemon: the same MCP tools over Streamable HTTP.

Tools reach the daemon's own HTTP API in-process (``httpx.ASGITransport`` over the app),
carrying the MCP request's ``Authorization`` and ``X-Signet-Agent`` headers and peer
address. So a tool call passes the same auth, scope and rate-limit checks as the equivalent
API call and runs the same handler: results are identical to the HTTP API and to
``signet mcp`` by construction, not by a second implementation.

The server is stateless with JSON responses: each POST is answered on its own, nothing is
kept between requests, and any MCP client (or curl) can call it.

Start-up: importing the ``mcp`` SDK takes ~0.5 s, so the daemon does not pay it before
answering ``/health``. The app's lifespan starts a background task that imports it in a
worker thread, builds the server and runs its session manager until shutdown; a request to
``/mcp`` that arrives earlier waits for it (up to :data:`READY_TIMEOUT` seconds).
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

import anyio
import httpx
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from signet.errors import InvalidRequest
from signet.sdk import AsyncSignetClient

if TYPE_CHECKING:
    from fastapi import FastAPI
    from mcp.server.mcpserver import Context
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
    from mcp.server.transport_security import TransportSecuritySettings

    from signet.runtime import Runtime

log = logging.getLogger(__name__)

PATH = "/mcp"
LOOPBACK = ("127.0.0.1", "localhost", "::1")
READY_TIMEOUT = 30.0
# Request headers a tool call carries over to the API call it makes. ``x-signet-agent`` is
# how a local caller names its agent (the auth layer scopes reads and owns writes by it), so
# an MCP client that sends it acts as that agent here exactly as on /api.
FORWARDED = ("authorization", "host", "x-forwarded-for", "x-real-ip", "x-signet-agent")


class McpEndpoint:
    """The ASGI endpoint at ``/mcp``; ``lifespan()`` runs its session manager."""

    def __init__(self, app: FastAPI, runtime: Runtime) -> None:
        self.app = app
        self.host = runtime.settings.daemon.host
        self.workspace_root = runtime.workspace.root
        self._manager: StreamableHTTPSessionManager | None = None
        self._ready: anyio.Event | None = None
        self._failure: str | None = None

    def _security(self) -> TransportSecuritySettings:
        from mcp.server.transport_security import TransportSecuritySettings

        # On loopback, refuse browsers' cross-site requests and DNS-rebinding Hosts (the SDK's
        # own default); on a network bind the daemon's auth decides who may call.
        if self.host not in LOOPBACK:
            return TransportSecuritySettings(enable_dns_rebinding_protection=False)
        return TransportSecuritySettings(
            enable_dns_rebinding_protection=True,
            allowed_hosts=["127.0.0.1:*", "localhost:*", "[::1]:*", "127.0.0.1", "localhost", "[::1]"],
            allowed_origins=["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"],
        )

    @asynccontextmanager
    async def lifespan(self) -> AsyncIterator[None]:
        self._ready = anyio.Event()
        self._failure = None
        async with anyio.create_task_group() as tg:
            tg.start_soon(self._serve, self._ready)
            try:
                yield
            finally:
                tg.cancel_scope.cancel()

    async def _serve(self, ready: anyio.Event) -> None:
        try:
            # The slow part (importing the SDK) off the event loop; building stays on it.
            await anyio.to_thread.run_sync(importlib.import_module, "signet.mcp.tools")
            from signet.mcp.tools import build_server

            server = build_server(self._client, self.workspace_root)
            # A session manager runs once; a new one per app start lets an app restart (tests do).
            server.streamable_http_app(
                streamable_http_path=PATH,
                stateless_http=True,
                json_response=True,
                transport_security=self._security(),
                host=self.host,
            )
            manager = server.session_manager
        except Exception as exc:  # the daemon keeps serving its API; /mcp says what failed
            log.exception("the MCP endpoint could not start")
            self._failure = f"the MCP endpoint could not start: {type(exc).__name__}: {exc}"
            ready.set()
            return
        async with manager.run():
            self._manager = manager
            ready.set()
            try:
                await anyio.sleep_forever()
            finally:
                self._manager = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self._manager is None and self._ready is not None:
            with anyio.move_on_after(READY_TIMEOUT):
                await self._ready.wait()
        manager = self._manager
        if manager is None:
            reason = self._failure or "the MCP endpoint is not running (the app's lifespan has not started it)"
            await JSONResponse({"error": reason, "code": "daemon_unavailable"}, status_code=503)(scope, receive, send)
            return
        await manager.handle_request(scope, receive, send)

    @asynccontextmanager
    async def _client(self, ctx: Context) -> AsyncIterator[AsyncSignetClient]:
        request = ctx.request_context.request
        headers: dict[str, Any] = {}
        peer = ("127.0.0.1", 0)
        if isinstance(request, Request):
            headers = {k: v for k, v in request.headers.items() if k in FORWARDED}
            if request.client is not None:
                peer = (request.client.host, request.client.port)
        host = headers.pop("host", "127.0.0.1")
        try:
            url = str(httpx.URL(f"http://{host}"))
        except httpx.InvalidURL:
            raise InvalidRequest(f"unusable Host header {host[:100]!r}") from None
        # raise_app_exceptions=False: an unexpected error reaches the tool as the API's own
        # 500 JSON body (a readable tool error), not as a Python exception.
        transport = httpx.ASGITransport(app=self.app, client=peer, raise_app_exceptions=False)
        client = AsyncSignetClient(url, actor="mcp", token="", headers=headers, transport=transport)
        try:
            yield client
        finally:
            await client.aclose()


def mount_mcp(app: FastAPI, runtime: Runtime) -> McpEndpoint:
    """Add ``/mcp`` to ``app``; the caller enters ``endpoint.lifespan()`` in the app's lifespan."""
    endpoint = McpEndpoint(app, runtime)
    app.router.routes.append(Route(PATH, endpoint, methods=["GET", "POST", "DELETE"], name="mcp"))
    return endpoint
