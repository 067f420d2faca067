"""Diagnostics: a composite health score and per-domain findings (read-only)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from pydantic import BaseModel

from signet.daemon.deps import RuntimeDep
from signet.errors import NotFound
from signet.ops.diagnostics import WEIGHTS, diagnose

router = APIRouter(tags=["diagnostics"])


class DomainReport(BaseModel):
    score: float
    status: str
    weight: float
    findings: list[str]
    metrics: dict[str, Any]


class DiagnosticsReport(BaseModel):
    score: float
    status: str
    checked_at: str
    domains: dict[str, DomainReport]


@router.get("/api/diagnostics", response_model=DiagnosticsReport)
def diagnostics(runtime: RuntimeDep) -> DiagnosticsReport:
    """Health across queue, storage, index, provider, mutation and connector domains."""
    return DiagnosticsReport.model_validate(diagnose(runtime))


@router.get("/api/diagnostics/{domain}", response_model=DomainReport)
def diagnostics_domain(domain: str, runtime: RuntimeDep) -> DomainReport:
    if domain not in WEIGHTS:
        raise NotFound(f"no diagnostics domain '{domain}' (have: {', '.join(WEIGHTS)})")
    return DomainReport.model_validate(diagnose(runtime)["domains"][domain])
