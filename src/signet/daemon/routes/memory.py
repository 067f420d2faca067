"""Memory endpoints: remember, recall, list, get, modify, forget, recover, history, export."""

from __future__ import annotations

import asyncio
from typing import Annotated

from fastapi import APIRouter, Query
from starlette.concurrency import run_in_threadpool

from signet.daemon.deps import ActorDep, RuntimeDep, ScopeDep
from signet.errors import InvalidRequest
from signet.knowledge import hints as stored_hints
from signet.models import (
    MAX_QUERY_CHARS,
    DeleteResponse,
    EmbeddingExport,
    ErrorResponse,
    ForgetRequest,
    ForgetResponse,
    HintsResponse,
    HistoryResponse,
    ListQuery,
    Memory,
    MemoryHint,
    MemoryList,
    MemoryType,
    ModifyRequest,
    ModifyResponse,
    ModifyResult,
    PatchMemoryRequest,
    RecallRequest,
    RecallResponse,
    RecoverRequest,
    RecoverResponse,
    RememberBatchRequest,
    RememberBatchResponse,
    RememberRequest,
    RememberResponse,
)
from signet.store.filters import MemoryFilter

ERRORS: dict[int | str, dict[str, object]] = {
    400: {"model": ErrorResponse},
    404: {"model": ErrorResponse},
    409: {"model": ErrorResponse},
    422: {"model": ErrorResponse},
}

router = APIRouter(tags=["memory"], responses=ERRORS)

MemoryId = Annotated[str, Query(min_length=1, max_length=200)]
QueryText = Annotated[str, Query(max_length=MAX_QUERY_CHARS)]
Limit = Annotated[int, Query(ge=1, le=200)]
Offset = Annotated[int, Query(ge=0, le=10_000_000)]


@router.post("/api/memory/remember", response_model=RememberResponse)
async def remember(body: RememberRequest, runtime: RuntimeDep, actor: ActorDep, scope: ScopeDep) -> RememberResponse:
    """Store a memory. Returns at once; the vector is computed in the background.

    On the embedded store a remember that overlaps others is answered once it is committed to
    the intake (``queued: true``) and stored as a memory a moment later, before any later
    request to this daemon is answered (docs/reliability.md#the-remember-intake).

    The same content (after normalization) returns the existing id with ``deduped: true``. With
    ``memory.reinforce`` on, a text similar to a live memory of the same type and owner reinforces
    it (``reinforced: <id>``); a retired text is not stored (``retired: true``): docs/lifecycle.md.
    """
    # Async on purpose: the write is awaited on the writer thread's future, so a remember
    # costs no worker-thread hop (remember throughput is what importers and hooks feel).
    # With reinforcement on, the text is embedded first (the check), on a worker thread.
    if runtime.service.reinforcing:
        return await run_in_threadpool(runtime.service.remember, body, changed_by=body.who or actor, scope=scope)
    if runtime.intake is not None:  # answered once committed, stored a moment later (signet.memory.intake)
        return await runtime.intake.accept(body, changed_by=body.who or actor, scope=scope)
    fut = runtime.service.submit_remember(body, changed_by=body.who or actor, scope=scope)
    return runtime.service.finish_remember(await asyncio.wrap_future(fut))


@router.post("/api/memory/remember/batch", response_model=RememberBatchResponse)
def remember_batch(
    body: RememberBatchRequest, runtime: RuntimeDep, actor: ActorDep, scope: ScopeDep
) -> RememberBatchResponse:
    """Store many memories in one transaction (importers): all or nothing."""
    results = runtime.service.remember_batch(body.items, changed_by=actor, scope=scope)
    deduped = sum(1 for r in results if r.deduped)
    retired = sum(1 for r in results if r.retired)  # refused: the retirement ledger holds the text
    return RememberBatchResponse(results=results, created=len(results) - deduped - retired, deduped=deduped)


@router.post("/api/memory/recall", response_model=RecallResponse)
async def recall(body: RecallRequest, runtime: RuntimeDep, scope: ScopeDep) -> RecallResponse:
    """Hybrid search (BM25 + vectors). ``vector_search.available`` says whether vectors took part."""
    # The recall blocks (SQLite, the query embedding), so it runs on a worker thread; the
    # handler itself is async so FastAPI checks the response here instead of taking a second
    # worker-thread hop for it (it does that for sync handlers).
    return await run_in_threadpool(runtime.service.recall, body, scope=scope)


@router.get("/api/memory/search", response_model=RecallResponse)
def search(
    runtime: RuntimeDep,
    scope: ScopeDep,
    q: QueryText,
    limit: Limit = 10,
    type: MemoryType | None = None,
    project: Annotated[str | None, Query(max_length=200)] = None,
    who: Annotated[str | None, Query(max_length=200)] = None,
) -> RecallResponse:
    """Hybrid search with query parameters (same engine as recall)."""
    return runtime.service.recall(RecallRequest(query=q, limit=limit, type=type, project=project, who=who), scope=scope)


