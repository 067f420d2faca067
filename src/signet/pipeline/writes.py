"""Shadow mode and controlled writes (spec 004 "Shadow Mode vs. Controlled Writes").

Every proposal leaves one ``memory_history`` row whose metadata carries ``shadow``,
``proposedAction``, ``targetMemoryId``, ``confidence``, ``contradictionRisk``,
``reviewNeeded``, ``blockedReason`` / ``skippedReason`` / ``dedupedExistingId`` and the
fact. Applied adds are the ``created`` event of the new memory; applied updates and
deletes are the ``modified`` / ``deleted`` events written by MemoryService's own modify and
delete paths (so the previous state is kept), with the proposal merged into their metadata.
Everything else is an event ``none``.

Vectors for adds are computed before the write transaction; an embedding failure only
means the fact is written without one (the background embedder fills it later).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from signet.config import PipelineSettings
from signet.embedding.base import EmbeddingError
from signet.errors import SignetError
from signet.memory.content import parse_content
from signet.memory.service import MemoryService
from signet.models import ModifyPatch, RememberRequest
from signet.pipeline import contradiction
from signet.pipeline.decision import Proposal
from signet.store.records import record_history
from signet.store.sqlite import Connection

log = logging.getLogger(__name__)

ACTOR = "pipeline-v2"
SHADOW_ACTOR = "pipeline-shadow"


@dataclass
class Source:
    """What a job extracted from: a memory, a transcript or a document."""

    kind: str
    ref: str
    """memory id, session key or document id: where proposals without a target are filed."""
    text: str
    agent_id: str = "default"
    project: str | None = None
    memory_id: str | None = None
    visibility: str | None = None
    """The source memory's visibility, which the facts derived from it keep: a fact read out of
    a private memory is private too (None: the store's default, ``global``)."""


@dataclass
class WriteReport:
    added: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    deduped: list[str] = field(default_factory=list)
    skipped: int = 0
    blocked: int = 0
    shadow: int = 0
    rejected: int = 0
    embedding_errors: list[str] = field(default_factory=list)
    memories: dict[str, str] = field(default_factory=dict)
    """id -> content of memories written from this job (for graph linking)."""

    def as_dict(self) -> dict[str, Any]:
        return {
            "added": self.added,
            "updated": self.updated,
            "deleted": self.deleted,
            "deduped": self.deduped,
            "skipped": self.skipped,
            "blocked": self.blocked,
            "shadow": self.shadow,
            "rejected": self.rejected,
            "embedding_errors": self.embedding_errors,
        }


def proposal_meta(p: Proposal, *, shadow: bool, source: Source, job_id: str, model: str) -> dict[str, Any]:
    return {
        "shadow": shadow,
        "proposedAction": p.action,
        "targetMemoryId": p.target_id,
        "confidence": p.confidence,
        "reason": p.reason,
        "contradictionRisk": False,
        "reviewNeeded": False,
        "fact": {"content": p.fact.content, "type": p.fact.type, "confidence": p.fact.confidence},
        "candidates": [c.id for c in p.candidates],
        "jobId": job_id,
        "source": {"kind": source.kind, "ref": source.ref},
        "model": model,
        "warnings": p.warnings or None,
    }


class Writer:
    def __init__(self, service: MemoryService, settings: PipelineSettings) -> None:
        self.service = service
        self.settings = settings

    # -- helpers ---------------------------------------------------------------------------
    def _note(self, conn: Connection, memory_id: str, meta: dict[str, Any], reason: str, *, shadow: bool) -> None:
        record_history(
            conn,
            memory_id,
            "none",
            old_content=None,
            new_content=meta["fact"]["content"],
            changed_by=SHADOW_ACTOR if shadow else ACTOR,
            reason=reason,
            metadata=meta,
            actor_type="daemon",
        )

    def _embed(self, texts: list[str], report: WriteReport) -> list[Any] | None:
        if not texts or not self.service.embeddings.ready:
            return None
        try:
            vecs = self.service.embeddings.embed_texts(texts)
        except EmbeddingError as exc:  # every provider's failure: the facts are still written, without vectors
            log.warning("pipeline: embedding %d facts failed, left for the background embedder: %s", len(texts), exc)
            report.embedding_errors.append(str(exc)[:300])
            return None
        return list(vecs) if vecs is not None else None

    # -- entry point -----------------------------------------------------------------------
    def apply(self, proposals: list[Proposal], source: Source, *, job_id: str, model: str) -> WriteReport:
        report = WriteReport()
        shadow = self.settings.shadow_mode
        metas = [proposal_meta(p, shadow=shadow, source=source, job_id=job_id, model=model) for p in proposals]
        targets = self._targets([p.target_id for p in proposals if p.target_id])
        for p, meta in zip(proposals, metas, strict=True):
            if p.action in ("update", "delete") and p.target_id in targets:
                c = contradiction.detect(p.fact.content, targets[p.target_id]["content"])
                meta["contradictionRisk"] = meta["reviewNeeded"] = c.risk
                meta["contradictionReason"] = c.reason
        if shadow:
            self.service.db.write(lambda conn: self._shadow(conn, proposals, metas, source, report))
            return report
        adds = [(p, m) for p, m in zip(proposals, metas, strict=True) if p.action == "add" and not p.rejected]
        to_embed = [p for p, m in adds if self._admissible(p, m) is None]
        vectors = self._embed([parse_content(p.fact.content).content for p in to_embed], report)
        vec_of = {id(p): v for p, v in zip(to_embed, vectors, strict=True)} if vectors is not None else {}
        self.service.db.write(lambda conn: self._controlled(conn, proposals, metas, source, vec_of, report))
        if report.added:
            self.service.embeddings.notify()
        for p, meta in zip(proposals, metas, strict=True):
            if p.action in ("update", "delete") and not p.rejected and meta.get("apply"):
                self._destructive(p, meta, report)
        return report

    def _targets(self, ids: list[str]) -> dict[str, Any]:
        if not ids:
            return {}
        marks = ",".join("?" for _ in ids)
        rows = self.service.db.read(
            lambda c: list(
                c.execute(f"SELECT id, content, pinned, is_deleted, version FROM memories WHERE id IN ({marks})", ids)
            )
        )
        return {r["id"]: r for r in rows}

    def _admissible(self, p: Proposal, meta: dict[str, Any]) -> str | None:
        """Why an add is skipped, or None: confidence threshold, empty content."""
        if p.fact.confidence < self.settings.min_fact_confidence_for_write:
            meta["skippedReason"] = (
                f"confidence {p.fact.confidence:g} is below minFactConfidenceForWrite "
                f"{self.settings.min_fact_confidence_for_write:g}"
            )
            return str(meta["skippedReason"])
        if not parse_content(p.fact.content).content.strip():
            meta["skippedReason"] = "empty after normalization"
            return "empty after normalization"
        return None

    # -- shadow ----------------------------------------------------------------------------
    def _shadow(
        self,
        conn: Connection,
        proposals: list[Proposal],
        metas: list[dict[str, Any]],
        source: Source,
        report: WriteReport,
    ) -> None:
        for p, meta in zip(proposals, metas, strict=True):
            self._note(conn, p.target_id or source.ref, meta, f"shadow proposal: {p.action} ({p.reason})", shadow=True)
            report.shadow += 1
            report.rejected += int(p.rejected)

    # -- controlled writes -----------------------------------------------------------------
    def _controlled(
        self,
        conn: Connection,
        proposals: list[Proposal],
        metas: list[dict[str, Any]],
        source: Source,
        vec_of: dict[int, Any],
        report: WriteReport,
    ) -> None:
        for p, meta in zip(proposals, metas, strict=True):
            if p.rejected:
                meta["skippedReason"] = "rejected decision"
                self._note(conn, source.ref, meta, p.reason, shadow=False)
                report.rejected += 1
            elif p.action == "none":
                self._note(conn, p.target_id or source.ref, meta, f"no change: {p.reason}", shadow=False)
                report.skipped += 1
            elif p.action == "add":
                self._add(conn, p, meta, source, vec_of.get(id(p)), report)
            else:
                self._gate_destructive(conn, p, meta, source, report)

    def _add(
        self, conn: Connection, p: Proposal, meta: dict[str, Any], source: Source, vector: Any, report: WriteReport
    ) -> None:
        why = self._admissible(p, meta)
        if why is not None:
            self._note(conn, source.ref, meta, f"skipped: {why}", shadow=False)
            report.skipped += 1
            return
        # The memory, its history (the decision in its metadata) and its vector: one transaction.
        row, deduped = self.service.remember_in(
            conn,
            RememberRequest(
                content=p.fact.content,
                type=p.fact.type,
                project=source.project,
                agent_id=source.agent_id,
                visibility=source.visibility,
                source_type="pipeline",
                source_id=source.ref,
                importance=0.5,
            ),
            changed_by=ACTOR,
            actor_type="daemon",
            reason=f"pipeline add: {p.reason}",
            note={**meta, "applied": True},
            vector=vector,
        )
        if deduped and (row is None or row["is_deleted"]):  # a retired text (docs/lifecycle.md)
            meta["retiredId"] = row["id"] if row is not None else None
            self._note(conn, source.ref, meta, "skipped: the text was retired", shadow=False)
            report.skipped += 1
            return
        if deduped:
            meta["dedupedExistingId"] = row["id"]
            self._note(conn, row["id"], meta, "deduplicated: a memory with this content exists", shadow=False)
            report.deduped.append(row["id"])
            return
        conn.execute(
            "UPDATE memories SET confidence = ?, extraction_model = ?, extraction_status = 'derived' WHERE id = ?",
            (p.fact.confidence, meta["model"], row["id"]),
        )
        report.added.append(row["id"])
        report.memories[row["id"]] = row["content"]

    def _gate_destructive(
        self, conn: Connection, p: Proposal, meta: dict[str, Any], source: Source, report: WriteReport
    ) -> None:
        target = conn.execute(
            "SELECT id, content, pinned, is_deleted FROM memories WHERE id = ?", (p.target_id,)
        ).fetchone()
        blocked: str | None = None
        if target is None or target["is_deleted"]:
            blocked = "target memory no longer exists"
        elif target["id"] == source.memory_id:
            blocked = "the pipeline never changes the memory it extracted from"
        elif not self.settings.allow_update_delete:
            blocked = "allowUpdateDelete is off"
        elif meta["contradictionRisk"]:
            blocked = "contradiction risk: needs review"
        elif p.action == "delete" and target["pinned"]:
            blocked = "pinned memories are never deleted by the pipeline"
        if blocked is not None:
            meta["blockedReason"] = blocked
            self._note(conn, p.target_id or source.ref, meta, f"blocked {p.action}: {blocked}", shadow=False)
            report.blocked += 1
        else:
            meta["apply"] = True

    def _destructive(self, p: Proposal, meta: dict[str, Any], report: WriteReport) -> None:
        """Apply an update or delete through the memory service, in one transaction with its
        history row (which carries the decision): a crash leaves both or neither."""
        assert p.target_id is not None
        target = p.target_id
        meta.pop("apply", None)
        reason = f"pipeline {p.action}: {p.reason}"
        note = {**meta, "applied": True}
        svc = self.service
        vector = svc.embed_for_write(target, parse_content(p.fact.content).content) if p.action == "update" else None

        def write(conn: Connection) -> bool:
            if p.action == "update":
                res = svc.modify_in(
                    conn,
                    ModifyPatch(id=target, content=p.fact.content),
                    reason=reason,
                    changed_by=ACTOR,
                    actor_type="daemon",
                    vector=vector,
                    note=note,
                )
                if res.status != "updated":
                    raise SignetError(f"modify returned {res.status}: {res.error or ''}")
                return bool(res.content_changed and not res.embedded)
            if svc.delete_in(conn, target, reason=reason, changed_by=ACTOR, actor_type="daemon", note=note) is None:
                raise SignetError("the target memory no longer exists")
            return False

        try:
            pending_vector = svc.db.write(write)
        except SignetError as exc:
            why = f"{p.action} failed: {exc.message}"
            meta["blockedReason"] = why
            svc.db.write(lambda conn: self._note(conn, target, meta, f"blocked {why}", shadow=False))
            report.blocked += 1
            return
        if pending_vector:
            svc.embeddings.notify()
        (report.updated if p.action == "update" else report.deleted).append(target)
