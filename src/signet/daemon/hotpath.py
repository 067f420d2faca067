"""A lean ASGI path for the two hottest routes: ``POST /api/memory/remember`` and ``/recall``.

Importers, capture hooks and the pipeline send remembers in bursts, and a remember does
little work of its own (validate, queue the write, await the group commit): FastAPI's
request machinery around it (router matching, dependency solving with its cache keys and
query parsing, response-model validation, the wrapped senders) cost the event loop more
than the remember itself (docs/benchmarks.md, latency: remember throughput). The event loop
shares one GIL with the SQLite writer thread, so that overhead capped throughput. A recall
paid 0.5-0.9 ms of it at p50 (in-process, alternating rounds of 300 recalls).

This layer sits *inside* the auth middleware (Host check, tokens, permissions, scope and
actor are settled before it runs) and in front of the router. It serves only the happy
path, with the route's own handler (:func:`signet.daemon.routes.memory.remember`,
:func:`~signet.daemon.routes.memory.recall`), the same request model validated the way FastAPI validates it (``json.loads`` then the model in
Python mode) and the same response model. Anything unusual - another content type, a body
that does not validate, an over-long ``X-Signet-Actor`` - is handed to the FastAPI route
unchanged, so every error keeps exactly the answer the documented route gives. The routes
stay the contract: they are what OpenAPI documents and what the fallback runs.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, ValidationError
from starlette.types import ASGIApp, Receive, Scope, Send

from signet.asgi import NOT_JSON, BodyTooDeep, decode_json, header, read_body, replay
from signet.daemon.deps import ACTOR_MAX, actor_from, scope_from
from signet.daemon.errors import signet_error_response
from signet.errors import SignetError
from signet.models import RecallRequest, RememberRequest

REMEMBER = "/api/memory/remember"
RECALL = "/api/memory/recall"
MODELS: dict[str, type[RememberRequest] | type[RecallRequest]] = {REMEMBER: RememberRequest, RECALL: RecallRequest}


def _route_path(scope: Scope) -> str:
    """The path the router matches: ``path`` without the ``root_path`` prefix (as Starlette does)."""
    path: str = scope["path"]
    root: str = scope.get("root_path", "")
    return path[len(root) :] if root and path.startswith(root) else path


_JSON_MEDIA = re.compile(r"application/(?:[a-z0-9.!#$&^_-]+\+)?json")


def _json_content_type(value: str | None) -> bool:
    """What the route parses as JSON: ``application/json`` or ``application/*+json``.

    FastAPI's routes are strict about it: a body without a content type is not JSON to them
    (a 422), so it is not here either. Anything unusual is left to the route (False).
    """
    if not value:
        return False
    media = value.split(";", 1)[0].strip().lower()
    return _JSON_MEDIA.fullmatch(media) is not None


def parse(
    model: type[RememberRequest] | type[RecallRequest],
    body: bytes,
    content_type: str | None,
    decoded: Any = None,
) -> RememberRequest | RecallRequest | None:
    """The request as the route would validate it, or None when the route must answer instead.

    ``decoded``: the body as the auth middleware already decoded it (decoded once)."""
    if not body or not _json_content_type(content_type):
        return None
    if decoded is None:
        try:
            decoded = decode_json(body)
        except BodyTooDeep:
            return None  # the route answers (the auth middleware refuses such bodies first)
    if decoded is NOT_JSON:
        return None
    data = decoded
    if not isinstance(data, dict):
        return None
    try:
        return model.model_validate(data)
    except ValidationError:
        return None


class HotPath:
    """ASGI middleware: serve valid remember and recall requests without the router."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        model = MODELS.get(_route_path(scope)) if scope["type"] == "http" and scope["method"] == "POST" else None
        if model is None:
            await self.app(scope, receive, send)
            return
        actor_header = header(scope, b"x-signet-actor")
        body = await read_body(receive)
        seen = scope.get("state", {}).get("json_body")  # decoded by the auth middleware for this very body
        decoded = seen[1] if seen is not None and seen[0] == body else None
        req = parse(model, body, header(scope, b"content-type"), decoded)
        if req is None or (actor_header is not None and len(actor_header) > ACTOR_MAX):
            await self.app(scope, replay(body, receive), send)
            return
        await self._serve(scope, receive, send, req, actor_header)

    async def _serve(
        self,
        scope: Scope,
        receive: Receive,
        send: Send,
        req: RememberRequest | RecallRequest,
        actor_header: str | None,
    ) -> None:
        from signet.daemon.routes.memory import recall, remember

        state: dict[str, Any] = scope.get("state", {})
        read_scope = scope_from(state.get("scope"))
        actor = actor_from(state.get("actor"), actor_header)
        runtime = scope["app"].state.runtime
        resp: BaseModel
        try:
            if isinstance(req, RememberRequest):
                resp = await remember(req, runtime, actor, read_scope)
            else:
                resp = await recall(req, runtime, read_scope)
        except SignetError as exc:
            await signet_error_response(exc)(scope, receive, send)
            return
        payload = resp.model_dump_json().encode()
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [(b"content-length", str(len(payload)).encode()), (b"content-type", b"application/json")],
            }
        )
        await send({"type": "http.response.body", "body": payload})
