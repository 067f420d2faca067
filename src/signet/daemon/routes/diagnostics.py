"""Diagnostics: a composite health score and per-domain findings (read-only)."""

from __future__ import annotations

from fastapi import APIRouter

from signet.daemon.deps import RuntimeDep
from signet.errors import NotFound
from signet.ops.diagnostics import WEIGHTS, diagnose
from signet.ops.diagnostics_report import DiagnosticsReport, DomainReport

router = APIRouter(tags=["diagnostics"])


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
