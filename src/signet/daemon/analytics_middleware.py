"""Per-request analytics: one counter bump and one histogram insert per request.

Sits inside the catch-all (so a request whose handler raised is counted as the 500 it becomes)
and outside auth (so 401/403/429 refusals count too). The route is the template from the
permission table (``GET /api/memory/{memory_id}``), never the raw path, so the counters stay
bounded whatever paths callers send; paths no route matches share one ``(unmatched)`` row.

Error responses that belong in the error ring are read from their JSON body (only those: a
mutation's 409 or scope refusal, any 5xx), at most :data:`BODY_PEEK` bytes of it; successful
answers are passed through untouched. No lock is held across an await: the analytics record
happens after the response has been sent.
"""

from __future__ import annotations

import functools
import json
import time
from typing import Any, Final

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from signet.auth.policy import ROUTE_PERMISSIONS, route_permission
from signet.ops.analytics import Analytics, current_route
from signet.store.scope import ReadScope

BODY_PEEK: Final = 4096
UNMATCHED: Final = "(unmatched)"
_TEMPLATES: Final = frozenset(path for _, path in ROUTE_PERMISSIONS)
_METHODS: Final = frozenset(("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"))
_KIND_OF: Final = {
    "remember": "remember",
    "recall": "recall",
    "modify": "mutate",
    "forget": "mutate",
    "recover": "mutate",
}


@functools.lru_cache(maxsize=512)
def _route(method: str, template: str, permission: str) -> tuple[str, str]:
    """(route key, kind) for a matched route; the cache holds at most one entry per route."""
    kind = "other" if template == "/mcp" else _KIND_OF.get(permission, "other")  # /mcp's tool calls re-enter
    return f"{method} {template}", kind


def classify(method: str, path: str) -> tuple[str, str]:
    """The route key (``METHOD /template``) and kind (remember / recall / mutate / other)."""
    permission, template = route_permission(method, path)
    if template not in _TEMPLATES:
        return UNMATCHED, "other"
    return _route(method if method in _METHODS else "*", template, permission)


def actor_of(state: dict[str, Any]) -> str:
    """A token's subject, else the agent a local caller named, else ``local``."""
    actor = state.get("actor")
    if isinstance(actor, str) and actor:
        return actor[:200]
    scope = state.get("scope")
    if isinstance(scope, ReadScope) and scope.agent_id != "default":
        return scope.agent_id[:200]
    return "local"


def _error_fields(body: bytes) -> dict[str, Any]:
    try:
        data = json.loads(body)
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


class AnalyticsMiddleware:
    def __init__(self, app: ASGIApp, analytics: Analytics) -> None:
        self.app = app
        self.analytics = analytics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        method = scope.get("method", "GET")
        route, kind = classify(method, scope.get("path", "/"))
        status = 500  # the handler raised before answering (the catch-all outside answers 500)
        peek: bytearray | None = None
        raised: str | None = None

        async def tracked(message: Message) -> None:
            nonlocal status, peek
            if message["type"] == "http.response.start":
                status = int(message["status"])
                if status >= 500 or (status in (403, 409) and kind in ("mutate", "remember")):
                    peek = bytearray()
            elif peek is not None and message["type"] == "http.response.body" and len(peek) < BODY_PEEK:
                peek += message.get("body", b"")[: BODY_PEEK - len(peek)]
            await send(message)

        token = current_route.set(route)
        started = time.perf_counter()
        try:
            await self.app(scope, receive, tracked)
        except Exception as exc:
            raised = type(exc).__name__
            raise
        finally:
            current_route.reset(token)
            ms = (time.perf_counter() - started) * 1000
            actor = actor_of(scope.get("state") or {})
            self.analytics.record_request(route, kind, actor, status, ms)
            if peek is not None or raised is not None:
                self._record_error(route, actor, status, bytes(peek or b""), raised)

    def _record_error(self, route: str, actor: str, status: int, body: bytes, raised: str | None) -> None:
        fields = _error_fields(body)
        code = str(fields.get("code") or "")
        message = str(fields.get("error") or "")
        memory_id = fields.get("id") if isinstance(fields.get("id"), str) else None
        if code in ("mutations_frozen", "wrong_workspace"):
            return  # refusals by configuration, not failures
        if status >= 500 or raised is not None:
            what = f"unhandled {raised}" if raised is not None else f"{code}: {message}"
            self.analytics.record_error("HTTP_SERVER_ERROR", f"{status} {what}", actor=actor, route=route)
        elif status == 409:
            self.analytics.record_error(
                "MUTATION_CONFLICT", f"{code}: {message}", memory_id=memory_id, actor=actor, route=route
            )
        elif fields.get("reason") == "scope_mismatch":
            self.analytics.record_error("MUTATION_SCOPE_DENIED", message, memory_id=memory_id, actor=actor, route=route)