@router.get("/memory/search", response_model=RecallResponse, tags=["legacy"])
def legacy_search(runtime: RuntimeDep, scope: ScopeDep, q: QueryText, limit: Limit = 10) -> RecallResponse:
    """Legacy keyword-only search (alpha = 0)."""
    return runtime.service.recall(RecallRequest(query=q, limit=limit, alpha=0.0, min_score=0.0), scope=scope)


@router.get("/memory/similar", response_model=RecallResponse, tags=["legacy"])
def similar(runtime: RuntimeDep, scope: ScopeDep, id: MemoryId, limit: Limit = 10) -> RecallResponse:
    """Vector neighbours of a stored memory."""
    return runtime.service.similar(id, limit=limit, scope=scope)


@router.get("/api/memories", response_model=MemoryList)
def list_memories(runtime: RuntimeDep, scope: ScopeDep, q: Annotated[ListQuery, Query()]) -> MemoryList:
    """Memories, newest first, with pagination and filters."""
    flt = MemoryFilter(
        type=q.type.value if q.type else None,
        project=q.project,
        who=q.who,
        tags=q.tags,
        pinned=q.pinned,
        since=q.since,
        until=q.until,
        include_deleted=q.include_deleted,
        scope=scope,
    )
    return runtime.service.list_memories(flt, limit=q.limit, offset=q.offset, count=q.count)


@router.get("/api/memory/{memory_id}", response_model=Memory)
def get_memory(memory_id: str, runtime: RuntimeDep, scope: ScopeDep) -> Memory:
    return runtime.service.get(memory_id, scope=scope)


@router.patch("/api/memory/{memory_id}", response_model=ModifyResult)
def patch_memory(
    memory_id: str, body: PatchMemoryRequest, runtime: RuntimeDep, actor: ActorDep, scope: ScopeDep
) -> ModifyResult:
    """Update fields of one memory; ``reason`` is required, ``if_version`` guards concurrent edits."""
    return runtime.service.patch(memory_id, body, changed_by=actor, scope=scope)


@router.delete("/api/memory/{memory_id}", response_model=DeleteResponse)
def delete_memory(
    memory_id: str,
    runtime: RuntimeDep,
    actor: ActorDep,
    scope: ScopeDep,
    reason: Annotated[str, Query(min_length=1, max_length=2000)],
    if_version: Annotated[int | None, Query(ge=1)] = None,
    force: bool = False,
) -> DeleteResponse:
    """Soft-delete one memory (recoverable); ``force=true`` hard-deletes."""
    if not reason.strip():
        raise InvalidRequest("reason must not be blank")
    return runtime.service.delete(
        memory_id, reason=reason, if_version=if_version, force=force, changed_by=actor, scope=scope
    )


@router.get("/api/memory/{memory_id}/history", response_model=HistoryResponse)
def memory_history(memory_id: str, runtime: RuntimeDep, scope: ScopeDep) -> HistoryResponse:
    return runtime.service.history(memory_id, scope=scope)


@router.get("/api/memory/{memory_id}/hints", response_model=HintsResponse)
def memory_hints(memory_id: str, runtime: RuntimeDep, scope: ScopeDep) -> HintsResponse:
    """The questions the memory would answer (prospective hints, docs/recall.md); 404 like GET."""
    mid = runtime.service.get(memory_id, scope=scope).id
    rows = runtime.db.read(lambda c: stored_hints.of_memory(c, mid))
    return HintsResponse(
        memory_id=mid,
        enabled=runtime.settings.memory.pipeline.hints.enabled,
        hints=[MemoryHint(hint=h, source=src, created_at=at) for h, src, at in rows],
    )


@router.post("/api/memory/{memory_id}/recover", response_model=RecoverResponse)
def recover(
    memory_id: str, body: RecoverRequest, runtime: RuntimeDep, actor: ActorDep, scope: ScopeDep
) -> RecoverResponse:
    """Undo a soft delete within the retention window."""
    return runtime.service.recover(memory_id, body, changed_by=actor, scope=scope)


@router.post("/api/memory/modify", response_model=ModifyResponse)
def modify(body: ModifyRequest, runtime: RuntimeDep, actor: ActorDep, scope: ScopeDep) -> ModifyResponse:
    """Batch patches; each result says updated / unchanged / not_found / version_conflict / duplicate."""
    return runtime.service.modify(body, changed_by=actor, scope=scope)


@router.post("/api/memory/forget", response_model=ForgetResponse)
def forget(body: ForgetRequest, runtime: RuntimeDep, actor: ActorDep, scope: ScopeDep) -> ForgetResponse:
    """Preview (default) or execute a batch forget. Large batches need the preview's confirm_token."""
    return runtime.service.forget(body, changed_by=actor, scope=scope)


@router.get("/api/embeddings", response_model=EmbeddingExport, tags=["embeddings"])
def export_embeddings(
    runtime: RuntimeDep,
    scope: ScopeDep,
    limit: Annotated[int, Query(ge=1, le=5000)] = 500,
    offset: Offset = 0,
    vectors: bool = False,
) -> EmbeddingExport:
    """Stored embeddings; ``vectors=true`` includes the floats."""
    return runtime.service.export_embeddings(limit=limit, offset=offset, with_vectors=vectors, scope=scope)
