"""``/api/skills``: the workspace's skills (docs/skills.md): list, search, show, install,
uninstall, and a use recorded. Reading and recording a use are ``local`` (the spec's: open to
local callers, ``admin`` from a token); installing and uninstalling need ``admin``. An install
reads a folder or archive on this machine only for a local caller, and clones a git URL only
with ``skills.allowRemote``."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Path, Query
from starlette.concurrency import run_in_threadpool

from signet.daemon.deps import LocalAdminDep, RuntimeDep
from signet.errors import Forbidden
from signet.models import ErrorResponse
from signet.skills import sources
from signet.skills.manifest import MAX_NAME
from signet.skills.models import (
    SkillDetail,
    SkillInstalled,
    SkillInstallRequest,
    SkillList,
    SkillRemoved,
    SkillSearchResult,
    SkillUsed,
)

ERRORS: dict[int | str, dict[str, Any]] = {
    400: {"model": ErrorResponse, "description": "an invalid name, source or skill"},
    404: {"model": ErrorResponse, "description": "no such skill"},
    422: {"model": ErrorResponse},
}
router = APIRouter(tags=["skills"], responses=ERRORS)

SkillName = Annotated[str, Path(min_length=1, max_length=MAX_NAME)]


@router.get("/api/skills", response_model=SkillList)
def list_skills(runtime: RuntimeDep) -> SkillList:
    """Installed skills by name, with their harness links and use counts."""
    return runtime.skills.list_skills()


@router.get("/api/skills/search", response_model=SkillSearchResult)
def search_skills(
    runtime: RuntimeDep,
    q: Annotated[str, Query(min_length=1, max_length=200, description="words to find in names and descriptions")],
    limit: Annotated[int, Query(ge=1, le=100)] = 20,
) -> SkillSearchResult:
    """Installed skills and those of the configured index (``skills.index``) matching every word."""
    return runtime.skills.search(q, limit)


@router.get("/api/skills/{name}", response_model=SkillDetail)
def show_skill(runtime: RuntimeDep, name: SkillName) -> SkillDetail:
    """One skill: its front matter, its instructions and its files."""
    return runtime.skills.show(name)


@router.post(
    "/api/skills/install",
    response_model=SkillInstalled,
    status_code=201,
    responses={
        403: {"model": ErrorResponse, "description": "a local source from a caller that is not local"},
        409: {"model": ErrorResponse, "description": "a skill of that name is installed (use force)"},
    },
)
async def install_skill(runtime: RuntimeDep, body: SkillInstallRequest, local: LocalAdminDep) -> SkillInstalled:
    """Install a skill from a folder or archive on this machine (local callers) or a git URL
    (with ``skills.allowRemote``), and link it into every installed harness."""

    def run() -> SkillInstalled:
        src = sources.classify(body.source)
        if src.kind != "git" and not local:
            raise Forbidden("only a local caller may install a skill from this machine's files")
        return runtime.skills.install(
            body.source, force=body.force, remote_allowed=runtime.settings.skills.allow_remote
        )

    return await run_in_threadpool(run)


@router.delete("/api/skills/{name}", response_model=SkillRemoved)
def uninstall_skill(runtime: RuntimeDep, name: SkillName) -> SkillRemoved:
    """Remove a skill's folder and its links in the harnesses' skills folders."""
    return runtime.skills.uninstall(name)


@router.post("/api/skills/{name}/use", response_model=SkillUsed)
def record_use(runtime: RuntimeDep, name: SkillName) -> SkillUsed:
    """Count one use of a skill (its relevance decays with the days since the last use)."""
    return runtime.skills.record_use(name)
