"""``/api/update/*``: whether a newer Signet is on the package index, its configuration, and
installing it (docs/updates.md). Checking and reading the configuration are ``local``;
saving the configuration and installing need ``admin``. An install names the version a check
reported (a confirmation: a request cannot pick an arbitrary version), and the daemon
restarts itself once the answer is sent."""

from __future__ import annotations

from fastapi import APIRouter, BackgroundTasks
from starlette.concurrency import run_in_threadpool

from signet.daemon.deps import RuntimeDep
from signet.models import ErrorResponse
from signet.updates.models import (
    UpdateCheck,
    UpdateConfig,
    UpdateConfigRequest,
    UpdateConfigSaved,
    UpdateRun,
    UpdateRunRequest,
)

router = APIRouter(tags=["update"], responses={422: {"model": ErrorResponse}})


@router.get("/api/update/check", response_model=UpdateCheck)
async def check_update(runtime: RuntimeDep) -> UpdateCheck:
    """Read the index now; an unreachable index is an answer with ``error`` set."""
    return await run_in_threadpool(runtime.updates.check)


@router.get("/api/update/config", response_model=UpdateConfig)
def update_config(runtime: RuntimeDep) -> UpdateConfig:
    """The index, the package, and whether the daemon checks and installs by itself."""
    return runtime.updates.config()


@router.post(
    "/api/update/config",
    response_model=UpdateConfigSaved,
    responses={400: {"model": ErrorResponse, "description": "agent.yaml would not be valid"}},
)
async def save_update_config(runtime: RuntimeDep, body: UpdateConfigRequest) -> UpdateConfigSaved:
    """Save the scheduled check's interval, autoInstall and prereleases into agent.yaml (read
    at the daemon's next start)."""
    return await run_in_threadpool(runtime.updates.save_config, body)


@router.post(
    "/api/update/run",
    response_model=UpdateRun,
    responses={
        400: {"model": ErrorResponse, "description": "the index is unreachable, another version, or pip failed"},
        409: {"model": ErrorResponse, "description": "already up to date, or an install is running"},
    },
)
async def run_update(runtime: RuntimeDep, body: UpdateRunRequest, tasks: BackgroundTasks) -> UpdateRun:
    """Install the version a check reported (``dry_run``: resolve only), then restart."""
    done = await run_in_threadpool(runtime.updates.run, body.version, dry_run=body.dry_run, restart=body.restart)
    if done.restarting:
        tasks.add_task(runtime.updates.restart, runtime.workspace.root)
    return done
