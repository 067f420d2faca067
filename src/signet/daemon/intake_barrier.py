"""Read your writes through the remember intake (signet.memory.intake).

A remember over HTTP is answered once committed to the intake and stored as a memory a moment
later. So that no client can tell, every other API request first waits until the remembers
accepted before it arrived are stored: a recall, a list, a get of the id just returned, a
modify or forget of it, an export all see them. The wait is nothing when nothing waits (one
comparison), and the intake stores at once when someone waits, burst or not.

Not held back: the remember itself (a burst of them must not queue behind each other), the
health and status probes (they report the intake's progress), and the pages and files of the
dashboard and the API docs. After ``memory.intake.read_wait_s`` a request is served anyway and its
answer says how many accepted remembers it may not see, in ``X-Signet-Intake-Pending``.
"""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from signet.runtime import Runtime

PENDING_HEADER = b"x-signet-intake-pending"

_NOT_HELD = frozenset({"/api/memory/remember", "/api/status", "/health", "/", "/docs", "/redoc", "/openapi.json"})
_FILES = ("/dashboard/", "/docs/")


class IntakeBarrier:
    def __init__(self, app: ASGIApp, runtime: Runtime) -> None:
        self.app = app
        self.runtime = runtime

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        intake = self.runtime.intake
        if intake is None or scope["type"] != "http" or not intake.pending:
            await self.app(scope, receive, send)
            return
        path = str(scope.get("path", ""))
        if path in _NOT_HELD or path.startswith(_FILES):
            await self.app(scope, receive, send)
            return
        missing = await intake.settled(self.runtime.settings.memory.intake.read_wait_s)
        if not missing:
            await self.app(scope, receive, send)
            return

        async def send_marked(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = [*message.get("headers", []), (PENDING_HEADER, str(missing).encode("ascii"))]
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, send_marked)
