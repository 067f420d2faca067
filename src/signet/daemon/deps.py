"""FastAPI dependencies shared by every router."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Header, Request

from signet.daemon.runtime import Runtime
from signet.memory.scope import UNSCOPED, ReadScope


def get_runtime(request: Request) -> Runtime:
    runtime: Runtime = request.app.state.runtime
    return runtime


def get_scope(request: Request) -> ReadScope:
    """The caller's read scope; auth middleware stores it on ``request.state.scope``."""
    scope = getattr(request.state, "scope", None)
    return scope if isinstance(scope, ReadScope) else UNSCOPED


def get_actor(
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
