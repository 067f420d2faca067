"""Operator repair actions: retention sweep, keyword index consistency, embedding gaps."""

from __future__ import annotations

from fastapi import APIRouter
from pydantic import BaseModel, Field

from signet.daemon.deps import RuntimeDep
from signet.models import ErrorResponse, StrictModel
from signet.store.integrity import check_keyword_indexes, rebuild_keyword_indexes

router = APIRouter(tags=["repair"], responses={422: {"model": ErrorResponse}})


class SweepResponse(BaseModel):
    graph_links: int
    orphaned_entities: int
    embeddings: int
    tombstones: int
    history: int
    completed_jobs: int
    dead_jobs: int
    keyword_log: int = Field(0, description="keyword change-log entries trimmed (the newest are kept)")


class FtsCheckRequest(StrictModel):
    repair: bool = Field(False, description="rebuild both keyword indexes when the check finds them inconsistent")
    force: bool = Field(
        False,
        description="rebuild both keyword indexes whatever the check finds: for drift the check cannot see, "
        "such as a memory's stale thread context in memories_ctx_fts (same row counts, intact FTS5 index)",
    )


class FtsCheckResponse(BaseModel):
    memories: int
    indexed: int = Field(description="rows in memories_fts (content only: the legacy keyword-only search)")
    context_indexed: int = Field(
        description="rows in memories_ctx_fts (content + thread context: recall's keyword leg)"
    )
    consistent: bool
    rebuilt: bool = Field(description="whether this call rebuilt the indexes")


class EmbeddingGapsResponse(BaseModel):
    pending: int
    provider: str
    model: str
    state: str


@router.post("/api/repair/retention-sweep", response_model=SweepResponse)
def retention_sweep(runtime: RuntimeDep) -> SweepResponse:
    """Run the retention sweep now (tombstones, history, old jobs), in the mandatory order."""
    return SweepResponse(**runtime.retention.sweep().as_dict())


@router.post("/api/repair/check-fts", response_model=FtsCheckResponse)
def check_fts(runtime: RuntimeDep, body: FtsCheckRequest | None = None) -> FtsCheckResponse:
    """Compare both keyword indexes with the memories table; ``repair`` rebuilds them when they differ,
    ``force`` rebuilds them in any case.

    Both are rebuilt together, in one write: recall's keyword leg reads ``memories_ctx_fts``
    and the legacy keyword-only search reads ``memories_fts``, and a repair that fixed one
    while leaving the other broken would leave recall answering differently by route.
    """

    check = runtime.db.write(check_keyword_indexes)
    rebuilt = False
    if body is not None and (body.force or (body.repair and not check.consistent)):
        runtime.db.write(rebuild_keyword_indexes)
        rebuilt = True
        check = runtime.db.write(check_keyword_indexes)
    return FtsCheckResponse(
        memories=check.memories,
        indexed=check.indexed,
        context_indexed=check.context_indexed,
        consistent=check.consistent,
        rebuilt=rebuilt,
    )


@router.get("/api/repair/embedding-gaps", response_model=EmbeddingGapsResponse)
def embedding_gaps(runtime: RuntimeDep) -> EmbeddingGapsResponse:
    """How many live memories still lack a vector from the configured model."""
    e = runtime.embeddings
    return EmbeddingGapsResponse(
        pending=e.pending_count(), provider=e.settings.provider, model=e.settings.model, state=e.state
    )


@router.post("/api/repair/re-embed", response_model=EmbeddingGapsResponse)
def re_embed(runtime: RuntimeDep) -> EmbeddingGapsResponse:
    """Wake the embedder to fill every gap now (it also does so continuously)."""
    runtime.embeddings.notify()
    return embedding_gaps(runtime)
