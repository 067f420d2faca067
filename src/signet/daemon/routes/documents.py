"""Document endpoints: add (URL, content, or a local file path), list, get, chunks, delete."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query
from starlette.concurrency import run_in_threadpool

from signet.daemon.deps import ActorDep, LocalAdminDep, RuntimeDep, ScopeDep
from signet.models import (
    Document,
    DocumentAddRequest,
    DocumentChunks,
    DocumentDeleted,
    DocumentList,
    DocumentQueued,
    DocumentStatus,
    ErrorResponse,
)

ERRORS: dict[int | str, dict[str, object]] = {
    400: {"model": ErrorResponse},
    403: {"model": ErrorResponse},
    404: {"model": ErrorResponse},
    422: {"model": ErrorResponse},
}

router = APIRouter(tags=["documents"], responses=ERRORS)


@router.post("/api/documents", response_model=DocumentQueued, status_code=202)
async def add_document(
    body: DocumentAddRequest, runtime: RuntimeDep, actor: ActorDep, scope: ScopeDep, local: LocalAdminDep
) -> DocumentQueued:
    """Queue a document: a ``url`` to fetch, ``content`` with a ``title``, or (local callers
    only) a file ``path``. Returns at once; the document's ``status`` then moves
    queued → extracting → chunking → embedding → indexing → done (or failed, with ``error``).
    The same source added again is ingested again and its chunks replaced."""
    # The URL check resolves the host (a blocking call): off the event loop.
    return await run_in_threadpool(runtime.documents.add, body, scope=scope, actor=actor, local=local)


@router.get("/api/documents", response_model=DocumentList)
def list_documents(
    runtime: RuntimeDep,
    scope: ScopeDep,
    status: Annotated[DocumentStatus | None, Query()] = None,
    project: Annotated[str | None, Query(max_length=200)] = None,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
    offset: Annotated[int, Query(ge=0, le=10_000_000)] = 0,
) -> DocumentList:
    """Documents, newest first, filtered by status or project."""
    return runtime.documents.list(scope=scope, status=status, project=project, limit=limit, offset=offset)


@router.get("/api/documents/{document_id}", response_model=Document)
def get_document(document_id: str, runtime: RuntimeDep, scope: ScopeDep) -> Document:
    """One document: its status, error, title and counts (a unique id prefix will do)."""
    return runtime.documents.get(document_id, scope=scope)


@router.get("/api/documents/{document_id}/chunks", response_model=DocumentChunks)
def document_chunks(document_id: str, runtime: RuntimeDep, scope: ScopeDep) -> DocumentChunks:
    """The document's chunks in order: each chunk's memory, heading path and text."""
    return runtime.documents.chunks(document_id, scope=scope)


@router.delete("/api/documents/{document_id}", response_model=DocumentDeleted)
def delete_document(document_id: str, runtime: RuntimeDep, scope: ScopeDep) -> DocumentDeleted:
    """Delete the document and the chunk memories no other document holds (hard delete)."""
    return runtime.documents.delete(document_id, scope=scope)
