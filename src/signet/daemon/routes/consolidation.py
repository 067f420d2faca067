"""Consolidation (docs/lifecycle.md): run (or dry-run) it, apply a dry-run's plan, list and
read runs, undo one, and a merged memory's sources."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query

from signet.daemon.deps import ActorDep, RuntimeDep, ScopeDep
from signet.models import ErrorResponse
from signet.ops.consolidation_models import (
    ConsolidateRequest,
    ConsolidationRun,
    RunList,
    SourcesResponse,
    UndoRequest,
)

router = APIRouter(
    tags=["consolidation"],
    responses={
        400: {"model": ErrorResponse},
        404: {"model": ErrorResponse},
        409: {"model": ErrorResponse},
        422: {"model": ErrorResponse},
        503: {"model": ErrorResponse},
    },
)

RunId = Annotated[str, Path(min_length=1, max_length=100)]


@router.post("/api/memory/consolidate", response_model=ConsolidationRun)
def consolidate(body: ConsolidateRequest, runtime: RuntimeDep, actor: ActorDep, scope: ScopeDep) -> ConsolidationRun:
    """Plan a consolidation run and apply it; ``dry_run`` stores the plan only, ``plan_id``
    applies a stored plan exactly (409 when a memory it touches changed since)."""
    return runtime.consolidation.consolidate(body, actor=actor, scope=scope)


@router.get("/api/consolidations", response_model=RunList)
def runs(runtime: RuntimeDep, scope: ScopeDep, limit: Annotated[int, Query(ge=1, le=500)] = 50) -> RunList:
    """Consolidation runs, newest first."""
    return runtime.consolidation.runs(scope=scope, limit=limit)


@router.get("/api/consolidations/{run_id}", response_model=ConsolidationRun)
def run(run_id: RunId, runtime: RuntimeDep, scope: ScopeDep) -> ConsolidationRun:
    """One run: its plan (exactly what was, or would be, applied) and the merged memories' ids."""
    return runtime.consolidation.get(run_id, scope=scope)


@router.post("/api/consolidations/{run_id}/undo", response_model=ConsolidationRun)
def undo(
    run_id: RunId, runtime: RuntimeDep, actor: ActorDep, scope: ScopeDep, body: UndoRequest | None = None
) -> ConsolidationRun:
    """Undo an applied run: its sources come back, its merged memories are removed."""
    return runtime.consolidation.undo(run_id, actor=actor, reason=body.reason if body else None, scope=scope)


@router.get("/api/memory/{memory_id}/sources", response_model=SourcesResponse)
def sources(memory_id: str, runtime: RuntimeDep, scope: ScopeDep) -> SourcesResponse:
    """The memories a merged memory was made from (its provenance links)."""
    return runtime.consolidation.sources(memory_id, scope=scope)
