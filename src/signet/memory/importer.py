"""Import an export file (signet.memory.export_format) into the store: idempotent, batch by batch.

Each batch is one write transaction: every line of it lands, or none does (a line the store
cannot take raises :class:`InvalidRequest` naming the line, and the batch rolls back). The
same file imported twice adds nothing the second time:

- a memory whose id is already stored is left as it is (``present``); one whose text is
  already live in the same agent and project under another id is not added either
  (``duplicate``: identical text is one memory per agent and project, migration 8);
- history rows and mentions are added with their memory only; entities and relations are
  matched by id, then by what makes them unique (an entity's agent and canonical name, a
  relation's two ends and type). An entity matched under another id is reported in
  ``entity_map`` (imported id -> stored id): the caller sends it with later batches, whose
  mentions and relations then point at the stored entity.

Ids, timestamps, versions and history are kept as exported. The content hash is recomputed
(a file cannot make two texts one memory). A vector is stored when it comes from the model the
store embeds with; any other live memory is left for the background embedder, as a remember
leaves it. Imported memories queue no extraction: what was extracted from them came along.
"""

from __future__ import annotations

import base64
import functools
import json
import uuid
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from signet.embedding.service import EmbeddingService
from signet.errors import InvalidRequest
from signet.memory.content import content_hash
from signet.memory.export_format import (
    BOOL_COLUMNS,
    MEMORY_COLUMNS,
    EntityLine,
    MemoryLine,
    RelationLine,
    RetirementLine,
)
from signet.search.vectors import VectorIndex
from signet.store import entity_links, lifecycle, vector_blob
from signet.store.database import Database
from signet.store.records import now_iso, record_history
from signet.store.sqlite import Connection, sqlite3

_MEMORY_INSERT = "INSERT INTO memories({cols}, normalized_content) VALUES ({marks}, '')".format(
    cols=", ".join(MEMORY_COLUMNS), marks=", ".join(f":{c}" for c in MEMORY_COLUMNS)
)


@dataclass
class ImportReport:
    memories_added: int = 0
    memories_present: int = 0
    """Already stored under the same id: left as they are."""
    memories_duplicate: int = 0
    """Their text is already a live memory of the same agent and project (another id)."""
    history_added: int = 0
    mentions_added: int = 0
    entities_added: int = 0
    entities_present: int = 0
    relations_added: int = 0
    relations_present: int = 0
    vectors_added: int = 0
    to_embed: int = 0
    """Live memories added without a usable vector: the background embedder fills them in."""
    rehashed: int = 0
    """Memories whose exported content hash was not their text's (recomputed)."""
    retirements_added: int = 0
    """Retirement ledger rows taken (or refreshed) from the file."""
    memories_retired: int = 0
    """Live memories not added, or retired in the store, because the ledger retires their text."""
    entity_map: dict[str, str] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


