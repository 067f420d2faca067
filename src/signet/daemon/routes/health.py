"""Liveness and status."""

from __future__ import annotations

import os
import time

from fastapi import APIRouter

from signet import __version__
from signet.daemon.deps import RuntimeDep
from signet.models import HealthResponse, StatusResponse

router = APIRouter(tags=["status"])


@router.get("/health", response_model=HealthResponse)
def health(runtime: RuntimeDep) -> HealthResponse:
    """Answers as soon as the daemon listens (the embedding model loads in the background)."""
    return HealthResponse(status="ok", version=__version__, pid=os.getpid(),
                          uptime_s=round(time.time() - runtime.started_at, 3))


@router.get("/api/status", response_model=StatusResponse)
def status(runtime: RuntimeDep) -> StatusResponse:
    """Version, uptime, memory counts, embedding coverage, and whether vector search is on."""
    return runtime.service.status(str(runtime.workspace.root), str(runtime.db_path))
