"""``POST /api/ingest/transcript``: store a parsed transcript once (``signet ingest``)."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter
from pydantic import BaseModel, Field

from signet.daemon.deps import RuntimeDep, ScopeDep
from signet.ingest.service import ingest_transcript
from signet.models import MAX_CONTENT_CHARS, ErrorResponse, ShortText, StrictModel, UtcDatetime
from signet.store.records import to_iso
from signet.transcript import Turn

router = APIRouter(tags=["ingest"], responses={400: {"model": ErrorResponse}, 422: {"model": ErrorResponse}})


class IngestTurn(StrictModel):
    role: Literal["user", "assistant", "note"]
    content: Annotated[str, Field(min_length=1, max_length=MAX_CONTENT_CHARS)]
    timestamp: UtcDatetime | None = None


class IngestRequest(StrictModel):
    path: Annotated[str, Field(min_length=1, max_length=4096)]
    content_hash: Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")] = Field(description="sha256 of the file's bytes")
    adapter: ShortText
    session_id: ShortText | None = None
    harness: ShortText | None = None
    project: ShortText | None = None
    agent_id: ShortText | None = None
    turns: Annotated[list[IngestTurn], Field(max_length=100_000)]


class IngestResponse(BaseModel):
    status: Literal["stored", "skipped"] = Field(description="`skipped`: this exact file was ingested before.")
    session_key: str
    turns: int
    job_id: str | None


@router.post("/api/ingest/transcript", response_model=IngestResponse)
def ingest(body: IngestRequest, runtime: RuntimeDep, scope: ScopeDep) -> IngestResponse:
    """Idempotent by content hash; a changed file replaces its session's turns."""
    agent, project = scope.owner(body.agent_id, body.project)  # Forbidden outside a token's scope
    turns = [Turn(t.role, t.content, to_iso(t.timestamp) if t.timestamp else None) for t in body.turns]
    out = ingest_transcript(
        runtime.db,
        content_hash=body.content_hash,
        path=body.path,
        adapter=body.adapter,
        turns=turns,
        session_id=body.session_id,
        harness=body.harness,
        project=project,
        agent_id=agent or scope.agent_id,
        enqueue=runtime.settings.memory.pipeline.enabled,
        max_attempts=runtime.settings.memory.pipeline.max_attempts,
    )
    return IngestResponse(status=out.status, session_key=out.session_key, turns=out.turns, job_id=out.job_id)
