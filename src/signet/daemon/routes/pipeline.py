"""Pipeline endpoints: status, job inspection, requeue and lease release."""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query
from pydantic import BaseModel, Field

from signet.continuity import summary_queue
from signet.daemon.deps import RuntimeDep
from signet.daemon.routes.repair import CallerDep
from signet.errors import NotFound
from signet.models import ErrorResponse, StrictModel
from signet.pipeline import queue
from signet.store.ids import complete_id

router = APIRouter(
    tags=["pipeline"],
    responses={400: {"model": ErrorResponse}, 404: {"model": ErrorResponse}, 422: {"model": ErrorResponse}},
)

JobStatus = Literal["pending", "leased", "waiting_for_provider", "waiting_for_budget", "completed", "failed", "dead"]


class JobView(BaseModel):
    id: str
    job_type: str
    status: str
    memory_id: str | None
    payload: dict[str, Any] | None
    result: dict[str, Any] | None
    attempts: int
    max_attempts: int
    error: str | None
    leased_at: str | None
    completed_at: str | None
    failed_at: str | None
    created_at: str
    updated_at: str


class JobList(BaseModel):
    items: list[JobView]
    total: int


class RequeueRequest(StrictModel):
    limit: int = Field(50, ge=1, le=1000)
    job_id: str | None = Field(
        None, max_length=200, description="requeue just this dead job (an extraction or a session-summary job)"
    )


class RequeueResponse(BaseModel):
    requeued: list[str]
    count: int


class ReleaseResponse(BaseModel):
    released: int


def _json(raw: str | None) -> dict[str, Any] | None:
    if not raw:
        return None
    try:
        val = json.loads(raw)
    except ValueError:
        return {"unparseable": raw[:500]}
    return val if isinstance(val, dict) else {"value": val}


def _view(r: Any) -> JobView:
    return JobView(
        id=r["id"],
        job_type=r["job_type"],
        status=r["status"],
        memory_id=r["memory_id"],
        payload=_json(r["payload"]),
        result=_json(r["result"]),
        attempts=r["attempts"],
        max_attempts=r["max_attempts"],
        error=r["error"],
        leased_at=r["leased_at"],
        completed_at=r["completed_at"],
        failed_at=r["failed_at"],
        created_at=r["created_at"],
        updated_at=r["updated_at"],
    )


class ProviderStatus(BaseModel):
    name: str
    model: str | None = Field(description="null: the provider's own default (a harness CLI's configured model)")
    endpoint: str | None
    command: str | None = Field(None, description="the harness CLI run (claude-code, codex, opencode)")
    timeout_s: float
    healthy: bool | None
    error: str | None
    calls: dict[str, Any] | None = Field(
        None, description="last 100 calls: outcomes, success_rate, p50_latency_ms, last_outcome, last_error"
    )
    budget: dict[str, Any] | None = Field(
        None,
        description="use against limits: calls_per_hour, calls_per_day, tokens_per_hour, tokens_per_day, "
        "concurrency ({used, limit}), refused, last_refusal",
    )
    reloads: int = Field(0, description="times agent.yaml changed the provider or its budgets since the start")


class QueueStatus(BaseModel):
    by_status: dict[str, int]
    by_type: dict[str, dict[str, int]]
    oldest_pending: str | None
    oldest_pending_age_s: float | None
    waiting: int = Field(0, description="jobs waiting_for_provider or waiting_for_budget")
    dead: int
    last_error: str | None


class WorkerStatus(BaseModel):
    threads: int
    processed: int
    failed: int
    consecutive_failures: int
    backoff_s: float
    last_error: str | None
    leased_now: list[str]
    waiting: dict[str, str] | None = Field(None, description="what the workers last found blocking them")


class PipelineStatus(BaseModel):
    state: Literal["running", "waiting", "backoff", "degraded", "disabled"]
    reason: str | None = Field(description="why the pipeline waits or backs off, and what to do about it")
    waiting_for: Literal["waiting_for_provider", "waiting_for_budget"] | None = Field(
        None, description="the status LLM jobs wait in now (no provider, an unreachable one, a spent budget)"
    )
    mode: Literal["controlled", "shadow", "frozen", "disabled"]
    flags: dict[str, Any]
    provider: ProviderStatus
    queue: QueueStatus
    worker: WorkerStatus


@router.get("/api/pipeline/status", response_model=PipelineStatus)
def pipeline_status(runtime: RuntimeDep) -> PipelineStatus:
    """Queue depth by status and type, oldest pending age, dead count, provider health, flags, and why
    the pipeline waits when it does."""
    return PipelineStatus.model_validate(runtime.pipeline.status())


@router.get("/api/pipeline/jobs", response_model=JobList)
def list_jobs(
    runtime: RuntimeDep,
    status: Annotated[JobStatus | None, Query()] = None,
    job_type: Annotated[Literal["extract", "document_ingest"] | None, Query()] = None,
    memory_id: Annotated[str | None, Query(max_length=200)] = None,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
    offset: Annotated[int, Query(ge=0, le=1_000_000_000)] = 0,
) -> JobList:
    """Jobs, newest first, filtered by status, type or memory."""
    total, rows = runtime.db.read(
        lambda c: queue.list_jobs(c, status=status, job_type=job_type, memory_id=memory_id, limit=limit, offset=offset)
    )
    return JobList(items=[_view(r) for r in rows], total=total)


@router.get("/api/pipeline/jobs/{job_id}", response_model=JobView)
def get_job(job_id: str, runtime: RuntimeDep) -> JobView:
    """One job with its payload, result (counts, warnings, writes) and last error; a unique
    prefix of its id will do."""
    row = runtime.db.read(lambda c: queue.get_job(c, complete_id(c, "memory_jobs", job_id, noun="job")))
    if row is None:
        raise NotFound(f"job '{job_id}' not found", id=job_id)
    return _view(row)


@router.post("/api/repair/requeue-dead", response_model=RequeueResponse)
def requeue_dead(runtime: RuntimeDep, caller: CallerDep, body: RequeueRequest | None = None) -> RequeueResponse:
    """Dead-letter jobs back to pending with attempts reset (at most ``limit``, default 50); through
    the repair gate (signet.ops.repairs)."""
    req = body or RequeueRequest()
    job_id = req.job_id
    if job_id is not None:
        given = job_id
        extraction_id = runtime.db.read(lambda c: complete_id(c, "memory_jobs", given, noun="job"))
        job_id = extraction_id
        if runtime.db.read(lambda c: queue.get_job(c, extraction_id)) is None:
            # Not an extraction job: a session-summary job (their own queue) may have that id.
            summary_id = runtime.db.read(lambda c: complete_id(c, "summary_jobs", given, noun="job"))
            if runtime.db.read(lambda c: summary_queue.get_job(c, summary_id)) is None:
                raise NotFound(f"job '{given}' not found", id=given)
            job_id = summary_id
    ids = runtime.maintenance.repairs.run("requeue-dead", caller, limit=req.limit, job_id=job_id).data
    return RequeueResponse(requeued=ids, count=len(ids))


@router.post("/api/repair/release-leases", response_model=ReleaseResponse)
def release_leases(runtime: RuntimeDep, caller: CallerDep) -> ReleaseResponse:
    """Leases older than ``leaseTimeoutMs`` back to pending (what the reaper does every 60 s); through
    the repair gate."""
    return ReleaseResponse(released=runtime.maintenance.repairs.run("release-leases", caller).data)
