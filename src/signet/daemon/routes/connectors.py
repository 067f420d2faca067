"""Connector endpoints: register a folder, list, get, delete, sync (incremental or full), health."""

from __future__ import annotations

from fastapi import APIRouter
from starlette.concurrency import run_in_threadpool

from signet.daemon.deps import LocalAdminDep, RuntimeDep, ScopeDep
from signet.models import (
    Connector,
    ConnectorCreateRequest,
    ConnectorDeleted,
    ConnectorHealth,
    ConnectorList,
    ErrorResponse,
    SyncResult,
)

ERRORS: dict[int | str, dict[str, object]] = {
    400: {"model": ErrorResponse},
    403: {"model": ErrorResponse},
    404: {"model": ErrorResponse},
    409: {"model": ErrorResponse},
    422: {"model": ErrorResponse},
}

router = APIRouter(tags=["connectors"], responses=ERRORS)


@router.post("/api/connectors", response_model=Connector, status_code=201)
def create_connector(
    body: ConnectorCreateRequest, runtime: RuntimeDep, scope: ScopeDep, local: LocalAdminDep
) -> Connector:
    """Register a folder (``provider: filesystem``; local admin callers only). Nothing is read
    until the first sync."""
    return runtime.connectors.create(body, scope=scope, local=local)


@router.get("/api/connectors", response_model=ConnectorList)
def list_connectors(runtime: RuntimeDep, scope: ScopeDep) -> ConnectorList:
    """Every connector with its status, last sync, last error and document count."""
    return runtime.connectors.list(scope=scope)


@router.get("/api/connectors/{connector_id}", response_model=Connector)
def get_connector(connector_id: str, runtime: RuntimeDep, scope: ScopeDep) -> Connector:
    """One connector (a unique id prefix will do)."""
    return runtime.connectors.get(connector_id, scope=scope)


@router.delete("/api/connectors/{connector_id}", response_model=ConnectorDeleted)
def delete_connector(connector_id: str, runtime: RuntimeDep, scope: ScopeDep) -> ConnectorDeleted:
    """Delete the connector, its documents, and the chunk memories only they held."""
    return runtime.connectors.delete(connector_id, scope=scope)


@router.post("/api/connectors/{connector_id}/sync", response_model=SyncResult)
async def sync_connector(connector_id: str, runtime: RuntimeDep, scope: ScopeDep) -> SyncResult:
    """Incremental sync: queue new and changed files, remove documents whose files are gone.
    409 while a sync of it runs, or when its folder cannot be read (``last_error`` says why)."""
    return await run_in_threadpool(runtime.connectors.sync, connector_id, scope=scope)


@router.post("/api/connectors/{connector_id}/sync/full", response_model=SyncResult)
async def full_sync_connector(connector_id: str, runtime: RuntimeDep, scope: ScopeDep) -> SyncResult:
    """Full sync: every file queued again whatever the cursor says (unchanged chunks still keep
    their memories)."""
    return await run_in_threadpool(runtime.connectors.sync, connector_id, scope=scope, full=True)


@router.get("/api/connectors/{connector_id}/health", response_model=ConnectorHealth)
def connector_health(connector_id: str, runtime: RuntimeDep, scope: ScopeDep) -> ConnectorHealth:
    """Status, last error and its time, documents by status, files tracked, whether it is watched."""
    return runtime.connectors.health(connector_id, scope=scope)
