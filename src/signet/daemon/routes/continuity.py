"""Session continuity endpoints: checkpoints (``/api/checkpoints``), MEMORY.md synthesis
(``/api/hooks/synthesis``), removal of a session's summaries (``/api/artifacts``) and the
continuity status. What they do lives in :mod:`signet.continuity`.
"""

from __future__ import annotations

import re
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Path, Query
from pydantic import BaseModel, ConfigDict, Field

from signet.continuity import artifacts, checkpoints
from signet.continuity.models import (
    ArtifactRemoval,
    Checkpoint,
    CheckpointList,
    ContinuityStatus,
    SynthesisRequest,
    SynthesisWritten,
)
from signet.continuity.service import ContinuityService
from signet.daemon.deps import RuntimeDep, ScopeDep
from signet.errors import NotFound
from signet.models import ErrorResponse, StrictModel
from signet.store.scope import ReadScope

router = APIRouter(
    tags=["continuity"],
    responses={400: {"model": ErrorResponse}, 404: {"model": ErrorResponse}, 422: {"model": ErrorResponse}},
)

Name = Annotated[str, Field(min_length=1, max_length=200)]
AgentName = Annotated[str, Field(min_length=1, max_length=64)]


async def _continuity(runtime: RuntimeDep) -> ContinuityService:
    return runtime.continuity


ContinuityDep = Annotated[ContinuityService, Depends(_continuity)]
_TOKEN = re.compile(r"^[0-9a-f]{16}$")


class _Query(BaseModel):
    model_config = ConfigDict(extra="forbid")


class CheckpointQuery(_Query):
    project: Name | None = None
    limit: int = Field(50, ge=1, le=500)


def _agents(scope: ReadScope) -> tuple[str, ...] | None:
    """Checkpoints are session state: a scoped caller sees its own agent's only."""
    if scope.policy == "all" and scope.write_agent is None:
        return None
    return (scope.write_agent or scope.agent_id,)


@router.get("/api/checkpoints", response_model=CheckpointList)
def list_checkpoints(cont: ContinuityDep, scope: ScopeDep, q: Annotated[CheckpointQuery, Query()]) -> CheckpointList:
    """Session checkpoints, newest first, of one project (``project``) or all."""
    project = q.project
    if scope.project is not None:
        scope.check_project(project if project is not None else scope.project)
        project = scope.project
    rows = cont.db.read(lambda c: checkpoints.by_project(c, project, _agents(scope), q.limit))
    return CheckpointList(checkpoints=[Checkpoint.model_validate(r) for r in rows], count=len(rows))


@router.get("/api/checkpoints/{session_key}", response_model=CheckpointList)
def session_checkpoints(
    session_key: Annotated[str, Path(max_length=400)],
    cont: ContinuityDep,
    scope: ScopeDep,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
) -> CheckpointList:
    """The checkpoints of one session (``<harness>:<session id>``), newest first; 404 when none."""
    rows = cont.db.read(lambda c: checkpoints.by_session(c, session_key, _agents(scope), limit))
    if scope.project is not None:
        rows = [r for r in rows if r["project"] == scope.project]
    if not rows:
        raise NotFound(f"no checkpoints for session {session_key[:200]!r}", code="session_not_found")
    return CheckpointList(checkpoints=[Checkpoint.model_validate(r) for r in rows], count=len(rows))


class SynthesisQuery(_Query):
    agent_id: AgentName = "default"


class SynthesisResult(StrictModel):
    content: Annotated[str, Field(min_length=1, max_length=200_000)]
    agent_id: AgentName = "default"


class SynthesisRunBody(StrictModel):
    agent_id: AgentName = "default"


@router.get("/api/hooks/synthesis", response_model=SynthesisRequest)
def synthesis_request(cont: ContinuityDep, scope: ScopeDep, q: Annotated[SynthesisQuery, Query()]) -> SynthesisRequest:
    """The current MEMORY.md synthesis request: the prompt a harness runs on its own model."""
    scope.check_agent(q.agent_id)
    return SynthesisRequest.model_validate(cont.synthesis_request(q.agent_id))


@router.post("/api/hooks/synthesis", response_model=SynthesisWritten)
def synthesis_result(body: SynthesisResult, cont: ContinuityDep, scope: ScopeDep) -> SynthesisWritten:
    """Write a harness's synthesis into MEMORY.md's generated block (the rest of the file is kept)."""
    scope.check_agent(body.agent_id)
    return SynthesisWritten.model_validate(cont.synthesis_result(body.agent_id, body.content))


@router.post("/api/hooks/synthesis/run", response_model=SynthesisWritten)
def synthesis_run(body: SynthesisRunBody, cont: ContinuityDep, scope: ScopeDep) -> SynthesisWritten:
    """Regenerate MEMORY.md's block now: with the configured LLM, or as lists without one."""
    scope.check_agent(body.agent_id)
    return SynthesisWritten.model_validate(cont.synthesize(body.agent_id, cont.usable_llm()))


class RemovalBody(StrictModel):
    agent_id: AgentName = "default"
    reason: Annotated[str, Field(max_length=500)] | None = None


@router.post("/api/artifacts/{session_token}/remove", response_model=ArtifactRemoval)
def remove_artifacts(
    session_token: Annotated[str, Path(max_length=64)],
    body: RemovalBody,
    cont: ContinuityDep,
    scope: ScopeDep,
) -> ArtifactRemoval:
    """Delete a session's summary files and index rows and tombstone the session, so a
    rebuild (or the file coming back) never restores them. 404 when the session has none."""
    scope.check_agent(body.agent_id)
    if not _TOKEN.match(session_token):
        raise NotFound("no summaries for that session token", code="session_not_found")

    def remove(conn: Any) -> list[str]:
        return artifacts.remove_session(conn, cont.root, body.agent_id, session_token, body.reason)

    known = cont.db.read(
        lambda c: c.execute(
            "SELECT 1 FROM memory_artifacts WHERE agent_id = ? AND session_token = ?", (body.agent_id, session_token)
        ).fetchone()
    )
    if known is None:
        raise NotFound("no summaries for that session token", code="session_not_found")
    return ArtifactRemoval(session_token=session_token, removed_paths=cont.db.write(remove))


@router.get("/api/continuity/status", response_model=ContinuityStatus)
def continuity_status(cont: ContinuityDep) -> ContinuityStatus:
    """Summary jobs by status, why they wait (no provider), the last MEMORY.md synthesis."""
    return ContinuityStatus.model_validate(cont.status())
