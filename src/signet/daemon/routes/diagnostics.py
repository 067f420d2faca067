"""Diagnostics: a composite health score and per-domain findings (read-only)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from pydantic import BaseModel, Field

from signet.daemon.deps import RuntimeDep
from signet.errors import NotFound
from signet.ops.diagnostics import WEIGHTS, diagnose

router = APIRouter(tags=["diagnostics"])


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


@router.get("/api/diagnostics", response_model=DiagnosticsReport)
def diagnostics(runtime: RuntimeDep) -> DiagnosticsReport:
    """Health across queue, storage, index, provider, mutation and connector domains; repairs the
    maintenance worker halted are findings too. Refreshes what /health says about them."""
    return DiagnosticsReport.model_validate(runtime.maintenance.note(diagnose(runtime)))


@router.get("/api/diagnostics/{domain}", response_model=DomainReport)
def diagnostics_domain(domain: str, runtime: RuntimeDep) -> DomainReport:
    if domain not in WEIGHTS:
        raise NotFound(f"no diagnostics domain '{domain}' (have: {', '.join(WEIGHTS)})")
    return DomainReport.model_validate(runtime.maintenance.note(diagnose(runtime))["domains"][domain])
