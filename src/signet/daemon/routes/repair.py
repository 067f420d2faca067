"""Operator repair actions, the repair audit trail and the maintenance worker.

Every action that can change something goes through ``runtime.maintenance.repairs``: the gate
(frozen, cooldown, hourly budget: 429 with ``Retry-After``) and one audit row per request, run
or refused (signet.ops.repairs). Reads (embedding gaps, duplicate statistics, a keyword index
check without ``repair``, dry runs) are not gated.
"""

from __future__ import annotations

from dataclasses import asdict
from datetime import datetime
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Header, Query, Request
from pydantic import BaseModel, Field

from signet.daemon.deps import ACTOR_MAX, RuntimeDep, ScopeDep, actor_from
from signet.errors import InvalidRequest
from signet.models import ErrorResponse, StrictModel
from signet.ops import dedup, orphans, repair_audit, repairs
from signet.ops.repairs import Caller, DedupOutcome, FtsOutcome
from signet.store.records import to_iso

router = APIRouter(tags=["repair"], responses={422: {"model": ErrorResponse}})


async def caller_of(
    request: Request, x_signet_actor: Annotated[str | None, Header(max_length=ACTOR_MAX)] = None
) -> Caller:
    """Who asks for a repair: a token's subject (an ``agent`` role is an agent), else a local
    operator named by ``X-Signet-Actor``."""
    auth = getattr(request.state, "auth", None)
    claims = getattr(auth, "claims", None)
    role = getattr(claims, "role", None)
    actor = actor_from(getattr(request.state, "actor", None), x_signet_actor)
    return Caller(actor, "agent" if role in ("agent", "readonly") else "operator")


CallerDep = Annotated[Caller, Depends(caller_of)]

Action = Literal[
    "release-leases", "requeue-dead", "check-fts", "retention-sweep", "re-embed", "clean-orphans", "deduplicate"
]
"""The gated actions (signet.ops.repair_gate.ACTIONS), for the audit filter."""


class SweepResponse(BaseModel):
    graph_links: int
    orphaned_entities: int
    embeddings: int
    tombstones: int
    jobs_of_purged: int = 0
    history: int
    completed_jobs: int
    dead_jobs: int
    keyword_log: int = Field(0, description="keyword change-log entries trimmed (the newest are kept)")
    pages_reclaimed: int = Field(0, description="database pages given back to the file system")


class FtsCheckRequest(StrictModel):
    repair: bool = Field(False, description="rebuild both keyword indexes when the check finds them inconsistent")
    force: bool = Field(
        False,
        description="rebuild both keyword indexes whatever the check finds: for drift the check cannot see, "
        "such as a memory's stale thread context in memories_ctx_fts (same row counts, intact FTS5 index)",
    )


class FtsCheckResponse(BaseModel):
    memories: int
    indexed: int = Field(description="rows in memories_fts (content only: the legacy keyword-only search)")
    context_indexed: int = Field(
        description="rows in memories_ctx_fts (content + thread context: recall's keyword leg)"
    )
    consistent: bool
    rebuilt: bool = Field(description="whether this call rebuilt the indexes")


class EmbeddingGapsResponse(BaseModel):
    pending: int
    provider: str
    model: str
    state: str
    requeued: int = Field(0, description="memories marked embedded whose vector was gone, queued again (re-embed)")


class OrphansRequest(StrictModel):
    dry_run: bool = Field(False, description="count the orphaned rows, remove nothing")


class OrphansResponse(BaseModel):
    dry_run: bool
    rows: dict[str, int] = Field(description="orphaned rows by kind: found (dry run) or removed")
    total: int


class DuplicateView(BaseModel):
    id: str
    similarity: float
    pinned: bool
    preview: str


class SurvivorView(BaseModel):
    id: str
    preview: str


class ClusterView(BaseModel):
    survivor: SurvivorView
    agent_id: str
    project: str | None
    duplicates: list[DuplicateView]


class DedupStatsResponse(BaseModel):
    threshold: float
    scanned: int = Field(description="live memories with a vector compared (the newest, up to limit)")
    truncated: bool = Field(description="more memories exist than were scanned")
    clusters: int
    duplicates: int = Field(description="memories that would be merged into a survivor")
    groups: list[ClusterView] = Field(description="the largest clusters (at most 50)")


Threshold = Annotated[float | None, Query(ge=0.5, le=1.0, description="cosine; default repair.dedupSemanticThreshold")]
ScanLimit = Annotated[int, Query(ge=2, le=50_000, description="newest live memories compared")]


