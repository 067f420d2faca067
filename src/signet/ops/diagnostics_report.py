"""The shape of the diagnostics report (``GET /api/diagnostics``), apart from the route so the
SDK, which sits below the daemon in the import layers, returns it typed."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field


class RepairHint(BaseModel):
    action: str = Field(description="the repair that fixes the finding (POST /api/repair/<action>)")
    signal: float = Field(description="the number the repair should bring down")
    finding: str
    params: dict[str, Any]


class DomainReport(BaseModel):
    score: float
    status: str
    weight: float
    findings: list[str]
    metrics: dict[str, Any]
    repairs: list[RepairHint] = Field(default_factory=list, description="what the maintenance worker would run")
    applicable: bool = Field(True, description="false: nothing to measure here; left out of the composite score")


class DiagnosticsReport(BaseModel):
    score: float
    status: str
    checked_at: str
    domains: dict[str, DomainReport]


__all__ = ["DiagnosticsReport", "DomainReport", "RepairHint"]
