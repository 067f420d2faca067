"""DocumentService: what the routes and the CLI ask of documents.

Adding a document checks its source at once (a refused URL or path is a 4xx, never a queued
failure), stores or refreshes its row and queues one ``document_ingest`` job, all in one
transaction; the :class:`~signet.documents.worker.DocumentWorker` does the rest. The same
source added again (the same URL, file, or title for pasted content, within one agent and
project) is the same document: it is queued again and its chunks are replaced.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from typing import Any

from signet.config import Settings
from signet.documents import index, records
from signet.documents.errors import DocumentFailed
from signet.documents.fetch import check_url
from signet.documents.paths import resolve_allowed
from signet.errors import Forbidden, InvalidRequest
from signet.memory.service import MemoryService
from signet.models import (
    Document,
    DocumentAddRequest,
    DocumentChunks,
    DocumentDeleted,
    DocumentList,
    DocumentQueued,
    DocumentStatus,
)
from signet.pipeline import queue
from signet.store.records import now_iso
from signet.store.scope import UNSCOPED, ReadScope
from signet.store.sqlite import Connection

JOB_TYPE = "document_ingest"


class DocumentService:
    def __init__(self, service: MemoryService, settings: Settings) -> None:
        self.service = service
        self.db = service.db
        self.settings = settings
        self.on_queued: list[Callable[[], None]] = []
        """Told when a job is queued (the worker wakes up)."""

    @property
    def max_attempts(self) -> int:
        return self.settings.memory.pipeline.max_attempts

    # -- add -------------------------------------------------------------------------------
    def add(
        self, req: DocumentAddRequest, *, scope: ReadScope = UNSCOPED, actor: str = "api", local: bool = False
    ) -> DocumentQueued:
        """Queue a document. ``local``: the caller is a local admin, the only one who may name a path."""
        agent, project = scope.owner(req.agent_id, req.project)
        fields: dict[str, Any] = {"raw_content": None, "kind": None}
        try:
            if req.url is not None:
                url = str(check_url(req.url, self.settings.documents))
                fields.update(source_type="url", source_url=url, source_key=url)
            elif req.path is not None:
                if not local:
                    raise Forbidden(
                        "file paths are accepted from local callers only; send the content instead",
                        reason="local_only",
                    )
                real = str(resolve_allowed(req.path, self.settings.documents.allowed_paths))
                fields.update(source_type="file", source_url=real, source_key=f"file:{real}")
            else:
                assert req.content is not None and req.title is not None  # the model checks it
                fields.update(
                    source_type="text",
                    source_url=None,
                    source_key=f"text:{req.title.strip()}",
                    raw_content=req.content,
                    kind=req.content_type,
                )
        except DocumentFailed as exc:
            raise InvalidRequest(exc.message) from None
        fields.update(
            agent_id=agent or "default",
            project=project,
            visibility=req.visibility.value if req.visibility is not None else "global",
            title=req.title.strip() if req.title else None,
            created_by=actor,
        )
        doc_id, created, job_id = self.db.write(lambda c: upsert(c, fields, self.max_attempts))
        for fn in self.on_queued:
            fn()
        document = self.db.read(lambda c: records.document_from_row(records.find(c, doc_id, UNSCOPED)))
        return DocumentQueued(document=document, created=created, job_id=job_id)

    # -- read ------------------------------------------------------------------------------
    def list(
        self,
        *,
        scope: ReadScope = UNSCOPED,
        status: DocumentStatus | None = None,
        project: str | None = None,
        limit: int = 50,
        offset: int = 0,
    ) -> DocumentList:
        where, params = scope.sql("d")
        clauses, args = [where], list(params)
        if status is not None:
            clauses.append("d.status = ?")
            args.append(status)
        if project is not None:
            clauses.append("d.project = ?")
            args.append(project)
        sql_where = " AND ".join(clauses)

        def read(conn: Connection) -> tuple[int, list[Any]]:
            total = conn.execute(f"SELECT COUNT(*) FROM documents d WHERE {sql_where}", args).fetchone()[0]
            rows = conn.execute(
                f"SELECT * FROM documents d WHERE {sql_where} ORDER BY d.created_at DESC, d.id LIMIT ? OFFSET ?",
                (*args, limit, offset),
            ).fetchall()
            return int(total), rows

        total, rows = self.db.read(read)
        return DocumentList(items=[records.document_from_row(r) for r in rows], total=total, limit=limit, offset=offset)

    def get(self, given: str, *, scope: ReadScope = UNSCOPED) -> Document:
        return self.db.read(lambda c: records.document_from_row(records.find(c, given, scope)))

    def chunks(self, given: str, *, scope: ReadScope = UNSCOPED) -> DocumentChunks:
        def read(conn: Connection) -> DocumentChunks:
            row = records.find(conn, given, scope)
            items = records.chunks(conn, row["id"])
            return DocumentChunks(document_id=row["id"], title=row["title"], chunks=items, count=len(items))

        return self.db.read(read)

    # -- delete ----------------------------------------------------------------------------
    def delete(self, given: str, *, scope: ReadScope = UNSCOPED) -> DocumentDeleted:
        """The document, its links, and the chunk memories no other document holds, in one
        transaction. A job still queued for it finds it gone and does nothing."""

        def write(conn: Connection) -> DocumentDeleted:
            row = records.find(conn, given, scope)
            if not scope.writable().allows(row):
                raise Forbidden(f"document '{row['id']}' belongs to another agent", reason="scope_mismatch")
            removed = index.remove_document(conn, self.service, row["id"])
            return DocumentDeleted(id=row["id"], status="deleted", memories_deleted=removed)

        return self.db.write(write)


def upsert(conn: Connection, f: dict[str, Any], max_attempts: int) -> tuple[str, bool, str | None]:
    """Store a new document or queue an existing one (same owner and ``source_key``) again, and
    queue its job: (id, created, job id). Inside the caller's transaction."""
    now = now_iso()
    # How to read pasted content (markdown, text, html) rides in the metadata: the
    # content_type column says what the worker found (a media type).
    meta = json.dumps({"title_given": f["title"] is not None, "kind": f["kind"]})
    row = conn.execute(
        "SELECT id FROM documents WHERE agent_id = ? AND COALESCE(project, '') = ? AND source_key = ?",
        (f["agent_id"], f["project"] or "", f["source_key"]),
    ).fetchone()
    created = row is None
    if row is None:
        doc_id = str(uuid.uuid4())
        conn.execute(
            "INSERT INTO documents(id, source_type, source_url, source_key, title, raw_content, status,"
            " metadata_json, agent_id, project, visibility, connector_id, created_by, created_at, updated_at)"
            " VALUES (?, ?, ?, ?, ?, ?, 'queued', ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                doc_id,
                f["source_type"],
                f["source_url"],
                f["source_key"],
                f["title"],
                f["raw_content"],
                meta,
                f["agent_id"],
                f["project"],
                f["visibility"],
                f.get("connector_id"),
                f["created_by"],
                now,
                now,
            ),
        )
    else:
        doc_id = str(row[0])
        conn.execute(
            "UPDATE documents SET status = 'queued', error = NULL, raw_content = ?,"
            " title = CASE WHEN ? IS NULL THEN title ELSE ? END, metadata_json = ?, visibility = ?,"
            " updated_at = ? WHERE id = ?",
            (f["raw_content"], f["title"], f["title"], meta, f["visibility"], now, doc_id),
        )
    # One pending job per document is enough; while one runs, a new one picks up the new content.
    job_id = records.live_job(conn, doc_id, "pending")
    if job_id is None:
        job_id, _ = queue.enqueue(
            conn, JOB_TYPE, payload={"document_id": doc_id}, max_attempts=max_attempts, document_id=doc_id
        )
    return doc_id, created, job_id
