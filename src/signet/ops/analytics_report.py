"""The shapes of the analytics reports (``/api/analytics/usage``, ``/errors``, ``/latency``),
apart from the routes so the SDK, which sits below the daemon in the import layers, returns
them typed."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel


class UsageReport(BaseModel):
    since: str
    uptime_s: float
    totals: dict[str, int]
    endpoints: dict[str, dict[str, Any]]
    actors: dict[str, dict[str, int]]
    providers: dict[str, dict[str, Any]]
    connectors: dict[str, dict[str, int]]


class ErrorEntryOut(BaseModel):
    at: str
    stage: str
    code: str
    message: str
    memory_id: str | None
    actor: str | None
    route: str | None


class ErrorSummary(BaseModel):
    total: int
    buffered: int
    capacity: int | None
    by_stage: dict[str, int]
    by_code: dict[str, int]


class ErrorsReport(BaseModel):
    errors: list[ErrorEntryOut]
    summary: ErrorSummary


class LatencySnapshot(BaseModel):
    count: int
    mean: float | None
    p50: float | None
    p95: float | None
    p99: float | None
    window: int


class LatencyReport(BaseModel):
    unit: str
    operations: dict[str, LatencySnapshot]
    routes: dict[str, LatencySnapshot]


__all__ = ["ErrorEntryOut", "ErrorSummary", "ErrorsReport", "LatencyReport", "LatencySnapshot", "UsageReport"]