class DeduplicateRequest(StrictModel):
    threshold: float | None = Field(None, ge=0.5, le=1.0, description="cosine; default repair.dedupSemanticThreshold")
    dry_run: bool = Field(False, description="say what would be merged, merge nothing")
    limit: int | None = Field(None, ge=1, le=1000, description="merges in this call (at most repair.dedupBatchSize)")
    scan_limit: int = Field(5000, ge=2, le=50_000, description="newest live memories compared")


class MergedView(BaseModel):
    id: str
    survivor: str
    similarity: float


class DeduplicateResponse(BaseModel):
    dry_run: bool
    threshold: float
    scanned: int
    merged: list[MergedView] = Field(description="merged (or, in a dry run, to be merged): each recoverable")
    count: int
    remaining: int = Field(description="near-duplicates found but not merged in this call (batch limit, pinned)")


class AuditEntryView(BaseModel):
    id: int
    at: str
    action: str
    actor: str
    actor_type: str
    outcome: str
    details: dict[str, Any]


class AuditResponse(BaseModel):
    items: list[AuditEntryView]
    count: int


class PlannedRepairView(BaseModel):
    action: str
    domain: str
    finding: str
    signal: float
    params: dict[str, Any]
    status: str = Field(description="planned, done, noop, refused, failed or halted")
    result: str | None
    retry_after: int | None


class CycleView(BaseModel):
    at: str
    mode: str
    actor: str
    duration_ms: float
    score_before: float
    score_after: float
    domains_before: dict[str, float]
    domains_after: dict[str, float]
    plan: list[PlannedRepairView]


class TrackView(BaseModel):
    action: str
    domain: str
    strikes: int
    halted: bool
    halted_at: str | None
    finding: str
    ran: bool
    score_before: float
    signal_before: float
    history: list[dict[str, Any]]


class MaintenanceStatus(BaseModel):
    enabled: bool
    frozen: bool
    mode: str
    interval_ms: int
    scheduled: bool = Field(description="the interval timer runs (enabled and not frozen)")
    next_cycle_in_s: float | None
    cycles: int
    last_error: str | None
    last_cycle: CycleView | None
    halted: list[TrackView]
    tracking: list[TrackView]
    gate: dict[str, Any] = Field(description="per caller kind and action: runs in the last hour, budget, next in")


class MaintenanceRunRequest(StrictModel):
    mode: Literal["observe", "execute"] | None = Field(None, description="default: autonomous.maintenanceMode")


@router.post("/api/repair/retention-sweep", response_model=SweepResponse)
def retention_sweep(runtime: RuntimeDep, caller: CallerDep) -> SweepResponse:
    """Run the retention sweep now (tombstones, history, old jobs), in the mandatory order."""
    result = runtime.maintenance.repairs.run("retention-sweep", caller)
    return SweepResponse(**result.data)


@router.post("/api/repair/check-fts", response_model=FtsCheckResponse)
def check_fts(runtime: RuntimeDep, caller: CallerDep, body: FtsCheckRequest | None = None) -> FtsCheckResponse:
    """Compare both keyword indexes with the memories table; ``repair`` rebuilds them when they differ,
    ``force`` rebuilds them in any case (both gated; a plain check is a read)."""
    req = body or FtsCheckRequest()
    if req.repair or req.force:
        result = runtime.maintenance.repairs.run("check-fts", caller, repair=req.repair, force=req.force)
    else:
        result = repairs.check_fts(runtime, caller)
    out: FtsOutcome = result.data
    return FtsCheckResponse(
        memories=out.memories,
        indexed=out.indexed,
        context_indexed=out.context_indexed,
        consistent=out.consistent,
        rebuilt=out.rebuilt,
    )


@router.get("/api/repair/embedding-gaps", response_model=EmbeddingGapsResponse)
def embedding_gaps(runtime: RuntimeDep) -> EmbeddingGapsResponse:
    """How many live memories still lack a vector from the configured model."""
    e = runtime.embeddings
    return EmbeddingGapsResponse(
        pending=e.pending_count(), provider=e.settings.provider, model=e.settings.model, state=e.state
    )


@router.post("/api/repair/re-embed", response_model=EmbeddingGapsResponse)
def re_embed(runtime: RuntimeDep, caller: CallerDep) -> EmbeddingGapsResponse:
    """Queue again the memories whose vector row is gone, and wake the embedder to fill every gap
    now (it also does so continuously)."""
    result = runtime.maintenance.repairs.run("re-embed", caller)
    return embedding_gaps(runtime).model_copy(update={"requeued": result.affected})


