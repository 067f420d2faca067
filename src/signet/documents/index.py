"""The indexing step: a document's chunks become memories in one transaction.

Each chunk is a ``document_chunk`` memory (importance 0.3) written through
:meth:`MemoryService.remember_in`, whose text starts with the document's title and the chunk's
heading path (``Deploy guide > Rollback: …``, with U+203A for ``>``), so a recall hit says where it came from, and
whose ``source_id`` is the document's id. ``document_memories`` links it with its position and
heading path. Re-ingesting replaces the chunks in the same one transaction: a chunk whose text
(content hash) is unchanged keeps its memory and vector, new text is added, and memories no
chunk uses any more are removed, unless another document (or the user, for identical text
remembered outside any document) still holds them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from signet.documents.chunking import Chunk
from signet.memory.content import parse_content
from signet.memory.service import MemoryService
from signet.models import MemoryType, RememberRequest, Visibility
from signet.store.sqlite import Connection

CHUNK_IMPORTANCE = 0.3
SOURCE_TYPE = "document"
ACTOR = "documents"
BREADCRUMB = " \u203a "  # a single right-pointing angle quotation mark


@dataclass(frozen=True)
class PreparedChunk:
    index: int
    heading_path: tuple[str, ...]
    content: str
    """The memory's text as stored (normalized), breadcrumb first."""
    content_hash: str


def memory_text(title: str | None, path: tuple[str, ...], text: str) -> str:
    """``Title > Heading > Sub: text`` (U+203A for ``>``): the chunk read alone still says where it is from."""
    if path and title and path[0].casefold() == title.casefold():
        path = path[1:]  # a title taken from the top heading is not said twice
    crumb = BREADCRUMB.join(p for p in (title or "Untitled", *path) if p)
    content = f"{crumb}: {text}"
    parsed = parse_content(content)
    if parsed.pinned or parsed.tags:  # a title such as "critical: …" must not pin or tag the chunk
        content = f"Document {content}"
    return content


def prepare(chunks: list[Chunk], title: str | None) -> list[PreparedChunk]:
    """The chunks as memory texts; a chunk whose text repeats an earlier one is dropped (spec:
    an identical hash already linked to the same document is skipped)."""
    out: list[PreparedChunk] = []
    seen: set[str] = set()
    for c in chunks:
        parsed = parse_content(memory_text(title, c.heading_path, c.text))
        if parsed.hash in seen:
            continue
        seen.add(parsed.hash)
        out.append(PreparedChunk(len(out), c.heading_path, parsed.content, parsed.hash))
    return out


def linked(conn: Connection, document_id: str) -> dict[str, str]:
    """content hash -> memory id of the document's live chunk memories."""
    rows = conn.execute(
        "SELECT m.content_hash, m.id FROM document_memories dm JOIN memories m ON m.id = dm.memory_id"
        " WHERE dm.document_id = ? AND m.is_deleted = 0",
        (document_id,),
    ).fetchall()
    return {str(r[0]): str(r[1]) for r in rows}


def drop_links(conn: Connection, service: MemoryService, document_id: str, memory_ids: list[str], reason: str) -> int:
    """Unlink ``memory_ids`` from the document; remove those that were document chunks and that
    no other document links. Returns how many memories were removed."""
    removed = 0
    for mid in memory_ids:
        conn.execute("DELETE FROM document_memories WHERE document_id = ? AND memory_id = ?", (document_id, mid))
        row = conn.execute(
            "SELECT source_type, EXISTS (SELECT 1 FROM document_memories WHERE memory_id = ?) AS held"
            " FROM memories WHERE id = ?",
            (mid, mid),
        ).fetchone()
        if row is None or row["source_type"] != SOURCE_TYPE or row["held"]:
            continue
        if service.delete_in(conn, mid, reason=reason, changed_by=ACTOR, force=True) is not None:
            removed += 1
    return removed


def replace_chunks(
    conn: Connection, service: MemoryService, doc: Any, chunks: list[PreparedChunk], vectors: dict[str, Any]
) -> dict[str, int]:
    """Make the document's chunk memories exactly ``chunks``; returns kept / added / removed /
    retired (chunks whose text the user retired: the document does not bring them back)."""
    current = linked(conn, doc["id"])
    stale = conn.execute("SELECT memory_id FROM document_memories WHERE document_id = ?", (doc["id"],)).fetchall()
    keep = {current[c.content_hash] for c in chunks if c.content_hash in current}
    gone = [str(r[0]) for r in stale if str(r[0]) not in keep]
    removed = drop_links(conn, service, doc["id"], gone, "document re-ingested: chunk no longer in it")
    kept = added = retired = 0
    for c in chunks:
        path = json.dumps(list(c.heading_path), ensure_ascii=False)
        mid = current.get(c.content_hash)
        if mid is None:
            row, _deduped = service.remember_in(
                conn,
                RememberRequest(
                    content=c.content,
                    type=MemoryType.DOCUMENT_CHUNK,
                    importance=CHUNK_IMPORTANCE,
                    who=ACTOR,
                    source_type=SOURCE_TYPE,
                    source_id=doc["id"],
                    project=doc["project"],
                    agent_id=doc["agent_id"],
                    visibility=Visibility(doc["visibility"]),
                ),
                changed_by=ACTOR,
                reason="document ingest",
                note={"document_id": doc["id"], "chunk_index": c.index},
                vector=vectors.get(c.content_hash),
            )
            if row is None or row["is_deleted"]:  # a retired text (memory_retirements): not linked
                retired += 1
                continue
            mid = str(row["id"])
            added += 1
        else:
            kept += 1
        conn.execute(
            "INSERT INTO document_memories(document_id, memory_id, chunk_index, heading_path) VALUES (?, ?, ?, ?)"
            " ON CONFLICT(document_id, memory_id) DO UPDATE SET chunk_index = excluded.chunk_index,"
            " heading_path = excluded.heading_path",
            (doc["id"], mid, c.index, path),
        )
    return {"kept": kept, "added": added, "removed": removed, "retired": retired}


def remove_document(conn: Connection, service: MemoryService, document_id: str) -> int:
    """Delete a document, its links and the chunk memories only it held; returns memories removed."""
    ids = [
        str(r[0]) for r in conn.execute("SELECT memory_id FROM document_memories WHERE document_id = ?", (document_id,))
    ]
    removed = drop_links(conn, service, document_id, ids, "document deleted")
    conn.execute("DELETE FROM documents WHERE id = ?", (document_id,))
    return removed
