"""Refuse requests meant for another workspace's daemon.

Clients on this machine (CLI, hook command, SDK, MCP server) send ``X-Signet-Workspace``, a
digest of the workspace they work in (signet.instance). A daemon that serves a different
workspace answers 409 ``wrong_workspace`` before anything runs, so when two workspaces' daemons
are confused over a port, one workspace's memories are never written into the other's. A
request without the header (curl, a browser, a remote team client) is served as before.
"""

from __future__ import annotations

import json

from starlette.types import ASGIApp, Receive, Scope, Send

from signet.asgi import header
from signet.instance import WORKSPACE_HEADER, is_loopback, workspace_digest
from signet.runtime import Runtime

_NAME = WORKSPACE_HEADER.lower().encode("latin-1")


class WorkspaceGuard:
    def __init__(self, app: ASGIApp, runtime: Runtime) -> None:
        self.app = app
        self.runtime = runtime
        self.root = str(runtime.workspace.root.expanduser().resolve())
        self.digest = workspace_digest(runtime.workspace.root)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            claimed = header(scope, _NAME)
            if claimed is not None and claimed != self.digest:
                await self._refuse(scope, send)
                return
        await self.app(scope, receive, send)

    async def _refuse(self, scope: Scope, send: Send) -> None:
        client = scope.get("client") or ("", 0)
        # The path is named only to callers who could read it from /api/status without a token:
        # loopback callers in local and hybrid mode. In team mode /api/status needs a token, so
        # an anonymous caller learns no more here than from /health ("another workspace").
        local = is_loopback(str(client[0])) and self.runtime.auth.mode != "team"
        body: dict[str, object] = {
            "error": f"this daemon serves {'workspace ' + self.root if local else 'another workspace'}, not the "
            "caller's; use --port or SIGNET_PORT to reach your workspace's daemon",
            "code": "wrong_workspace",
        }
        if local:
            body["workspace"] = self.root
        data = json.dumps(body).encode("utf-8")
        await send(
            {
                "type": "http.response.start",
                "status": 409,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(data)).encode("ascii")),
                ],
            }
        )
        await send({"type": "http.response.body", "body": data})