@router.post("/api/repair/clean-orphans", response_model=OrphansResponse)
def clean_orphans(runtime: RuntimeDep, caller: CallerDep, body: OrphansRequest | None = None) -> OrphansResponse:
    """Remove rows that point at memories that no longer exist: vectors, graph links, queued jobs,
    the injection log and ratings (``dry_run`` counts them)."""
    req = body or OrphansRequest()
    if req.dry_run:
        rows = runtime.db.read(orphans.count)
    else:
        rows = runtime.maintenance.repairs.run("clean-orphans", caller).data
    return OrphansResponse(dry_run=req.dry_run, rows=rows, total=sum(rows.values()))


def _groups(scan: dedup.Scan) -> list[ClusterView]:
    return [ClusterView.model_validate(c.as_dict()) for c in scan.clusters[:50]]


@router.get("/api/repair/dedup-stats", response_model=DedupStatsResponse)
def dedup_stats(
    runtime: RuntimeDep, scope: ScopeDep, threshold: Threshold = None, limit: ScanLimit = 5000
) -> DedupStatsResponse:
    """Semantic near-duplicates among live memories (same agent and project), by their stored
    vectors: how many clusters, how many would be merged, and the largest clusters."""
    cut = threshold if threshold is not None else runtime.settings.memory.pipeline.repair.dedup_semantic_threshold
    scan = runtime.db.read(lambda c: dedup.scan(c, runtime.embeddings.model_key, cut, limit=limit, scope=scope))
    return DedupStatsResponse(
        threshold=cut,
        scanned=scan.scanned,
        truncated=scan.truncated,
        clusters=len(scan.clusters),
        duplicates=scan.duplicates,
        groups=_groups(scan),
    )


@router.post("/api/repair/deduplicate", response_model=DeduplicateResponse)
def deduplicate(
    runtime: RuntimeDep, caller: CallerDep, scope: ScopeDep, body: DeduplicateRequest | None = None
) -> DeduplicateResponse:
    """Merge near-duplicates into one survivor each: the others are soft-deleted with a history row
    naming the survivor, so ``POST /api/memory/{id}/recover`` undoes a merge. ``dry_run`` merges nothing
    (and is not gated)."""
    req = body or DeduplicateRequest()
    params: dict[str, Any] = {
        "threshold": req.threshold,
        "dry_run": req.dry_run,
        "limit": req.limit,
        "scan_limit": req.scan_limit,
        "scope": scope,
    }
    if req.dry_run:
        result = repairs.deduplicate(runtime, caller, **params)
    else:
        result = runtime.maintenance.repairs.run("deduplicate", caller, **params)
    out: DedupOutcome = result.data
    merged = [MergedView(**m) for m in out.merged]
    return DeduplicateResponse(
        dry_run=req.dry_run,
        threshold=out.scan.threshold,
        scanned=out.scan.scanned,
        merged=merged,
        count=len(merged),
        remaining=max(0, out.scan.duplicates - len(merged)),
    )


@router.get("/api/repair/audit", response_model=AuditResponse)
def audit(
    runtime: RuntimeDep,
    action: Annotated[Action | None, Query()] = None,
    outcome: Annotated[Literal["ok", "noop", "failed", "refused"] | None, Query()] = None,
    actor_type: Annotated[Literal["operator", "agent", "system"] | None, Query()] = None,
    since: Annotated[datetime | None, Query(description="ISO-8601; only rows at or after it")] = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 50,
) -> AuditResponse:
    """The repair audit trail, newest first: every repair asked for, run or refused, by whom."""
    try:
        since_iso = to_iso(since) if since is not None else None
    except OverflowError:  # a time zone pushes it past year 1 or 9999
        raise InvalidRequest("since is out of range") from None
    rows = runtime.db.read(
        lambda c: repair_audit.entries(
            c, limit=limit, action=action, outcome=outcome, actor_type=actor_type, since=since_iso
        )
    )
    items = [AuditEntryView(**r.__dict__) for r in rows]
    return AuditResponse(items=items, count=len(items))


@router.get("/api/repair/maintenance", response_model=MaintenanceStatus)
def maintenance_status(runtime: RuntimeDep) -> MaintenanceStatus:
    """The maintenance worker: mode, schedule, the last cycle (scores before and after, the plan),
    the repairs it halted, and the gate's counters."""
    return MaintenanceStatus.model_validate(runtime.maintenance.status())


@router.post("/api/repair/maintenance/run", response_model=CycleView)
def maintenance_run(runtime: RuntimeDep, caller: CallerDep, body: MaintenanceRunRequest | None = None) -> CycleView:
    """Run one maintenance cycle now, as the caller (what ``signet doctor --fix`` does with
    ``mode: execute``): diagnose, plan, and in ``execute`` mode run the plan through the gate."""
    mode = body.mode if body is not None else None
    cycle = runtime.maintenance.run_cycle(mode, caller)
    return CycleView.model_validate(asdict(cycle))
