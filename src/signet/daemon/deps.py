"""FastAPI dependencies shared by every router.

They are ``async def`` on purpose: they only read request state, and FastAPI runs a plain
``def`` dependency on the worker thread pool, one thread hop per dependency per request
(three on a remember). Measured: docs/benchmarks.md, latency.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Header, Request

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


RuntimeDep = Annotated[Runtime, Depends(get_runtime)]
ScopeDep = Annotated[ReadScope, Depends(get_scope)]
ActorDep = Annotated[str, Depends(get_actor)]
