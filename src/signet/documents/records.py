"""The ``documents`` and ``document_memories`` rows (migration 16) as API models."""

from __future__ import annotations

import json
from typing import Any

from signet.errors import NotFound
from signet.models import Document, DocumentChunk
from signet.store.ids import complete_id
from signet.store.scope import ReadScope
from signet.store.sqlite import Connection


def document_from_row(row: Any) -> Document:
    return Document(
        id=row["id"],
        source_type=row["source_type"],
        source_url=row["source_url"],
        title=row["title"],
        content_type=row["content_type"],
        content_hash=row["content_hash"],
        status=row["status"],
        error=row["error"],
        chunk_count=int(row["chunk_count"]),
        memory_count=int(row["memory_count"]),
        agent_id=row["agent_id"],
        project=row["project"],
        visibility=row["visibility"],
        created_at=row["created_at"],
        updated_at=row["updated_at"],
        completed_at=row["completed_at"],
    )


def find(conn: Connection, given: str, scope: ReadScope) -> Any:
    """The document row ``given`` (an id or a unique prefix of one) names, readable in ``scope``."""
    where, params = scope.sql("m")
    doc_id = complete_id(conn, "documents", given, where=where, params=params, noun="document")
    row = conn.execute("SELECT * FROM documents WHERE id = ?", (doc_id,)).fetchone()
    if row is None or not scope.allows(row):
        raise NotFound(f"no document has id '{given}'", id=given)
    return row


def chunks(conn: Connection, document_id: str) -> list[DocumentChunk]:
    rows = conn.execute(
        "SELECT dm.chunk_index, dm.memory_id, dm.heading_path, m.content, m.is_deleted"
        " FROM document_memories dm LEFT JOIN memories m ON m.id = dm.memory_id"
        " WHERE dm.document_id = ? ORDER BY dm.chunk_index",
        (document_id,),
    ).fetchall()
    return [
        DocumentChunk(
            index=int(r["chunk_index"]),
            memory_id=r["memory_id"],
            heading_path=json.loads(r["heading_path"]),
            content=r["content"] or "",
            deleted=r["content"] is None or bool(r["is_deleted"]),
        )
        for r in rows
    ]


def live_job(conn: Connection, document_id: str, status: str) -> str | None:
    row = conn.execute(
        "SELECT id FROM memory_jobs WHERE job_type = 'document_ingest' AND document_id = ? AND status = ?"
        " ORDER BY created_at LIMIT 1",
        (document_id, status),
    ).fetchone()
    return None if row is None else str(row[0])
