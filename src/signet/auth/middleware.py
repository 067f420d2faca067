"""One ASGI layer in front of every route: Host check, authentication, permission, scope,
rate limit. Routes are matched against :data:`signet.auth.policy.ROUTE_PERMISSIONS`, so a
route added later is covered (unknown routes need ``admin``) and no handler can skip it.

The outcome lands on ``request.state``: ``auth`` (:class:`AuthContext`), ``scope`` (the
caller's :class:`ReadScope`, read by every read path through ``deps.get_scope``) and
``actor`` (a token's ``sub``). MCP tool calls re-enter the app through this layer with the
caller's Authorization header and peer address (signet.mcp.http), so they get the same checks.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from typing import Any
from urllib.parse import parse_qs, urlsplit

from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from signet.asgi import NOT_JSON, BodyTooDeep, decode_json, header, read_body, replay
from signet.auth.agents import resolve_agent_id
from signet.auth.policy import role_allows, route_permission
from signet.auth.state import AuthContext, AuthState, is_loopback
from signet.auth.tokens import Claims
from signet.errors import Forbidden, InvalidRequest, RateLimited, SignetError, Unauthorized
from signet.store.scope import UNSCOPED, ReadScope

AGENT_FIELDS = ("agent_id", "agentId")
OWNER_FIELDS = frozenset((*AGENT_FIELDS, "project"))


class AuthMiddleware:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        state: AuthState = scope["app"].state.runtime.auth.synced()
        try:
            receive = await self._check(state, scope, receive)
        except SignetError as exc:
            headers = {"Retry-After": str(exc.retry_after)} if isinstance(exc, RateLimited) else {}
            if isinstance(exc, Unauthorized):
                headers["WWW-Authenticate"] = "Bearer"
            if scope["type"] == "http":
                await JSONResponse(exc.to_dict(), status_code=exc.status, headers=headers)(scope, receive, send)
            else:
                await send({"type": "websocket.close", "code": 1008})
            return
        await self.app(scope, receive, send)

    async def _check(self, st: AuthState, scope: Scope, receive: Receive) -> Receive:
        client = scope.get("client")
        peer = str(client[0]) if client else None
        if not st.host_allowed(header(scope, b"host"), peer):
            raise Forbidden("Host header is not an allowed name for this daemon", reason="host_not_allowed")
        origin = header(scope, b"origin")
        if (
            origin is not None
            and origin.rstrip("/") not in st.allowed_origins
            and not st.host_allowed(urlsplit(origin).netloc or origin, peer)
        ):
            raise Forbidden("cross-origin requests are not accepted", reason="origin_not_allowed")

        method = scope.get("method", "GET")
        permission, _template = route_permission(method, scope.get("path", "/"))
        # A loopback peer that relays for someone else (a reverse proxy on this host) is not local.
        proxied = any(header(scope, h) is not None for h in (b"x-forwarded-for", b"forwarded", b"x-real-ip"))
        local_peer = (is_loopback(peer) or peer == "testclient") and not proxied
        auth_header = header(scope, b"authorization")
        token = None
        if auth_header is not None:
            kind, _, value = auth_header.partition(" ")
            token = value.strip() if kind.lower() == "bearer" and value.strip() else None
            if token is None and st.mode != "local":
                raise Unauthorized("invalid or expired token")

        claims: Claims | None = None
        if st.mode == "local" or (st.mode == "hybrid" and local_peer and token is None):
            ctx = AuthContext(st.mode, local=True)
        else:
            if token is not None:
                claims = st.authenticate(token)
                scope.setdefault("state", {})["actor"] = claims.sub  # a refusal below is still attributed
            elif permission != "none":
                raise Unauthorized("authentication required: send Authorization: Bearer <token>")
            ctx = AuthContext(st.mode, local=False, claims=claims)
            if claims is not None and not role_allows(claims.role, permission):
                raise Forbidden(f"role '{claims.role}' lacks the '{permission}' permission")

        body: bytes | None = None
        data: Any = None
        if method in ("POST", "PATCH", "PUT", "DELETE") and scope["type"] == "http":
            body = await read_body(receive)
            try:
                decoded = decode_json(body)
            except BodyTooDeep as exc:
                raise InvalidRequest(str(exc)) from None
            data = None if decoded is NOT_JSON else decoded
        query = parse_qs(scope.get("query_string", b"").decode("latin-1"))

        if claims is not None:
            rs = self._token_scope(st, claims, data, query)
        else:
            rs = self._local_scope(st, data, query, header(scope, b"x-signet-agent"))

        if st.mode != "local" and permission not in ("none",):
            actor = claims.sub if claims is not None else (header(scope, b"x-signet-actor") or peer or "anonymous")
            wait = st.limiter.check(actor[:200], permission)
            if wait:
                raise RateLimited(f"rate limit exceeded for {permission}; retry in {wait}s", retry_after=wait)

        state = scope.setdefault("state", {})
        state["auth"] = ctx
        state["scope"] = rs
        if claims is not None:
            state["actor"] = claims.sub
        if body is None:
            return receive
        return replay(body, receive)

    def _local_scope(self, st: AuthState, data: Any, query: dict[str, list[str]], header: str | None) -> ReadScope:
        """A local caller names its agent by header, query, body field or session key."""
        agent = header or _first(query, AGENT_FIELDS)
        if agent is None and isinstance(data, dict):
            agent = next((str(data[f]) for f in AGENT_FIELDS if isinstance(data.get(f), str)), None)
            for key in ("session_key", "sessionKey", "session_id"):
                if agent is None and isinstance(data.get(key), str):
                    agent = resolve_agent_id(data[key])
        if agent is None:
            return UNSCOPED
        return st.roster.scope_for(agent)

    def _token_scope(self, st: AuthState, claims: Claims, data: Any, query: dict[str, list[str]]) -> ReadScope:
        """A scoped token's scope: its project, and its agent for every write.

        The front door refuses any owner field (``project``, ``agent_id``, ``agentId``) outside
        the scope wherever it stands in the query or the JSON body, at any depth, so a route
        added later with a new body shape cannot let one through. The memory and hook services
        check again where the rows are (the owner a write gets, the rows it may change), and
        fill the scope's own project and agent in when a write names none.
        """
        ts = claims.scope
        if claims.role == "admin" or (ts.project is None and ts.agent is None):
            return UNSCOPED
        rs = replace(st.roster.scope_for(ts.agent, ts.project), write_agent=ts.agent)
        named = [(f, v) for f in OWNER_FIELDS for v in query.get(f, [])]
        named += list(owner_fields(data))
        for field, value in named:
            if field == "project":
                rs.check_project(value)
            else:
                rs.check_agent(value)
        return rs


def owner_fields(data: Any) -> Iterator[tuple[str, str]]:
    """Every (owner field, value) pair in a decoded JSON document, at any depth.

    Iterative, so a deeply nested body cannot exhaust the stack here. Non-string values are
    given as their JSON text: an owner that is not a plain name is never in scope."""
    stack = [data]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            for key, value in node.items():
                if key in OWNER_FIELDS and value is not None:
                    yield key, value if isinstance(value, str) else json.dumps(value)
                stack.append(value)
        elif isinstance(node, list):
            stack.extend(node)


def _first(query: dict[str, list[str]], names: tuple[str, ...]) -> str | None:
    for n in names:
        if query.get(n):
            return query[n][0]
    return None
