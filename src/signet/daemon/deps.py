"""FastAPI dependencies shared by every router.

They are ``async def`` on purpose: they only read request state, and FastAPI runs a plain
``def`` dependency on the worker thread pool, one thread hop per dependency per request
(three on a remember). Measured: docs/benchmarks.md, latency.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Header, Request

from signet.auth.state import AuthContext, is_loopback
from signet.runtime import Runtime
from signet.store.scope import UNSCOPED, ReadScope


async def get_runtime(request: Request) -> Runtime:
    runtime: Runtime = request.app.state.runtime
    return runtime


ACTOR_MAX = 200
"""Longest ``X-Signet-Actor`` accepted (a longer one is a 422)."""


def scope_from(value: object) -> ReadScope:
    """The read scope the auth middleware stored (``state.scope``), or none: unscoped."""
    return value if isinstance(value, ReadScope) else UNSCOPED


def actor_from(value: object, header: str | None) -> str:
    """Who is changing things: a token's subject (``state.actor``), else the header, else ``api``."""
    if isinstance(value, str) and value:
        return value
    return header or "api"


async def get_scope(request: Request) -> ReadScope:
    """The caller's read scope; auth middleware stores it on ``request.state.scope``."""
    return scope_from(getattr(request.state, "scope", None))


async def get_actor(
    request: Request, x_signet_actor: Annotated[str | None, Header(max_length=ACTOR_MAX)] = None
) -> str:
    """Who is changing things, for ``memory_history.changed_by``."""
    return actor_from(getattr(request.state, "actor", None), x_signet_actor)


PROXY_HEADERS = ("x-forwarded-for", "forwarded", "x-real-ip")


async def get_local_admin(request: Request) -> bool:
    """Whether the caller may have the daemon read this machine's files (a document path, a
    connector's folder): a loopback peer not relayed by a proxy that is local in the auth sense
    (local mode, or hybrid without a token) or holds an admin token."""
    peer = request.client.host if request.client is not None else None
    if not (is_loopback(peer) or peer == "testclient") or any(h in request.headers for h in PROXY_HEADERS):
        return False
    ctx = getattr(request.state, "auth", None)
    if not isinstance(ctx, AuthContext):
        return False
    return ctx.local or (ctx.claims is not None and ctx.claims.role == "admin")


RuntimeDep = Annotated[Runtime, Depends(get_runtime)]
ScopeDep = Annotated[ReadScope, Depends(get_scope)]
ActorDep = Annotated[str, Depends(get_actor)]
LocalAdminDep = Annotated[bool, Depends(get_local_admin)]
