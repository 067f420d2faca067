"""``/api/git/*``: git sync of the workspace (docs/git.md). Status and the configuration are
``local`` (the spec's: open to local callers, ``admin`` from a token); setting the remote,
pulling, pushing and syncing need ``admin``. With no repository or no remote configured each
answers 400 (``not_a_repository``, ``no_remote``); a conflict is 409 ``git_conflict`` naming
the files, with the user's files left as they were; a push the remote refuses is 409
``git_behind``."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from starlette.concurrency import run_in_threadpool

from signet.daemon.deps import RuntimeDep
from signet.gitsync.models import GitConfig, GitConfigRequest, GitResult, GitStatus
from signet.models import ErrorResponse

ERRORS: dict[int | str, dict[str, Any]] = {
    400: {"model": ErrorResponse, "description": "not a repository, no remote, a refused URL, or git failed"},
    422: {"model": ErrorResponse},
}
CONFLICTS: dict[int | str, dict[str, Any]] = {
    409: {"model": ErrorResponse, "description": "git_conflict (with `conflicts`: the files) or git_behind"}
}
router = APIRouter(tags=["git"], responses=ERRORS)


@router.get("/api/git/status", response_model=GitStatus)
async def git_status(runtime: RuntimeDep) -> GitStatus:
    """Branch, remote, changed files, commits ahead and behind (as of the last fetch), conflicts."""
    return await run_in_threadpool(runtime.git.status)


@router.get("/api/git/config", response_model=GitConfig)
async def git_config(runtime: RuntimeDep) -> GitConfig:
    """The remote synced with and its URL."""
    return await run_in_threadpool(runtime.git.config)


@router.post("/api/git/config", response_model=GitConfig)
async def set_git_config(runtime: RuntimeDep, body: GitConfigRequest) -> GitConfig:
    """Point the remote at a URL (https, ssh, scp-like, file or an absolute path; no ``ext::``)."""
    return await run_in_threadpool(runtime.git.set_url, body.url)


@router.post("/api/git/pull", response_model=GitResult, responses=CONFLICTS)
async def git_pull(runtime: RuntimeDep) -> GitResult:
    """Commit local changes, then fetch and merge the remote branch."""
    return await run_in_threadpool(runtime.git.pull)


@router.post("/api/git/push", response_model=GitResult, responses=CONFLICTS)
async def git_push(runtime: RuntimeDep) -> GitResult:
    """Commit local changes, then push them (never forced)."""
    return await run_in_threadpool(runtime.git.push)


@router.post("/api/git/sync", response_model=GitResult, responses=CONFLICTS)
async def git_sync(runtime: RuntimeDep) -> GitResult:
    """Pull, then push."""
    return await run_in_threadpool(runtime.git.sync)
