"""FastAPI dependencies shared by every router.

They are ``async def`` on purpose: they only read request state, and FastAPI runs a plain
``def`` dependency on the worker thread pool, one thread hop per dependency per request
(three on a remember). Measured: docs/benchmarks.md, latency.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Header, Request

from signet.daemon.runtime import Runtime
from signet.memory.scope import UNSCOPED, ReadScope


async def get_runtime(request: Request) -> Runtime:
    runtime: Runtime = request.app.state.runtime
    return runtime


async def get_scope(request: Request) -> ReadScope:
    """The caller's read scope; auth middleware stores it on ``request.state.scope``."""
    scope = getattr(request.state, "scope", None)
    return scope if isinstance(scope, ReadScope) else UNSCOPED


async def get_actor(
    request: Request, x_signet_actor: Annotated[str | None, Header(max_length=200)] = None
) -> str:
    """Who is changing things, for ``memory_history.changed_by``."""
    actor = getattr(request.state, "actor", None)
    if isinstance(actor, str) and actor:
        return actor
    return x_signet_actor or "api"


RuntimeDep = Annotated[Runtime, Depends(get_runtime)]
ScopeDep = Annotated[ReadScope, Depends(get_scope)]
ActorDep = Annotated[str, Depends(get_actor)]
