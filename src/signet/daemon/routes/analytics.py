"""Analytics, telemetry and feature flags (docs/operations.md).

- ``/api/analytics/*``: the in-memory counters (usage, errors, latency; signet.ops.analytics),
  mutation safety from the database, continuity scores. Need ``analytics``.
- ``/api/telemetry/*``: the local event log (events, stats, NDJSON export) and the opt-in recall
  QA ledger (``memory-search``, which holds query text and result content). Need ``analytics``;
  the ledger shows a scoped token only its own agent's rows.
- ``/api/features``: what is switched on. Public, like the spec's: flags only, no paths, hosts
  or keys.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Annotated, Any

from fastapi import APIRouter, Query
from fastapi.responses import StreamingResponse
from pydantic import BaseModel, ConfigDict, Field

from signet.daemon.deps import RuntimeDep, ScopeDep
from signet.models import UtcDatetime
from signet.ops.analytics import ErrorCode, Stage
from signet.ops.analytics_report import (
    ErrorEntryOut,
    ErrorsReport,
    ErrorSummary,
    LatencyReport,
    UsageReport,
)
from signet.ops.diagnostics import mutation_domain
from signet.ops.telemetry import EventName
from signet.runtime import Runtime
from signet.store.records import to_iso
from signet.store.sqlite import Connection

router = APIRouter(tags=["analytics"])

NDJSON = "application/x-ndjson"
NDJSON_RESPONSE: dict[int | str, dict[str, Any]] = {
    200: {"content": {NDJSON: {"schema": {"type": "string"}}}, "description": "one JSON object per line"}
}

Name = Annotated[str, Field(min_length=1, max_length=200)]


class _Query(BaseModel):
    """Query parameters: an unknown one is a 422, never silently ignored."""

    model_config = ConfigDict(extra="forbid")


def _iso(dt: datetime | None) -> str | None:
    return to_iso(dt) if dt is not None else None


# -- analytics -------------------------------------------------------------------------------


@router.get("/api/analytics/usage", response_model=UsageReport)
async def usage(runtime: RuntimeDep) -> UsageReport:
    """Counters since the daemon started: per endpoint (route template: calls, errors, total
    and mean ms), per actor (remember / recall / mutate / other), per provider (embedding and
    LLM calls, failures, timeouts), per connector (none exist yet)."""
    return UsageReport.model_validate(runtime.observability.analytics.usage())


class ErrorsQuery(_Query):
    stage: Stage | None = None
    code: ErrorCode | None = None
    since: UtcDatetime | None = None
    limit: int = Field(100, ge=1, le=500)


@router.get("/api/analytics/errors", response_model=ErrorsReport)
async def errors(runtime: RuntimeDep, q: Annotated[ErrorsQuery, Query()]) -> ErrorsReport:
    """The error ring (the last 500), newest first, filtered by stage, code and time; the
    summary counts every error since start."""
    a = runtime.observability.analytics
    since = q.since.timestamp() if q.since is not None else None
    return ErrorsReport.model_validate(
        {"errors": a.errors(stage=q.stage, code=q.code, since=since, limit=q.limit), "summary": a.error_summary()}
    )


@router.get("/api/analytics/latency", response_model=LatencyReport)
async def latency(runtime: RuntimeDep) -> LatencyReport:
    """p50/p95/p99 (over the last 1,000 samples), count and mean (since start), in ms, per
    operation (remember, recall, mutate, search, embed, llm, jobs) and per route."""
    return LatencyReport.model_validate(runtime.observability.analytics.latency())


class MemorySafety(BaseModel):
    mutation: dict[str, Any]
    history_7d: dict[str, int]
    deleted: int
    dead_jobs: int
    guards: dict[str, bool]
    recent_errors: list[ErrorEntryOut]
    error_summary: ErrorSummary


@router.get("/api/analytics/memory-safety", response_model=MemorySafety)
def memory_safety(runtime: RuntimeDep) -> MemorySafety:
    """Mutation health: the diagnostics ``mutation`` domain (recoveries in 7 days), history
    events of the last 7 days by kind (created, updated, deleted, recovered...), soft-deleted
    memories, dead pipeline jobs, the mutation guards in force, and recent mutation errors."""
    now = datetime.now(UTC)
    since = (now - timedelta(days=7)).isoformat()

    def read(conn: Connection) -> dict[str, Any]:
        dom = mutation_domain(conn, now)
        history = {
            str(r[0]): int(r[1])
            for r in conn.execute(
                "SELECT event, COUNT(*) FROM memory_history WHERE created_at >= ? GROUP BY event", (since,)
            )
        }
        deleted = int(conn.execute("SELECT COUNT(*) FROM memories WHERE is_deleted = 1").fetchone()[0])
        dead = int(conn.execute("SELECT COUNT(*) FROM memory_jobs WHERE status = 'dead'").fetchone()[0])
        return {
            "mutation": {"score": dom.score, "status": dom.status, "findings": dom.findings, "metrics": dom.metrics},
            "history_7d": history,
            "deleted": deleted,
            "dead_jobs": dead,
        }

    data = runtime.db.read(read)
    p = runtime.settings.memory.pipeline
    a = runtime.observability.analytics
    return MemorySafety.model_validate(
        {
            **data,
            "guards": {
                "mutations_frozen": p.mutations_frozen,
                "shadow_mode": p.shadow_mode,
                "allow_update_delete": p.allow_update_delete,
            },
            "recent_errors": a.errors(stage="mutation", limit=50),
            "error_summary": a.error_summary(),
        }
    )


class ContinuityQuery(_Query):
    project: Name | None = None
    limit: int = Field(50, ge=1, le=500)


class ContinuityReport(BaseModel):
    available: bool
    scores: list[dict[str, Any]]
    summary: dict[str, Any]


CONTINUITY_COLUMNS = (
    "id",
    "session_key",
    "project",
    "harness",
    "score",
    "memories_recalled",
    "memories_used",
    "novel_context_count",
    "reasoning",
    "created_at",
)


def _continuity_rows(runtime: Runtime, project: str | None, limit: int) -> tuple[bool, list[dict[str, Any]]]:
    """Rows of ``session_scores`` (written at session end: signet.continuity.checkpoints), newest
    first; ``available: false`` on a database without the table."""

    def read(conn: Connection) -> tuple[bool, list[dict[str, Any]]]:
        if getattr(conn, "dialect", "sqlite") == "postgres":  # no PRAGMA there: the catalog says the same
            cols = {
                str(r[0])
                for r in conn.execute(
                    "SELECT column_name FROM information_schema.columns "
                    "WHERE table_schema = current_schema() AND table_name = 'session_scores'"
                )
            }
        else:
            cols = {str(r[1]) for r in conn.execute("PRAGMA table_info(session_scores)")}
        if not {"score", "created_at"} <= cols:
            return False, []
        keep = [c for c in CONTINUITY_COLUMNS if c in cols]
        where, params = ("WHERE project = ?", [project]) if project is not None and "project" in cols else ("", [])
        rows = conn.execute(
            f"SELECT {', '.join(keep)} FROM session_scores {where} ORDER BY created_at DESC LIMIT ?", (*params, limit)
        )
        return True, [dict(zip(keep, r, strict=True)) for r in rows]

    return runtime.db.read(read)


@router.get("/api/analytics/continuity", response_model=ContinuityReport)
def continuity(runtime: RuntimeDep, q: Annotated[ContinuityQuery, Query()]) -> ContinuityReport:
    """Session continuity scores over time (newest first) with count, average, latest and trend
    (newest half's average minus the oldest half's). A score is written at each session end that
    had memories injected (docs/harnesses.md, Continuity scores)."""
    available, rows = _continuity_rows(runtime, q.project, q.limit)
    scores = [float(r["score"]) for r in rows if isinstance(r.get("score"), int | float)]
    half = len(scores) // 2
    summary: dict[str, Any] = {
        "count": len(scores),
        "average": round(sum(scores) / len(scores), 4) if scores else None,
        "latest": scores[0] if scores else None,
        "trend": round(sum(scores[:half]) / half - sum(scores[-half:]) / half, 4) if half else None,
    }
    return ContinuityReport(available=available, scores=rows, summary=summary)


@router.get("/api/analytics/continuity/latest", response_model=ContinuityReport)
def continuity_latest(runtime: RuntimeDep) -> ContinuityReport:
    """The latest continuity score per project (newest first); empty until a session is scored."""
    available, rows = _continuity_rows(runtime, None, 10_000)
    latest: dict[Any, dict[str, Any]] = {}
    for r in rows:
        latest.setdefault(r.get("project"), r)
    scores = [
        {"project": r.get("project"), "score": r.get("score"), "created_at": r.get("created_at")}
        for r in latest.values()
    ]
    return ContinuityReport(available=available, scores=scores, summary={"count": len(scores)})


# -- telemetry -------------------------------------------------------------------------------


class EventsQuery(_Query):
    event: EventName | None = None
    since: UtcDatetime | None = None
    until: UtcDatetime | None = None
    limit: int = Field(100, ge=1, le=1000)


class TelemetryEvent(BaseModel):
    id: int
    event: str
    at: str
    properties: dict[str, Any]


class EventsReport(BaseModel):
    events: list[TelemetryEvent]
    count: int
    enabled: bool


@router.get("/api/telemetry/events", response_model=EventsReport)
def telemetry_events(runtime: RuntimeDep, q: Annotated[EventsQuery, Query()]) -> EventsReport:
    """Stored telemetry events, newest first: counts and timings only, never prompts or memory
    content (docs/operations.md lists every event and its properties)."""
    t = runtime.observability.telemetry
    events = t.events(event=q.event, since=_iso(q.since), until=_iso(q.until), limit=q.limit)
    return EventsReport.model_validate({"events": events, "count": len(events), "enabled": t.enabled})


class StatsQuery(_Query):
    since: UtcDatetime | None = None


@router.get("/api/telemetry/stats", response_model=dict[str, Any])
def telemetry_stats(runtime: RuntimeDep, q: Annotated[StatsQuery, Query()]) -> dict[str, Any]:
    """Aggregates over the stored events (all, or since ``since``): totals per event; LLM,
    embedding, recall and pipeline calls with outcomes and p50/p95 ms; plus the error totals
    by stage and code since the daemon started."""
    obs = runtime.observability
    out = obs.telemetry.stats(since=_iso(q.since))
    summary = obs.analytics.error_summary()
    out["errors_by_stage"] = summary["by_stage"]
    out["errors_by_code"] = summary["by_code"]
    return out


class ExportQuery(_Query):
    event: EventName | None = None
    since: UtcDatetime | None = None
    until: UtcDatetime | None = None
    limit: int = Field(10_000, ge=1, le=1_000_000)


@router.get("/api/telemetry/export", response_class=StreamingResponse, responses=NDJSON_RESPONSE)
def telemetry_export(runtime: RuntimeDep, q: Annotated[ExportQuery, Query()]) -> StreamingResponse:
    """The stored events as NDJSON (oldest first), streamed."""
    lines = runtime.observability.telemetry.export(
        event=q.event, since=_iso(q.since), until=_iso(q.until), limit=q.limit
    )
    return StreamingResponse(lines, media_type=NDJSON)


class LedgerFilters(_Query):
    agent_id: Name | None = None
    session_key: Name | None = None
    route: Name | None = None
    project: Name | None = None
    since: UtcDatetime | None = None
    until: UtcDatetime | None = None
    no_hits: bool | None = None

    def filters(self) -> dict[str, Any]:
        return {
            "agent_id": self.agent_id,
            "session_key": self.session_key,
            "route": self.route,
            "project": self.project,
            "since": _iso(self.since),
            "until": _iso(self.until),
            "no_hits": self.no_hits,
        }


class LedgerQuery(LedgerFilters):
    limit: int = Field(100, ge=1, le=500)
    offset: int = Field(0, ge=0, le=10_000_000)


class LedgerReport(BaseModel):
    items: list[dict[str, Any]]
    count: int
    total: int
    enabled: bool


@router.get("/api/telemetry/memory-search", response_model=LedgerReport)
def memory_search(runtime: RuntimeDep, scope: ScopeDep, q: Annotated[LedgerQuery, Query()]) -> LedgerReport:
    """The recall QA ledger, newest first (rows exist only while
    ``memory.pipelineV2.telemetry.memorySearchQaEnabled`` is on). Holds query text and result
    content; a scoped token sees only its own agent's (and project's) rows."""
    out = runtime.observability.ledger.list(scope, q.filters(), limit=q.limit, offset=q.offset)
    return LedgerReport.model_validate(out)


class LedgerExportQuery(LedgerFilters):
    limit: int = Field(10_000, ge=1, le=10_000)


@router.get("/api/telemetry/memory-search/export", response_class=StreamingResponse, responses=NDJSON_RESPONSE)
def memory_search_export(
    runtime: RuntimeDep, scope: ScopeDep, q: Annotated[LedgerExportQuery, Query()]
) -> StreamingResponse:
    """The recall QA ledger as NDJSON (oldest first), same filters and scope as the list."""
    lines = runtime.observability.ledger.export(scope, q.filters(), limit=q.limit)
    return StreamingResponse(lines, media_type=NDJSON)


# -- feature flags ---------------------------------------------------------------------------


@router.get("/api/features", response_model=dict[str, Any])
async def features(runtime: RuntimeDep) -> dict[str, Any]:
    """What is on, from the settings the daemon runs with and the state of its parts: the
    pipeline and its guards, graph, keyword index, embeddings (provider, state), vector search,
    auth mode, telemetry and the QA ledger, and the ``autonomous`` flags when configured."""
    s = runtime.settings
    p = s.memory.pipeline
    emb = runtime.embeddings
    out: dict[str, Any] = {
        "pipeline": {
            "enabled": p.enabled,
            "extraction_provider": p.extraction.provider,
            "workers": p.workers,
            "shadow_mode": p.shadow_mode,
            "mutations_frozen": p.mutations_frozen,
            "allow_update_delete": p.allow_update_delete,
            "summarize_handoff": p.summarize_handoff,
            "running": runtime.pipeline.wait_reason() is None,
        },
        "graph": p.graph.enabled,
        "keyword_index": runtime.keywords is not None,
        "embedding": {"provider": s.embedding.provider, "model": s.embedding.model, "state": emb.state},
        "vector_search": emb.state == "ready",
        "auth_mode": s.auth_mode or s.auth.mode,
        "telemetry": {"events": p.telemetry.enabled, "memory_search_qa": p.telemetry.memory_search_qa_enabled},
        "hooks": {"watch": s.hooks.watch},
        "mcp": True,
        "analytics": True,
    }
    autonomous = getattr(p, "autonomous", None) or getattr(s, "autonomous", None)
    if isinstance(autonomous, BaseModel):  # the maintenance worker's flags, once configured
        out["autonomous"] = autonomous.model_dump()
    return out
