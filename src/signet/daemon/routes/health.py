"""Liveness and status."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from signet.daemon.deps import RuntimeDep
from signet.instance import CHALLENGE_MAX, proof
from signet.models import CaptureStatus, ErrorResponse, HealthResponse, LlmStatus, StatusResponse, StoreStatus

router = APIRouter(tags=["status"])

Challenge = Annotated[
    str | None,
    Query(
        max_length=CHALLENGE_MAX,
        pattern="^[0-9a-fA-F]+$",
        description="Random hex; the answer's proof shows this is the workspace's own daemon",
    ),
]


@router.get(
    "/health",
    response_model=HealthResponse,
    response_model_exclude_none=True,
    responses={422: {"model": ErrorResponse}},
)
def health(runtime: RuntimeDep, challenge: Challenge = None) -> HealthResponse:
    """Answers once the app is built (the embedding model loads in the background); before
    that, from the moment the daemon listens, the boot shell answers ``starting`` with the same
    proof and validation (signet.daemon.boot).

    Public, so it says only ``ok`` or ``degraded``; with ``?challenge=`` it adds the proof
    that clients check before they trust this address (signet.instance). It also asks the
    maintenance worker to look again when its last look is stale (signet.ops.maintenance), so
    a stuck queue or a drifted index shows here within a poll or two."""
    runtime.maintenance.poke()
    problems = runtime.condition.problems()
    inst = runtime.instance
    return HealthResponse(
        status="degraded" if problems else "ok",
        proof=proof(inst.secret, challenge) if challenge and inst is not None else None,
        reasons=sorted(problems.values()) if problems and runtime.auth.mode == "local" else None,
    )


@router.get("/api/status", response_model=StatusResponse)
def status(runtime: RuntimeDep) -> StatusResponse:
    """Version, uptime, memory counts, embedding coverage, whether vector search is on, and
    the store (SQLite file or PostgreSQL server, with its connection pool);
    its warnings include what made /health degraded (disk full, damaged database, faults the
    maintenance worker diagnosed)."""
    runtime.maintenance.poke()
    store = StoreStatus.model_validate(runtime.db.describe())
    st = runtime.service.status(str(runtime.workspace.root), store.location)
    st.store = store
    st.warnings = [*runtime.condition.problems().values(), *st.warnings]
    st.llm = LlmStatus.model_validate(runtime.pipeline.brief())
    st.capture = CaptureStatus.model_validate(runtime.capture.status())
    return st
