"""A memory's later life (docs/lifecycle.md): splitting a reinforcement back out, the
retirement ledger, and signals with per-consumer watermarks."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from signet.daemon.deps import ActorDep, RuntimeDep, ScopeDep
from signet.models import (
    ErrorResponse,
    Retirement,
    RetirementList,
    SignalAckRequest,
    SignalAckResponse,
    SignalsResponse,
    SplitRequest,
    SplitResponse,
    UnretireRequest,
    UnretireResponse,
)
from signet.store import lifecycle

router = APIRouter(
    tags=["lifecycle"],
    responses={
        400: {"model": ErrorResponse},
        404: {"model": ErrorResponse},
        409: {"model": ErrorResponse},
        422: {"model": ErrorResponse},
    },
)


@router.post("/api/memory/{memory_id}/split", response_model=SplitResponse)
def split(memory_id: str, body: SplitRequest, runtime: RuntimeDep, actor: ActorDep, scope: ScopeDep) -> SplitResponse:
    """Undo one reinforcement: its wording becomes a memory of its own."""
    return runtime.service.split(
        memory_id, body.event_id, reason=body.reason, changed_by=body.changed_by or actor, scope=scope
    )


@router.post("/api/memory/{memory_id}/unretire", response_model=UnretireResponse)
def unretire(
    memory_id: str, body: UnretireRequest, runtime: RuntimeDep, actor: ActorDep, scope: ScopeDep
) -> UnretireResponse:
    """Take a retired memory's text out of the ledger: later writes of it are stored again."""
    return runtime.service.unretire(memory_id, reason=body.reason, changed_by=body.changed_by or actor, scope=scope)


@router.get("/api/retirements", response_model=RetirementList)
def retirements(
    runtime: RuntimeDep,
    scope: ScopeDep,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
) -> RetirementList:
    """The retirement ledger, oldest first (the texts no write brings back)."""
    rows = runtime.db.read(lifecycle.retirements)
    # A ledger row is private to its owner: shown to an unscoped caller or to its own agent.
    owned = [r for r in rows if scope.allows({**dict(r), "project": r["project"] or None, "visibility": "private"})]
    items = [
        Retirement(
            content_hash=r["content_hash"],
            agent_id=r["agent_id"],
            project=r["project"] or None,
            memory_id=r["memory_id"],
            content=r["content"],
            reason=r["reason"],
            retired_by=r["retired_by"],
            retired_at=r["retired_at"],
        )
        for r in owned
    ]
    return RetirementList(items=items[:limit], total=len(items))


@router.get("/api/signals", response_model=SignalsResponse)
def signals(
    runtime: RuntimeDep,
    scope: ScopeDep,
    consumer: Annotated[str, Query(min_length=1, max_length=400)],
    limit: Annotated[int, Query(ge=1, le=200)] = 20,
) -> SignalsResponse:
    """The consumer's pending signals (important new memories); acknowledge with ``POST /api/signals/ack``."""
    return runtime.service.signals.peek(consumer, scope=scope, limit=limit)


@router.post("/api/signals/ack", response_model=SignalAckResponse)
def ack_signals(body: SignalAckRequest, runtime: RuntimeDep) -> SignalAckResponse:
    """Advance the consumer's watermark to ``cursor``: the signals up to it are not given again."""
    return runtime.service.signals.ack(body.consumer, body.cursor)
