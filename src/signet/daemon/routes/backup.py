"""``GET /api/backup`` and ``POST /api/backup``: list the database backups, take one now.

The backup is the one ``signet backup`` takes (signet.store.backup): consistent while the
daemon writes, verified, rotated to ``backup.keep``, refused (507 ``backup_refused``) when it
would leave less than ``backup.min_free_mb`` free. Restoring needs the daemon stopped, so it is
``signet backup restore`` only."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter
from pydantic import BaseModel, Field

from signet.daemon.deps import RuntimeDep
from signet.models import ErrorResponse, StrictModel
from signet.store.backup import backup_dir, backup_file, list_backups
from signet.store.choose import require_sqlite

router = APIRouter(tags=["backup"], responses={422: {"model": ErrorResponse}})


class BackupEntry(BaseModel):
    name: str
    path: str
    created_at: str = Field(description="UTC, from the name")
    reason: str
    size_bytes: int


class BackupList(BaseModel):
    directory: str
    keep: int = Field(description="backup.keep: older backups are removed beyond this many")
    min_free_mb: int = Field(description="backup.min_free_mb: no backup leaves less free disk than this")
    backups: list[BackupEntry] = Field(description="oldest first")


class BackupRequest(StrictModel):
    reason: Annotated[str, Field(min_length=1, max_length=48, pattern=r"^[A-Za-z0-9][A-Za-z0-9 _-]*$")] = "api"


class BackupResponse(BaseModel):
    backup: BackupEntry
    removed: list[str] = Field(description="older backups rotated away, oldest first")


@router.get("/api/backup", response_model=BackupList)
def backups(runtime: RuntimeDep) -> BackupList:
    """The backups beside the database, oldest first."""
    directory = backup_dir(runtime.db_path)
    cfg = runtime.settings.backup
    return BackupList(
        directory=str(directory),
        keep=cfg.keep,
        min_free_mb=cfg.min_free_mb,
        backups=[BackupEntry(**b.as_dict()) for b in list_backups(directory)],
    )


@router.post(
    "/api/backup",
    response_model=BackupResponse,
    responses={
        507: {"model": ErrorResponse, "description": "not enough free disk (backup_refused) or disk full"},
        409: {
            "model": ErrorResponse,
            "description": "the store is PostgreSQL (storage_postgres): back up with pg_dump",
        },
    },
)
def backup(runtime: RuntimeDep, body: BackupRequest | None = None) -> BackupResponse:
    """Back the database up now (while it serves), then rotate the oldest backups away. A
    PostgreSQL store is backed up by the server's tools (409 ``storage_postgres``: pg_dump)."""
    require_sqlite(runtime.settings, "POST /api/backup", "use the server's backups: pg_dump")
    cfg = runtime.settings.backup
    result = backup_file(
        runtime.db_path,
        reason=body.reason if body is not None else "api",
        keep=cfg.keep,
        min_free_mb=cfg.min_free_mb,
    )
    return BackupResponse(backup=BackupEntry(**result.backup.as_dict()), removed=result.removed)