class Importer:
    def __init__(self, db: Database, embeddings: EmbeddingService, index: VectorIndex) -> None:
        self.db = db
        self.embeddings = embeddings
        self.index = index

    def import_batch(
        self,
        lines: list[EntityLine | RelationLine | RetirementLine | MemoryLine],
        *,
        first_line: int,
        entity_map: dict[str, str] | None = None,
    ) -> ImportReport:
        """Write ``lines`` (line ``first_line`` of the file and those after it) in one transaction."""
        known = dict(entity_map or {})

        def write(conn: Connection) -> ImportReport:
            report = ImportReport()
            for offset, line in enumerate(lines):
                lineno = first_line + offset
                try:
                    if isinstance(line, EntityLine):
                        self._entity(conn, line, known, report)
                    elif isinstance(line, RelationLine):
                        self._relation(conn, line, known, lineno, report)
                    elif isinstance(line, RetirementLine):
                        self._retirement(conn, line, report)
                    else:
                        self._memory(conn, line, known, lineno, report)
                except sqlite3.IntegrityError as exc:  # a row the store's constraints refuse
                    raise InvalidRequest(f"line {lineno}: the store refuses it: {exc}", line=lineno) from None
            return report

        report: ImportReport = self.db.write(write)
        if report.to_embed:
            self.embeddings.notify()
        return report

    # -- graph ---------------------------------------------------------------------------------
    def _entity(self, conn: Connection, e: EntityLine, known: dict[str, str], report: ImportReport) -> None:
        if conn.execute("SELECT 1 FROM entities WHERE id = ?", (e.id,)).fetchone():
            report.entities_present += 1
            return
        same = conn.execute(
            "SELECT id FROM entities WHERE agent_id = ? AND canonical_name = ?", (e.agent_id, e.canonical_name)
        ).fetchone()
        if same is not None:
            known[e.id] = report.entity_map[e.id] = str(same[0])
            report.entities_present += 1
            return
        conn.execute(
            "INSERT INTO entities(id, name, entity_type, description, canonical_name, mentions, embedding, agent_id,"
            " created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                e.id,
                e.name,
                e.entity_type,
                e.description,
                e.canonical_name,
                e.mentions,
                None if e.embedding is None else _bytes(e.embedding),
                e.agent_id,
                e.created_at,
                e.updated_at,
            ),
        )
        report.entities_added += 1

    @staticmethod
    def _resolve(conn: Connection, entity_id: str, known: dict[str, str], lineno: int, what: str) -> str:
        target = known.get(entity_id, entity_id)
        if conn.execute("SELECT 1 FROM entities WHERE id = ?", (target,)).fetchone() is None:
            raise InvalidRequest(
                f"line {lineno}: {what} names entity {entity_id}, which is neither in the store nor earlier in the file",
                line=lineno,
            )
        return target

    def _relation(
        self, conn: Connection, r: RelationLine, known: dict[str, str], lineno: int, report: ImportReport
    ) -> None:
        src = self._resolve(conn, r.source_entity_id, known, lineno, "the relation")
        dst = self._resolve(conn, r.target_entity_id, known, lineno, "the relation")
        if (
            conn.execute("SELECT 1 FROM relations WHERE id = ?", (r.id,)).fetchone()
            or conn.execute(
                "SELECT 1 FROM relations WHERE source_entity_id = ? AND target_entity_id = ? AND relation_type = ?",
                (src, dst, r.relation_type),
            ).fetchone()
        ):
            report.relations_present += 1
            return
        conn.execute(
            "INSERT INTO relations(id, source_entity_id, target_entity_id, relation_type, strength, mentions,"
            " confidence, metadata, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                r.id,
                src,
                dst,
                r.relation_type,
                r.strength,
                r.mentions,
                r.confidence,
                r.metadata,
                r.created_at,
                r.updated_at,
            ),
        )
        report.relations_added += 1

    # -- retirement ledger ---------------------------------------------------------------------
    def _retirement(self, conn: Connection, r: RetirementLine, report: ImportReport) -> None:
        """Take a ledger row and replay it: a live memory of the same text and owner is retired
        here too (a store rebuilt from an older copy does not keep what was retired since)."""
        lifecycle.retire(
            conn,
            content_hash=r.content_hash,
            agent_id=r.agent_id,
            project=r.project,
            memory_id=r.memory_id,
            content=r.content,
            reason=r.reason,
            retired_by=r.retired_by,
            retired_at=r.retired_at,
        )
        report.retirements_added += 1
        live = list(
            conn.execute(
                "SELECT id, version, content FROM memories WHERE content_hash = ? AND agent_id = ?"
                " AND COALESCE(project, '') = ? AND is_deleted = 0",
                (r.content_hash, r.agent_id, r.project or ""),
            )
        )
        for row in live:
            ts = now_iso()
            conn.execute(
                "UPDATE memories SET is_deleted = 1, deleted_at = ?, version = ?, updated_at = ?, updated_by = 'import'"
                " WHERE id = ?",
                (ts, int(row["version"]) + 1, ts, row["id"]),
            )
            record_history(
                conn,
                row["id"],
                "deleted",
                old_content=row["content"],
                new_content=None,
                changed_by="import",
                reason="retired: the imported retirement ledger holds this text",
                metadata={"hard": False, "retired": True, "content_hash": r.content_hash},
            )
            memory_id = str(row["id"])
            self.db.after_commit(functools.partial(self.index.remove, memory_id))
            report.memories_retired += 1

    # -- memories ------------------------------------------------------------------------------
    def _memory(
        self, conn: Connection, line: MemoryLine, known: dict[str, str], lineno: int, report: ImportReport
    ) -> None:
        m = line.memory
        if conn.execute("SELECT 1 FROM memories WHERE id = ?", (m.id,)).fetchone():
            report.memories_present += 1
            return
        chash = content_hash(m.content)
        if chash != m.content_hash:
            report.rehashed += 1
        live = not m.is_deleted
        if live and lifecycle.retirement(conn, chash, m.agent_id, m.project) is not None:
            report.memories_retired += 1  # the ledger retires this text for this owner
            return
        if (
            live
            and conn.execute(
                "SELECT 1 FROM memories WHERE content_hash = ? AND agent_id = ? AND COALESCE(project, '') = ?"
                " AND is_deleted = 0",
                (chash, m.agent_id, m.project or ""),
            ).fetchone()
        ):
            report.memories_duplicate += 1
            return
        row: dict[str, Any] = m.model_dump()
        row["content_hash"] = chash
        row["tags"] = json.dumps(m.tags)
        for k in BOOL_COLUMNS:
            row[k] = 1 if row[k] else 0
        vec, model = self._vector(conn, line, chash, report)
        if not live:
            # Nothing embeds a forgotten memory: it keeps what the export said (None without vectors).
            row["embedding_model"] = m.embedding_model
        elif vec is not None:
            row["embedding_model"] = model
        else:
            row["embedding_model"] = None  # no vector of this store's model: the embedder makes one
            report.to_embed += 1 if self.embeddings.makes_vectors else 0
        conn.execute(_MEMORY_INSERT, row)
        report.memories_added += 1
        for h in line.history:
            cur = conn.execute(
                "INSERT OR IGNORE INTO memory_history(id, memory_id, event, old_content, new_content, changed_by,"
                " reason, metadata, actor_type, session_id, request_id, created_at)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    h.id,
                    m.id,
                    h.event,
                    h.old_content,
                    h.new_content,
                    h.changed_by,
                    h.reason,
                    h.metadata,
                    h.actor_type,
                    h.session_id,
                    h.request_id,
                    h.created_at,
                ),
            )
            report.history_added += max(cur.rowcount, 0)
        for mention in line.mentions:
            entity = self._resolve(conn, mention.entity_id, known, lineno, "a mention")
            report.mentions_added += entity_links.link(
                conn, m.id, entity, mention.mention_text, mention.confidence, mention.created_at
            )
        if vec is not None and live and self.index.dimensions in (None, vec.shape[0]):
            memory_id, project, created = m.id, m.project, m.created_at
            self.db.after_commit(lambda: self.index.upsert(memory_id, vec, project, created))

    def _vector(self, conn: Connection, line: MemoryLine, chash: str, report: ImportReport) -> tuple[Any, str | None]:
        """The memory's vector under this store's model: the exported one (stored unless its text
        already has one) or one already stored for the same text; (None, None) when neither."""
        model = self.embeddings.model_key
        stored = conn.execute(
            "SELECT vector, model, dimensions FROM embeddings WHERE content_hash = ?", (chash,)
        ).fetchone()
        if stored is not None and stored["model"] == model:
            return vector_blob.decode(stored["vector"], int(stored["dimensions"])), model
        v = line.vector
        if v is None or v.model != model or stored is not None:
            return None, None  # another model's vector (or none): the embedder replaces it
        exported = np.frombuffer(v.vector_bytes(), dtype=vector_blob.LEGACY)  # float32: the export format
        taken = conn.execute("SELECT 1 FROM embeddings WHERE id = ?", (v.id,)).fetchone() is not None
        conn.execute(
            "INSERT INTO embeddings(id, content_hash, vector, dimensions, source_type, source_id, chunk_text,"
            " provider, model, created_at) VALUES (?, ?, ?, ?, 'memory', ?, '', ?, ?, ?)",
            (
                str(uuid.uuid4()) if taken else v.id,
                chash,
                vector_blob.encode(exported),
                v.dimensions,
                v.source_id,
                v.provider,
                v.model,
                v.created_at,
            ),
        )
        report.vectors_added += 1
        return vector_blob.as_stored(exported), model


def _bytes(b64: str) -> bytes:
    return base64.b64decode(b64)
