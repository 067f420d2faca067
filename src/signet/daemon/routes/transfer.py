"""``GET /api/export`` and ``POST /api/import``: the whole store as JSON Lines, and back.

Both need ``admin``: an export holds every agent's memories, and an import writes memories
under whatever agent and project its lines name. ``signet export`` and ``signet import`` are
their clients (docs/operations.md, "Backups, export and import")."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query
from fastapi.responses import StreamingResponse
from pydantic import BaseModel, Field

from signet.daemon.deps import RuntimeDep
from signet.memory.export_format import DataLine, Id
from signet.memory.exporter import export_lines
from signet.memory.importer import Importer
from signet.models import ErrorResponse, StrictModel

router = APIRouter(tags=["export"], responses={400: {"model": ErrorResponse}, 422: {"model": ErrorResponse}})

NDJSON = "application/x-ndjson"
MAX_IMPORT_LINES = 1000


@router.get(
    "/api/export",
    response_class=StreamingResponse,
    responses={
        200: {
            "content": {NDJSON: {"schema": {"type": "string"}}},
            "description": "the export file: a header line, then entity, relation and memory lines",
        }
    },
)
def export(
    runtime: RuntimeDep,
    vectors: Annotated[bool, Query(description="include each memory's embedding (base64 float32)")] = False,
    deleted: Annotated[bool, Query(description="include forgotten (tombstoned) memories")] = True,
) -> StreamingResponse:
    """Stream every memory with its history, tags, entity mentions and (``vectors``) embedding,
    and the knowledge graph, from one read snapshot. Two exports of the same store are
    byte-identical."""
    lines = export_lines(
        runtime.db_path if runtime.sqlite else runtime.db,  # PostgreSQL: its own snapshot connection
        vectors=vectors,
        deleted=deleted,
        agent=runtime.settings.agent.name,
        embedding_model=runtime.embeddings.model_key,
    )
    return StreamingResponse(lines, media_type=NDJSON)


class ImportRequest(StrictModel):
    first_line: int = Field(
        2, ge=1, le=2**53, description="the file's line number of the first line sent (errors name lines)"
    )
    lines: Annotated[list[DataLine], Field(min_length=1, max_length=MAX_IMPORT_LINES)] = Field(
        description="entity, relation, retirement and memory lines of an export, in file order (not the header)"
    )
    entity_map: Annotated[dict[Id, Id], Field(max_length=100_000)] = Field(
        default_factory=dict,
        description="entity ids of the file -> ids in this store, as earlier batches answered them",
    )


class ImportResponse(BaseModel):
    memories_added: int
    memories_present: int = Field(description="already stored under the same id: left as they are")
    memories_duplicate: int = Field(description="same text already live for the same agent and project")
    history_added: int
    mentions_added: int
    entities_added: int
    entities_present: int
    relations_added: int
    relations_present: int
    vectors_added: int
    to_embed: int = Field(description="live memories queued for the background embedder")
    rehashed: int = Field(description="content hashes recomputed from the text")
    retirements_added: int = Field(0, description="retirement ledger rows taken from the file (docs/lifecycle.md)")
    memories_retired: int = Field(
        0, description="live memories not added, or retired here, because the ledger retires their text"
    )
    entity_map: dict[str, str] = Field(description="entities matched under another id: send with later batches")


@router.post("/api/import", response_model=ImportResponse)
def import_lines(body: ImportRequest, runtime: RuntimeDep) -> ImportResponse:
    """Import a batch of export lines in one transaction: all land or none does (400 naming the
    line). Idempotent: a memory already stored (same id, or same text for the same agent and
    project) is not added again."""
    importer = Importer(runtime.db, runtime.embeddings, runtime.index)
    report = importer.import_batch(body.lines, first_line=body.first_line, entity_map=body.entity_map)
    return ImportResponse(**report.as_dict())
