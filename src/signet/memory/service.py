"""MemoryService: the one implementation of remember, recall, modify, forget and recover.

Every surface (HTTP routes, hooks, CLI, MCP, SDK through the daemon, the pipeline and the
benchmarks) calls these methods, so the semantics of spec 004 live in one place. Each
mutation is one write transaction that also writes its ``memory_history`` event, so a
crash at any point leaves either the whole change or none of it.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import time
import uuid
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Literal, Protocol

from signet import __version__
from signet.config import Settings
from signet.embedding.base import EmbeddingError
from signet.embedding.service import EmbeddingService
from signet.errors import (
    ConfirmationRequired,
    Conflict,
    Forbidden,
    InvalidRequest,
    MutationsFrozen,
    NotDeleted,
    NotFound,
    RetentionExpired,
    VersionConflict,
)
from signet.memory import expand
from signet.memory.content import infer_type, parse_content
from signet.memory.signals import SignalBoard
from signet.models import (
    DeleteResponse,
    EmbeddingExport,
    EmbeddingRecord,
    EmbeddingStatus,
    ForgetCandidate,
    ForgetRequest,
    ForgetResponse,
    HistoryEvent,
    HistoryResponse,
    IntakeStatus,
    KeywordIndexState,
    Memory,
    MemoryList,
    ModifyPatch,
    ModifyRequest,
    ModifyResponse,
    ModifyResult,
    PatchMemoryRequest,
    RecallRequest,
    RecallResponse,
    RecallResult,
    RecoverRequest,
    RecoverResponse,
    RememberRequest,
    RememberResponse,
    SplitResponse,
    StatusResponse,
    StorageStatus,
    UnretireResponse,
    VectorSearchState,
)
from signet.search.keyword_mirror import KeywordMirror
from signet.search.recall import Recaller, result_fields
from signet.search.traversal import graph_state
from signet.search.vectors import VectorIndex
from signet.store import entity_links, lifecycle, space, vector_blob
from signet.store.database import Database
from signet.store.filters import MemoryFilter
from signet.store.ids import complete_id
from signet.store.locking import skip_locked
from signet.store.records import history_contents, load_tags, memory_from_row, now_iso, record_history, to_iso
from signet.store.scope import UNSCOPED, ReadScope
from signet.store.sqlite import Connection

log = logging.getLogger(__name__)

_INSERT_SQL = (
    "INSERT INTO memories(id, type, content, normalized_content, content_hash, importance, pinned, tags, who, why,"
    " project, source_type, source_id, created_at, updated_at, updated_by, agent_id, visibility, embedding_model)"
    " VALUES (:id, :type, :content, :normalized_content, :content_hash, :importance, :pinned, :tags, :who, :why,"
    " :project, :source_type, :source_id, :created_at, :updated_at, :updated_by, :agent_id, :visibility,"
    " :embedding_model) ON CONFLICT DO NOTHING RETURNING *"
)

ReinforceCheck = Literal["off", "checked", "skipped_not_ready", "skipped_pinned", "not_checked"]
"""What the reinforcement check did: ``off``, ``checked``, ``skipped_not_ready``, ``skipped_pinned``, ``not_checked``."""

NO_REINFORCE_TYPE = "document_chunk"
"""Document chunks are never reinforced: two chunks saying much the same are two places in documents."""

REINFORCE_CANDIDATES = 32
"""Nearest stored vectors examined for a reinforcement (the first live one of the same type
and owner at or above the threshold wins)."""


@dataclass(frozen=True)
class Stored:
    """What one write of a new text did: stored it, found it stored (``deduped``), added a
    confirmation to a similar memory (``reinforced``), or refused it (``retired``: ``row`` is
    the ledger's row, not a memory)."""

    row: Any
    deduped: bool
    reinforced: str | None = None
    retired: bool = False
    check: ReinforceCheck = "not_checked"
    mem: dict[str, Any] | None = None


class IntakeView(Protocol):
    """What the status reads of the remember intake (signet.memory.intake, which builds on this
    module: a protocol keeps the dependency one way)."""

    @property
    def pending(self) -> int: ...

    def status(self) -> IntakeStatus: ...


@dataclass(frozen=True)
class Candidates:
    """The reinforcement check, computed before the write transaction: the new text's vector
    and the stored memories at or above the threshold, most similar first."""

    check: ReinforceCheck
    vector: Any = None
    hits: tuple[tuple[str, float], ...] = ()


RememberHook = Callable[[Any, dict[str, Any]], None]
PrepareHook = Callable[[dict[str, Any]], None]
RecallHook = Callable[[RecallRequest, RecallResponse, ReadScope], None]
EXPLICIT_IMPORTANCE = 0.8


STORAGE_TTL_S = 30.0
"""How long ``status`` reuses its storage figures."""


class MemoryService:
    def __init__(
        self,
        db: Database,
        settings: Settings,
        embeddings: EmbeddingService,
        index: VectorIndex,
        *,
        workspace_root: str = "",
        keywords: KeywordMirror | None = None,
    ) -> None:
        self.db = db
        self.settings = settings
        self.embeddings = embeddings
        self.index = index
        self.recaller = Recaller(db, settings, index, embeddings, keywords)
        self.workspace_root = workspace_root
        self.started = time.time()
        self._storage_cache: tuple[float, StorageStatus] | None = None
        self.prepare_hooks: list[PrepareHook] = []
        """Called by :meth:`_prepare` with the memory dict, on the caller's thread before the
        write is queued: work that needs no transaction belongs here, not on the writer
        thread, which every write waits for in turn. They may add keys (the dict's SQL uses
        only its named columns)."""
        self.on_remember_tx: list[RememberHook] = []
        """Called inside the remember transaction with (conn, memory dict) for new memories."""
        self.on_recall: list[RecallHook] = []
        """Called after every recall with (request, response, scope): analytics, telemetry and
        the recall QA ledger listen here (signet.ops.observe). They must be cheap and not raise."""
        self.signals = SignalBoard(db, settings.memory.signals)
        self.intake: IntakeView | None = None
        """The remember intake, when the runtime runs one (its state is part of the status)."""

    @property
    def decay_rate(self) -> float:
        return self.settings.memory.decay_rate

    # -- remember --------------------------------------------------------------------------
    def _prepare(self, req: RememberRequest, scope: ReadScope, *, hooks: bool = True) -> dict[str, Any]:
        """The memory row a request makes; ``hooks`` False leaves :attr:`prepare_hooks` (the
        extractor's work) to whoever stores it later (signet.memory.intake)."""
        agent, project = scope.owner(req.agent_id, req.project)  # Forbidden outside a token's scope
        parsed = parse_content(req.content)
        pinned = bool(req.pinned) or parsed.pinned
        tags = list(dict.fromkeys([*parsed.tags, *(req.tags or [])]))
        importance = 1.0 if pinned else (req.importance if req.importance is not None else EXPLICIT_IMPORTANCE)
        now = now_iso()
        mem = {
            "id": str(uuid.uuid4()),
            "content": parsed.content,
            "normalized_content": "",  # not kept: only its hash is used (signet.store.migrations, 12)
            "content_hash": parsed.hash,
            "type": req.type.value if req.type is not None else infer_type(parsed.content),
            "importance": importance,
            "pinned": 1 if pinned else 0,
            "tags": json.dumps(tags),
            "who": req.who,
            "why": req.why,
            "project": project,
            "source_type": req.source_type,
            "source_id": req.source_id,
            "created_at": to_iso(req.created_at) if req.created_at is not None else now,
            "updated_at": now,
            "agent_id": agent or "default",
            "visibility": req.visibility.value if req.visibility is not None else "global",
        }
        if hooks:
            self.run_prepare_hooks(mem)
        return mem

    def run_prepare_hooks(self, mem: dict[str, Any]) -> None:
        for hook in self.prepare_hooks:
            hook(mem)

    @staticmethod
    def live_duplicate(
        conn: Connection, content_hash: str, agent_id: str, project: str | None, exclude_id: str | None = None
    ) -> Any:
        """The live memory with this text in the same dedupe scope (agent and project), if any.

        Mirrors the unique index of migration 8: identical text is one memory per agent and
        project, so another agent or project saying the same thing gets its own memory.
        """
        return conn.execute(
            "SELECT * FROM memories WHERE content_hash = ? AND agent_id = ? AND COALESCE(project, '') = ?"
            " AND is_deleted = 0 AND id IS NOT ?",
            (content_hash, agent_id, project or "", exclude_id),
        ).fetchone()

    def insert(
        self,
        conn: Connection,
        mem: dict[str, Any],
        changed_by: str,
        actor_type: str | None,
        *,
        reason: str = "remember",
        note: dict[str, Any] | None = None,
        vector: Any = None,
        candidates: Candidates | None = None,
    ) -> Stored:
        """Insert, dedup (same text, agent and project), reinforce or refuse, inside a write transaction.

        A text in the retirement ledger for this owner is refused (nothing written). With
        ``candidates`` (the reinforcement check), the first live memory among them of the same
        type and owner, not pinned, takes a confirmation and the text goes into its history as a
        ``reinforced`` event, instead of a new memory (docs/lifecycle.md).

        One statement does the dedupe and the insert: the unique index of migration 8 turns a
        duplicate into "no row returned" (``ON CONFLICT DO NOTHING``), and ``RETURNING`` gives
        the stored row without reading it again. A stored vector for this text is found first,
        so the row is complete as returned. The writer thread runs every write in turn, so each
        statement saved here is throughput (docs/benchmarks.md, latency).
        """
        check = candidates.check if candidates is not None else "not_checked"
        ledger = lifecycle.retirement(conn, mem["content_hash"], mem["agent_id"], mem["project"])
        if ledger is not None:
            return Stored(ledger, False, retired=True, check=check, mem=mem)
        if candidates is not None and candidates.hits:
            existing = self.live_duplicate(conn, mem["content_hash"], mem["agent_id"], mem["project"])
            if existing is not None:
                return Stored(existing, True, check=check)
            target = self._reinforce(conn, mem, candidates, changed_by, actor_type, reason, note)
            if target is not None:
                return Stored(target, False, reinforced=target["id"], check=check)
        if vector is None and candidates is not None:
            vector = candidates.vector  # computed for the check: stored with the memory, not embedded twice
        vec = self._existing_vector(conn, mem["content_hash"])
        row = conn.execute(
            _INSERT_SQL,
            {
                **mem,
                "updated_by": changed_by,
                "embedding_model": self.embeddings.model_key if vec is not None else None,
            },
        ).fetchone()
        if row is None:
            existing = self.live_duplicate(conn, mem["content_hash"], mem["agent_id"], mem["project"])
            if existing is None:  # a conflict that is not the dedupe index: the id (never reused)
                raise RuntimeError(f"memory {mem['id']} conflicts with a stored row")
            return Stored(existing, True, check=check)
        record_history(
            conn,
            mem["id"],
            "created",
            old_content=None,
            new_content=None,  # the text is the memory's: records.history_contents reads it back
            changed_by=changed_by,
            reason=reason,
            actor_type=actor_type,
            metadata={"type": mem["type"], "source_type": mem["source_type"], **(note or {})},
        )
        if vec is None and vector is not None and self.embeddings.model_key:
            vec = self._store_vector(conn, mem["id"], mem["content_hash"], mem["content"], vector)
        if vec is not None:
            self._index_vector(mem["id"], vec, mem["project"], mem["created_at"])
        stored = {**mem, "seq": row["seq"]}  # the hooks key what they write by the row's seq
        for hook in self.on_remember_tx:
            hook(conn, stored)
        return Stored(row, False, check=check)

    # -- reinforcement ---------------------------------------------------------------------
    def _candidates(self, mem: dict[str, Any]) -> Candidates:
        """The reinforcement check for a prepared memory: embed its text (about 10 ms with the
        bundled model) and find the stored vectors at or above the threshold. On the caller's
        thread, before the write: the write lock is never held on a model call."""
        cfg = self.settings.memory.reinforce
        if not cfg.enabled or mem["type"] == NO_REINFORCE_TYPE:
            return Candidates("off")
        if mem["pinned"]:
            return Candidates("skipped_pinned")
        if not self.embeddings.ready:
            return Candidates("skipped_not_ready")
        vec = self.embed_for_write(mem["id"], mem["content"])
        if vec is None:
            return Candidates("skipped_not_ready")
        return Candidates("checked", vec, self._similar_hits(vec, mem["project"]))

    def _similar_hits(self, vec: Any, project: str | None) -> tuple[tuple[str, float], ...]:
        threshold = self.settings.memory.reinforce.threshold
        hits = self.index.search(vec, REINFORCE_CANDIDATES, project=project)
        return tuple((h.memory_id, h.score) for h in hits if h.score >= threshold)

    def _reinforce(
        self,
        conn: Connection,
        mem: dict[str, Any],
        candidates: Candidates,
        changed_by: str,
        actor_type: str | None,
        reason: str,
        note: dict[str, Any] | None,
    ) -> Any:
        """Add a confirmation to the first eligible candidate; its row after the update, or None."""
        for memory_id, score in candidates.hits:
            target = conn.execute(
                "SELECT id FROM memories WHERE id = ? AND is_deleted = 0 AND pinned = 0 AND type = ?"
                " AND agent_id = ? AND COALESCE(project, '') = ?",
                (memory_id, mem["type"], mem["agent_id"], mem["project"] or ""),
            ).fetchone()
            if target is None:
                continue
            ts = now_iso()
            row = conn.execute(
                "UPDATE memories SET confirmations = confirmations + 1, last_reinforced_at = ? WHERE id = ? RETURNING *",
                (ts, memory_id),
            ).fetchone()
            record_history(
                conn,
                memory_id,
                "reinforced",
                old_content=None,
                new_content=mem["content"],
                changed_by=changed_by,
                reason=reason,
                actor_type=actor_type,
                metadata={
                    "similarity": round(score, 4),
                    "threshold": self.settings.memory.reinforce.threshold,
                    "confirmations": int(row["confirmations"]),
                    "content_hash": mem["content_hash"],
                    "importance": mem["importance"],
                    "tags": json.loads(mem["tags"]),
                    "who": mem["who"],
                    "why": mem["why"],
                    "source_type": mem["source_type"],
                    "source_id": mem["source_id"],
                    "visibility": mem["visibility"],
                    "stated_at": mem["created_at"],
                    **(note or {}),
                },
            )
            return row
        return None

    def _existing_vector(self, conn: Connection, chash: str) -> Any:
        """The stored vector of this text under the current model, if any: never embed twice."""
        row = conn.execute(
            "SELECT vector, dimensions FROM embeddings WHERE content_hash = ? AND model = ?",
            (chash, self.embeddings.model_key),
        ).fetchone()
        return None if row is None else vector_blob.decode(row[0], int(row[1]))

    def _index_existing_vector(
        self, conn: Connection, memory_id: str, chash: str, project: str | None, created_at: str | None
    ) -> bool:
        """Reuse a stored vector for this (edited or recovered) memory's text, if there is one."""
        vec = self._existing_vector(conn, chash)
        if vec is None:
            return False
        conn.execute("UPDATE memories SET embedding_model = ? WHERE id = ?", (self.embeddings.model_key, memory_id))
        self._index_vector(memory_id, vec, project, created_at)
        return True

    def _index_vector(self, memory_id: str, vec: Any, project: str | None, created_at: str | None) -> None:
        """Put a stored vector in the index, unless it comes from a model of other dimensions."""
        if self.index.dimensions in (None, vec.shape[0]):
            self.db.after_commit(lambda: self.index.upsert(memory_id, vec, project, created_at))

    @staticmethod
    def unstored_response(mem: dict[str, Any], **fields: Any) -> RememberResponse:
        """The answer for a prepared memory that has no row of its own (yet): a retired text, or
        one waiting in the remember intake; ``fields`` set or override the rest."""
        base: dict[str, Any] = {
            "id": mem.get("id", ""),
            "deduped": False,
            "type": mem.get("type", "fact"),
            "tags": load_tags(mem.get("tags")),
            "pinned": bool(mem.get("pinned")),
            "importance": float(mem.get("importance", 0.0)),
            "content": mem.get("content", ""),
            "created_at": mem.get("created_at", ""),
        }
        return RememberResponse(**{**base, **fields})

    def remember_response(self, stored: Stored) -> RememberResponse:
        row, deduped = stored.row, stored.deduped
        if stored.retired:
            return self.unstored_response(
                stored.mem or {},
                id=row["memory_id"] or "",
                created_at=row["retired_at"],
                embedding="unavailable",
                reinforcement=stored.check,
                retired=True,
            )
        if row["id"] in self.index:
            emb = "ready"
        elif self.embeddings.state in ("disabled", "unavailable"):
            emb = "unavailable"
        else:
            emb = "pending"
        return RememberResponse(
            id=row["id"],
            deduped=deduped,
            type=row["type"],
            tags=load_tags(row["tags"]),
            pinned=bool(row["pinned"]),
            importance=float(row["importance"]),
            content=row["content"],
            created_at=row["created_at"],
            embedding=emb,
            reinforced=stored.reinforced,
            confirmations=int(row["confirmations"]),
            reinforcement=stored.check,
        )

    def remember(
        self,
        req: RememberRequest,
        *,
        changed_by: str = "api",
        actor_type: str | None = None,
        scope: ReadScope = UNSCOPED,
    ) -> RememberResponse:
        fut = self.submit_remember(req, changed_by=changed_by, actor_type=actor_type, scope=scope)
        return self.finish_remember(fut.result())

    def submit_remember(
        self,
        req: RememberRequest,
        *,
        changed_by: str = "api",
        actor_type: str | None = None,
        scope: ReadScope = UNSCOPED,
    ) -> Future[Stored]:
        """Queue the write and return its future, for async callers that await it without a thread.

        The owner (agent, project) comes from ``scope`` when the request names none, and a
        named one outside a scoped token's reach is :class:`Forbidden` before anything is queued.
        With reinforcement on (:attr:`reinforcing`), the text is embedded first, on this thread."""
        mem = self._prepare(req, scope)
        candidates = self._candidates(mem)
        return self.db.submit(lambda conn: self.insert(conn, mem, changed_by, actor_type, candidates=candidates))

    @property
    def reinforcing(self) -> bool:
        """Whether a remember embeds its text before the write (the reinforcement check)."""
        return self.settings.memory.reinforce.enabled and self.embeddings.ready

    def finish_remember(self, outcome: Stored) -> RememberResponse:
        if not (outcome.deduped or outcome.retired or outcome.reinforced):
            self.embeddings.notify()
        return self.remember_response(outcome)

    def remember_batch(
        self,
        items: list[RememberRequest],
        *,
        changed_by: str = "api",
        actor_type: str | None = None,
        scope: ReadScope = UNSCOPED,
    ) -> list[RememberResponse]:
        """Many memories in one transaction: all are stored, or none are (one item outside the
        caller's scope refuses the whole batch before anything is written). Retired texts are
        refused item by item; a batch is not checked for reinforcement (importers, benchmarks:
        docs/lifecycle.md)."""
        mems = [self._prepare(r, scope) for r in items]

        def write(conn: Connection) -> list[Stored]:
            return [self.insert(conn, m, changed_by, actor_type) for m in mems]

        results = self.db.write(write, alone=True)  # large: no savepoint (GroupWriter.write)
        if any(not (r.deduped or r.retired) for r in results):
            self.embeddings.notify()
        return [self.remember_response(r) for r in results]

    # -- writes inside a caller's transaction ------------------------------------------------
    # The pipeline applies an LLM's decisions through these, on the writer thread inside one
    # ``db.write``: a memory, its history row (with the decision in its metadata) and its
    # vector commit together or not at all. No scope: they are the daemon's own writes, whose
    # owner was settled when the source was accepted.

    def remember_in(
        self,
        conn: Connection,
        req: RememberRequest,
        *,
        changed_by: str,
        actor_type: str | None = None,
        reason: str = "remember",
        note: dict[str, Any] | None = None,
        vector: Any = None,
    ) -> tuple[Any, bool]:
        """Store (or dedupe) one memory; ``note`` joins its history metadata, ``vector`` (computed
        before the transaction) is stored with it. Returns (row, deduped).

        A text in the retirement ledger is not stored: the row is then the retired memory's
        (soft-deleted) row with ``deduped`` true, or None when that row is gone. With
        reinforcement on and a ``vector``, a similar memory of the same type and owner is
        reinforced instead: its row is returned with ``deduped`` true."""
        mem = self._prepare(req, UNSCOPED)
        candidates = None
        if (
            vector is not None
            and self.settings.memory.reinforce.enabled
            and not mem["pinned"]
            and mem["type"] != NO_REINFORCE_TYPE
        ):
            candidates = Candidates("checked", vector, self._similar_hits(vector, mem["project"]))
        out = self.insert(
            conn, mem, changed_by, actor_type, reason=reason, note=note, vector=vector, candidates=candidates
        )
        if out.retired:
            return (self._row(conn, out.row["memory_id"]) if out.row["memory_id"] else None), True
        return out.row, out.deduped or out.reinforced is not None

    def modify_in(
        self,
        conn: Connection,
        patch: ModifyPatch,
        *,
        reason: str,
        changed_by: str,
        actor_type: str | None = None,
        vector: Any = None,
        note: dict[str, Any] | None = None,
    ) -> ModifyResult:
        """Apply one patch; ``vector`` is the new content's embedding (see :meth:`embed_for_write`)."""
        return self._patch_in(conn, patch, reason, changed_by, actor_type, UNSCOPED, vector, note)

    def delete_in(
        self,
        conn: Connection,
        memory_id: str,
        *,
        reason: str,
        changed_by: str,
        actor_type: str | None = None,
        force: bool = False,
        note: dict[str, Any] | None = None,
    ) -> int | None:
        """Soft (or, with ``force``, hard) delete; the new version, None if the memory is gone."""
        return self._delete_in_tx(conn, memory_id, reason, changed_by, actor_type, force, None, note)

    def embed_for_write(self, memory_id: str, text: str) -> Any:
        """The embedding of text about to be written, or None (left for the background embedder).

        Called before the write transaction: the write lock is never held on a model call."""
        try:
            vecs = self.embeddings.embed_texts([text]) if self.embeddings.ready else None
        except EmbeddingError as exc:
            # A remote embedder that is down or timing out must not cost the edit: the new
            # content is written without a vector (embedding_model NULL, so it is pending) and
            # the background embedder fills it in, as for a remember.
            log.warning(
                "embedding the new content of memory %s failed, left for the background embedder: %s", memory_id, exc
            )
            return None
        return vecs[0] if vecs is not None else None

    # -- recall ----------------------------------------------------------------------------
    def recall(self, req: RecallRequest, *, scope: ReadScope = UNSCOPED) -> RecallResponse:
        flt = MemoryFilter(
            type=req.type.value if req.type else None,
            tags=req.tags,
            who=req.who,
            pinned=req.pinned,
            importance_min=req.importance_min,
            since=req.since,
            until=req.until,
            project=req.project,
            agent_id=req.agent_id,
            scope=scope,
        )
        if req.limit is None:  # search.default_limit; hooks (the QA ledger) see the limit applied
            req = req.model_copy(update={"limit": self.settings.search.default_limit})
        limit = req.limit or self.settings.search.default_limit
        out = self.recaller.recall(req.query, flt, limit=limit, alpha=req.alpha, min_score=req.min_score)
        results = [
            RecallResult(
                **result_fields(h.row),
                score=h.score,
                source=h.source,
                fts_score=h.fts_score,
                vector_score=h.vector_score,
                superseded=h.mark.superseded if h.mark else False,
                superseded_by=h.mark.superseded_by if h.mark else None,
                current=h.mark.current if h.mark else False,
            )
            for h in out.hits
        ]
        if req.expand and results:  # after the ranking, never inside it (signet.memory.expand)
            results = expand.attach(self.db, results, req, scope)
        if req.track_access and results:
            self._track_access([r.id for r in results])
        resp = RecallResponse(
            query=req.query,
            results=results,
            count=len(results),
            method=out.method,
            vector_search=self._vector_state((out.vector_available, out.vector_reason)),
            took_ms=round(out.took_ms, 3),
            graph=graph_state(out.graph),
        )
        for hook in self.on_recall:
            hook(req, resp, scope)
        return resp

    def _track_access(self, ids: list[str]) -> None:
        """Count a recall's hits (fire and forget).

        On PostgreSQL several daemons' writers update these rows at once, each inside a group
        transaction that holds its row locks until the group commits; two groups touching the
        same recalled memories in another order deadlock. A count is a statistic, so there a
        row another transaction holds is skipped (``FOR UPDATE SKIP LOCKED``) rather than
        waited for: this update never waits on a lock."""
        ts = now_iso()
        marks = ",".join("?" for _ in ids)

        def count(conn: Connection) -> None:
            skip = skip_locked(conn)
            where = f"SELECT id FROM memories WHERE id IN ({marks}) ORDER BY id{skip}" if skip else marks
            conn.execute(
                f"UPDATE memories SET last_accessed = ?, access_count = access_count + 1 WHERE id IN ({where})",
                (ts, *ids),
            )

        self.db.submit(count)

    def _vector_state(self, observed: tuple[bool, str | None] | None = None) -> VectorSearchState:
        """The embedder's state, or what one recall ``observed`` (its query embedding may have failed)."""
        ok, reason = observed if observed is not None else self.recaller.vector_state()
        return VectorSearchState(
            available=ok, reason=reason, provider=self.settings.embedding.provider, model=self.settings.embedding.model
        )

    def similar(self, memory_id: str, *, limit: int = 10, scope: ReadScope = UNSCOPED) -> RecallResponse:
        """Vector neighbours of a stored memory."""
        started = time.perf_counter()
        memory_id = self.get(memory_id, scope=scope).id  # also the full id of a prefix
        vec = self.index.vector_of(memory_id)
        results: list[RecallResult] = []
        if vec is not None:
            flt = MemoryFilter(scope=scope)
            where, params = flt.sql(self.decay_rate)
            hits = self.index.search(vec, limit * 4 + 1, exclude={memory_id})
            ids = [h.memory_id for h in hits]
            marks = ",".join("?" for _ in ids) or "NULL"
            rows = {
                r["id"]: r
                for r in self.db.read(
                    lambda c: list(
                        c.execute(f"SELECT * FROM memories m WHERE m.id IN ({marks}) AND {where}", (*ids, *params))
                    )
                )
            }
            for h in hits:
                if h.memory_id in rows and len(results) < limit:
                    results.append(
                        RecallResult(
                            **result_fields(rows[h.memory_id]),
                            score=round(h.score, 6),
                            source="vector",
                            vector_score=h.score,
                        )
                    )
        # Neighbours come from stored vectors only: no query embedding, so the provider's state
        # (loading, breaker open) does not matter -- only whether this memory has a vector yet.
        state: tuple[bool, str | None] = (True, None)
        if vec is None:
            ok, why = self.recaller.vector_state()
            state = (False, "this memory has no vector yet" + ("" if ok else f": {why}"))
        return RecallResponse(
            query=memory_id,
            results=results,
            count=len(results),
            method="hybrid" if vec is not None else "fts",
            vector_search=self._vector_state(state),
            took_ms=round((time.perf_counter() - started) * 1000, 3),
        )

    # -- read ------------------------------------------------------------------------------
    def _row(self, conn: Connection, memory_id: str) -> Any:
        return conn.execute("SELECT * FROM memories WHERE id = ?", (memory_id,)).fetchone()

    def full_id(self, memory_id: str, scope: ReadScope = UNSCOPED) -> str:
        """The id a caller's id or unique id prefix names, among the memories ``scope`` reads
        (deleted ones included: recover and history take them); :class:`AmbiguousId` when
        several start with it (signet.store.ids)."""
        where, params = scope.sql("m")
        return self.db.read(lambda c: complete_id(c, "memories", memory_id, where=where, params=params))

    def get(self, memory_id: str, *, scope: ReadScope = UNSCOPED) -> Memory:
        memory_id = self.full_id(memory_id, scope)
        row = self.db.read(lambda c: self._row(c, memory_id))
        if row is None or not scope.allows(row):
            raise NotFound(f"memory '{memory_id}' not found", id=memory_id)
        return memory_from_row(row, self.decay_rate)

    def list_memories(self, flt: MemoryFilter, *, limit: int = 50, offset: int = 0, count: bool = True) -> MemoryList:
        """A page of memories, newest first; ``count=False`` skips counting every match (the
        one part whose cost grows with the store) and reports ``total`` as -1."""
        where, params = flt.sql(self.decay_rate)
        # Unfiltered (or by time only), walk the created_at index newest first and stop after the
        # page: left to itself SQLite takes the is_deleted index and sorts every live row (0.3 s
        # at 100k memories, 0.8 s at offset 50,000; 8 ms and 50 ms this way). A filter on a
        # column with its own index keeps the planner's choice: that index finds few rows.
        selective = flt.type or flt.tags or flt.who or flt.project or flt.agent_id or flt.source_type
        table = "memories m" if selective else "memories m INDEXED BY idx_memories_created"

        def read(conn: Connection) -> tuple[int, list[Any]]:
            total = (
                conn.execute(f"SELECT COUNT(*) FROM memories m WHERE {where}", params).fetchone()[0] if count else -1
            )
            rows = list(
                conn.execute(
                    f"SELECT * FROM {table} WHERE {where} ORDER BY m.created_at DESC, m.seq DESC LIMIT ? OFFSET ?",
                    (*params, limit, offset),
                )
            )
            return int(total), rows

        total, rows = self.db.read(read)
        return MemoryList(
            items=[memory_from_row(r, self.decay_rate) for r in rows], total=total, limit=limit, offset=offset
        )

    def history(self, memory_id: str, *, scope: ReadScope = UNSCOPED) -> HistoryResponse:
        memory_id = self.full_id(memory_id, scope)

        def read(conn: Connection) -> tuple[Any, list[Any]]:
            return self._row(conn, memory_id), list(
                conn.execute(
                    "SELECT * FROM memory_history WHERE memory_id = ? ORDER BY created_at, rowid", (memory_id,)
                )
            )

        row, events = self.db.read(read)
        if (row is None and not events) or (row is not None and not scope.allows(row)):
            raise NotFound(f"memory '{memory_id}' not found", id=memory_id)
        contents = history_contents(events, row["content"] if row is not None else None)
        return HistoryResponse(
            memory_id=memory_id,
            events=[
                HistoryEvent(
                    id=e["id"],
                    memory_id=e["memory_id"],
                    event=e["event"],
                    old_content=e["old_content"],
                    new_content=new_content,
                    changed_by=e["changed_by"],
                    reason=e["reason"],
                    metadata=json.loads(e["metadata"]) if e["metadata"] else None,
                    actor_type=e["actor_type"],
                    created_at=e["created_at"],
                )
                for e, new_content in zip(events, contents, strict=True)
            ],
        )

    # -- modify ----------------------------------------------------------------------------
    def modify(
        self,
        req: ModifyRequest,
        *,
        changed_by: str = "api",
        actor_type: str | None = None,
        scope: ReadScope = UNSCOPED,
    ) -> ModifyResponse:
        missing = [p.id for p in req.patches if not (p.reason or req.reason)]
        if missing:
            raise InvalidRequest("every patch needs a reason (per patch or request-level 'reason')", ids=missing)
        for p in req.patches:  # a move out of a token's project refuses the request before any patch lands
            if p.project is not None:
                scope.check_project(p.project)
        who = req.changed_by or changed_by
        # Every id prefix is resolved before any patch lands: an ambiguous one refuses the batch.
        patches = [p.model_copy(update={"id": self.full_id(p.id, scope)}) for p in req.patches]
        results = [self._apply_patch(p, p.reason or req.reason or "", who, actor_type, scope) for p in patches]
        return ModifyResponse(results=results, updated=sum(1 for r in results if r.status == "updated"))

    def patch(
        self,
        memory_id: str,
        req: PatchMemoryRequest,
        *,
        changed_by: str = "api",
        actor_type: str | None = None,
        scope: ReadScope = UNSCOPED,
    ) -> ModifyResult:
        memory_id = self.full_id(memory_id, scope)
        fields = req.model_dump(exclude_unset=True, exclude={"reason", "if_version", "changed_by"})
        patch = ModifyPatch(id=memory_id, reason=req.reason, if_version=req.if_version, **fields)
        result = self._apply_patch(patch, req.reason, req.changed_by or changed_by, actor_type, scope)
        if result.status in ("not_found", "deleted"):
            raise NotFound(
                f"memory '{memory_id}' not found" + (" (it is deleted)" if result.status == "deleted" else ""),
                id=memory_id,
            )
        if result.status == "version_conflict":
            raise VersionConflict(
                f"memory '{memory_id}' is at version {result.current_version}, not {req.if_version}",
                id=memory_id,
                current_version=result.current_version,
            )
        if result.status == "forbidden":
            raise Forbidden(f"memory '{memory_id}' belongs to another agent", id=memory_id, reason="scope_mismatch")
        if result.status == "duplicate":
            raise Conflict(
                "another memory already has this content",
                code="duplicate",
                id=memory_id,
                duplicate_memory_id=result.duplicate_memory_id,
            )
        return result

    def _apply_patch(
        self, p: ModifyPatch, reason: str, changed_by: str, actor_type: str | None, scope: ReadScope
    ) -> ModifyResult:
        if p.project is not None:
            scope.check_project(p.project)
        vector = self.embed_for_write(p.id, parse_content(p.content).content) if p.content is not None else None
        result = self.db.write(lambda conn: self._patch_in(conn, p, reason, changed_by, actor_type, scope, vector))
        if result.content_changed and not result.embedded:
            self.embeddings.notify()
        return result

    def _patch_in(
        self,
        conn: Connection,
        p: ModifyPatch,
        reason: str,
        changed_by: str,
        actor_type: str | None,
        scope: ReadScope,
        vector: Any,
        note: dict[str, Any] | None = None,
    ) -> ModifyResult:
        """One patch inside a write transaction: checks, the update, its history, its vector."""
        writable = scope.writable()
        new_content = parse_content(p.content) if p.content is not None else None
        row = self._row(conn, p.id)
        if row is None or not scope.allows(row):
            return ModifyResult(id=p.id, status="not_found", error="memory not found")
        if not writable.allows(row):
            return ModifyResult(id=p.id, status="forbidden", error="the memory belongs to another agent")
        if row["is_deleted"]:
            return ModifyResult(
                id=p.id, status="deleted", current_version=row["version"], error="memory is deleted; recover it first"
            )
        if p.if_version is not None and p.if_version != row["version"]:
            return ModifyResult(
                id=p.id,
                status="version_conflict",
                current_version=row["version"],
                error=f"expected version {p.if_version}, found {row['version']}",
            )
        sets: dict[str, Any] = {}
        if new_content is not None and new_content.content != row["content"]:
            sets.update(content=new_content.content, content_hash=new_content.hash)
        for key in ("type", "importance", "who", "why", "project"):
            val = getattr(p, key)
            if val is not None:
                val = val.value if hasattr(val, "value") else val
                if val != row[key]:
                    sets[key] = val
        if p.tags is not None and p.tags != load_tags(row["tags"]):
            sets["tags"] = json.dumps(p.tags)
        if p.pinned is not None and int(p.pinned) != row["pinned"]:
            sets["pinned"] = int(p.pinned)
        if not sets:
            return ModifyResult(id=p.id, status="unchanged", current_version=row["version"], new_version=row["version"])
        if "content_hash" in sets or "project" in sets:
            # New text, or a move to another project: the target scope must not hold it already.
            dup = self.live_duplicate(
                conn,
                sets.get("content_hash", row["content_hash"]),
                row["agent_id"],
                sets.get("project", row["project"]),
                exclude_id=p.id,
            )
            if dup is not None:
                return ModifyResult(
                    id=p.id,
                    status="duplicate",
                    current_version=row["version"],
                    duplicate_memory_id=dup["id"],
                    error="content duplicates another memory",
                )
        new_version = int(row["version"]) + 1
        sets.update(
            version=new_version, updated_at=now_iso(), updated_by=changed_by, update_count=int(row["update_count"]) + 1
        )
        content_changed = "content" in sets
        if content_changed:
            sets["embedding_model"] = None
        assignments = ", ".join(f"{k} = :{k}" for k in sets)
        conn.execute(f"UPDATE memories SET {assignments} WHERE id = :id", {**sets, "id": p.id})
        changed = sorted(
            k
            for k in sets
            if k
            not in (
                "version",
                "updated_at",
                "updated_by",
                "update_count",
                "normalized_content",
                "content_hash",
                "embedding_model",
            )
        )
        record_history(
            conn,
            p.id,
            "modified",
            old_content=row["content"],
            new_content=sets.get("content", row["content"]),
            changed_by=changed_by,
            reason=reason,
            actor_type=actor_type,
            metadata={
                "fields": changed,
                "fromVersion": row["version"],
                "toVersion": new_version,
                "previous": {k: row[k] for k in changed if k != "content"},
                **(note or {}),
            },
        )
        embedded = False
        project = sets.get("project", row["project"])
        if content_changed:
            self.db.after_commit(lambda: self.index.remove(p.id))
            assert new_content is not None
            if vector is not None:
                stored_vec = self._store_vector(conn, p.id, new_content.hash, new_content.content, vector)
                created = row["created_at"]
                self.db.after_commit(lambda: self.index.upsert(p.id, stored_vec, project, created))
                embedded = True
            else:
                embedded = self._index_existing_vector(conn, p.id, new_content.hash, project, row["created_at"])
        elif "project" in sets:
            self.db.after_commit(lambda: self.index.set_project(p.id, project))
        return ModifyResult(
            id=p.id,
            status="updated",
            current_version=row["version"],
            new_version=new_version,
            content_changed=content_changed,
            embedded=embedded,
        )

    def _store_vector(self, conn: Connection, memory_id: str, chash: str, text: str, vector: Any) -> Any:
        """Store a memory's vector (signet.store.vector_blob); returns it as it reads back."""
        conn.execute(
            "INSERT INTO embeddings(id, content_hash, vector, dimensions, source_type, source_id, chunk_text, provider,"
            " model, created_at) VALUES (?, ?, ?, ?, 'memory', ?, ?, ?, ?, ?) ON CONFLICT(content_hash) DO UPDATE SET"
            " vector = excluded.vector, dimensions = excluded.dimensions, provider = excluded.provider,"
            " model = excluded.model, created_at = excluded.created_at",
            (
                str(uuid.uuid4()),
                chash,
                vector_blob.encode(vector),
                len(vector),
                memory_id,
                "",  # chunk_text: the text is the memory's (not a second copy; migration 12)
                self.settings.embedding.provider,
                self.embeddings.model_key,
                now_iso(),
            ),
        )
        conn.execute("UPDATE memories SET embedding_model = ? WHERE id = ?", (self.embeddings.model_key, memory_id))
        return vector_blob.as_stored(vector)

    # -- forget ----------------------------------------------------------------------------
    def _forget_candidates(self, req: ForgetRequest, scope: ReadScope) -> list[Any]:
        flt = MemoryFilter(
            type=req.type.value if req.type else None,
            tags=req.tags,
            who=req.who,
            source_type=req.source_type,
            project=req.project,
            since=req.since,
            until=req.until,
            scope=scope.writable(),
        )
        if not (req.ids or req.query or flt.is_narrowing()):
            raise InvalidRequest("say what to forget: ids, a query, or at least one filter")
        where, params = flt.sql(self.decay_rate)
        if req.ids:
            ids = list(dict.fromkeys(self.full_id(i, flt.scope) for i in req.ids))
            marks = ",".join("?" for _ in ids)
            rows = self.db.read(
                lambda c: list(
                    c.execute(
                        f"SELECT * FROM memories m WHERE m.id IN ({marks}) AND {where} ORDER BY m.seq", (*ids, *params)
                    )
                )
            )
            if req.query:
                keep = {h.row["id"] for h in self.recaller.recall(req.query, flt, limit=req.limit).hits}
                rows = [r for r in rows if r["id"] in keep]
            return rows[: req.limit]
        if req.query:
            return [h.row for h in self.recaller.recall(req.query, flt, limit=req.limit).hits]
        return self.db.read(
            lambda c: list(
                c.execute(
                    f"SELECT * FROM memories m WHERE {where} ORDER BY m.created_at DESC, m.seq DESC LIMIT ?",
                    (*params, req.limit),
                )
            )
        )

    @staticmethod
    def confirm_token(ids: list[str]) -> str:
        return hashlib.sha256("\n".join(sorted(ids)).encode()).hexdigest()[:32]

    def forget(
        self,
        req: ForgetRequest,
        *,
        changed_by: str = "api",
        actor_type: str | None = None,
        scope: ReadScope = UNSCOPED,
    ) -> ForgetResponse:
        rows = self._forget_candidates(req, scope)
        ids = [r["id"] for r in rows]
        token = self.confirm_token(ids)
        threshold = self.settings.memory.forget_confirm_threshold
        requires = len(ids) > threshold
        candidates = [
            ForgetCandidate(
                id=r["id"],
                content=r["content"],
                type=r["type"],
                created_at=r["created_at"],
                pinned=bool(r["pinned"]),
                version=int(r["version"]),
            )
            for r in rows
        ]
        if req.mode == "preview":
            return ForgetResponse(
                mode="preview", count=len(ids), candidates=candidates, confirm_token=token, requires_confirm=requires
            )
        if not req.reason:
            raise InvalidRequest("forget needs a 'reason' in execute mode")
        if requires or req.confirm_token is not None:
            if req.confirm_token is None:
                raise ConfirmationRequired(
                    f"{len(ids)} memories match (more than {threshold}): preview first and send its confirm_token",
                    count=len(ids),
                    confirm_token_hint="run with mode=preview",
                )
            if req.confirm_token != token:
                raise ConfirmationRequired(
                    "the set of matching memories changed since the preview; preview again",
                    code="confirm_token_mismatch",
                    count=len(ids),
                )
        reason = req.reason
        who = req.changed_by or changed_by

        def write(conn: Connection) -> tuple[list[str], list[str]]:
            deleted: list[str] = []
            retired: list[str] = []
            for mid in ids:
                row = self._row(conn, mid)
                if self._delete_in_tx(conn, mid, reason, who, actor_type, req.force, row) is None:
                    continue
                deleted.append(mid)
                if req.persist and row is not None:
                    self._retire_in(conn, row, reason, who, erase=req.force)
                    retired.append(mid)
            return deleted, retired

        deleted, retired = self.db.write(write)
        return ForgetResponse(
            retired=retired,
            mode="execute",
            count=len(deleted),
            candidates=candidates,
            confirm_token=token,
            requires_confirm=requires,
            deleted=deleted,
            hard_deleted=req.force,
        )

    def delete(
        self,
        memory_id: str,
        *,
        reason: str,
        if_version: int | None = None,
        force: bool = False,
        changed_by: str = "api",
        actor_type: str | None = None,
        scope: ReadScope = UNSCOPED,
    ) -> DeleteResponse:
        if not reason.strip():
            raise InvalidRequest("delete needs a non-empty 'reason'")
        memory_id = self.full_id(memory_id, scope)

        def write(conn: Connection) -> int | None:
            row = self._row(conn, memory_id)
            if row is None or not scope.allows(row) or (row["is_deleted"] and not force):
                raise NotFound(f"memory '{memory_id}' not found", id=memory_id)
            if not scope.writable().allows(row):
                raise Forbidden(f"memory '{memory_id}' belongs to another agent", id=memory_id, reason="scope_mismatch")
            if if_version is not None and if_version != row["version"]:
                raise VersionConflict(
                    f"memory '{memory_id}' is at version {row['version']}, not {if_version}",
                    id=memory_id,
                    current_version=row["version"],
                )
            return self._delete_in_tx(conn, memory_id, reason, changed_by, actor_type, force, row)

        new_version = self.db.write(write)
        return DeleteResponse(
            id=memory_id, status="deleted", hard_deleted=force, new_version=None if force else new_version
        )

    def _delete_in_tx(
        self,
        conn: Connection,
        memory_id: str,
        reason: str,
        changed_by: str,
        actor_type: str | None,
        force: bool,
        row: Any,
        note: dict[str, Any] | None = None,
    ) -> int | None:
        """Soft delete (or hard delete with ``force``); returns the new version, None if skipped."""
        row = row if row is not None else self._row(conn, memory_id)
        if row is None or (row["is_deleted"] and not force):
            return None
        self.db.after_commit(lambda: self.index.remove(memory_id))
        if force:
            record_history(
                conn,
                memory_id,
                "deleted",
                old_content=row["content"],
                new_content=None,
                changed_by=changed_by,
                reason=reason,
                actor_type=actor_type,
                metadata={"hard": True, "version": row["version"], **(note or {})},
            )
            entity_links.unlink(conn, [memory_id])
            conn.execute("DELETE FROM entity_attributes WHERE source_memory_id = ?", (memory_id,))  # signet.knowledge
            conn.execute("DELETE FROM memories WHERE id = ?", (memory_id,))
            conn.execute(
                "DELETE FROM embeddings WHERE content_hash = ? AND NOT EXISTS "
                "(SELECT 1 FROM memories WHERE content_hash = ?)",
                (row["content_hash"], row["content_hash"]),
            )
            return int(row["version"])
        new_version = int(row["version"]) + 1
        ts = now_iso()
        conn.execute(
            "UPDATE memories SET is_deleted = 1, deleted_at = ?, version = ?, updated_at = ?, updated_by = ? WHERE id = ?",
            (ts, new_version, ts, changed_by, memory_id),
        )
        record_history(
            conn,
            memory_id,
            "deleted",
            old_content=row["content"],
            new_content=None,
            changed_by=changed_by,
            reason=reason,
            actor_type=actor_type,
            metadata={"hard": False, "fromVersion": row["version"], "toVersion": new_version, **(note or {})},
        )
        return new_version

    # -- retirement ledger -----------------------------------------------------------------
    def _retire_in(self, conn: Connection, row: Any, reason: str, changed_by: str, *, erase: bool) -> None:
        """Record a forgotten memory's text in the ledger; a hard delete keeps only its hash."""
        lifecycle.retire(
            conn,
            content_hash=row["content_hash"],
            agent_id=row["agent_id"],
            project=row["project"],
            memory_id=row["id"],
            content=None if erase else row["content"],
            reason=reason,
            retired_by=changed_by,
        )
        if not erase:
            record_history(
                conn,
                row["id"],
                "retired",
                old_content=None,
                new_content=None,
                changed_by=changed_by,
                reason=reason,
                metadata={"content_hash": row["content_hash"], "persist": True},
            )

    def unretire(
        self, memory_id: str, *, reason: str, changed_by: str = "api", scope: ReadScope = UNSCOPED
    ) -> UnretireResponse:
        """Take a memory's text out of the retirement ledger: later writes of it are stored again.
        The memory itself stays deleted (recover brings it back, and also un-retires it)."""
        if not reason.strip():
            raise InvalidRequest("unretire needs a non-empty 'reason'")
        memory_id = self._ledger_id(memory_id, scope)

        def write(conn: Connection) -> int:
            row = self._row(conn, memory_id)
            if row is not None and not scope.writable().allows(row):
                raise Forbidden(f"memory '{memory_id}' belongs to another agent", id=memory_id, reason="scope_mismatch")
            dropped = lifecycle.unretire_memory(conn, memory_id)
            if not dropped:
                raise NotFound(f"memory '{memory_id}' is not in the retirement ledger", id=memory_id)
            if row is not None:
                record_history(
                    conn,
                    memory_id,
                    "unretired",
                    old_content=None,
                    new_content=None,
                    changed_by=changed_by,
                    reason=reason,
                    metadata={"content_hash": row["content_hash"]},
                )
            return len(dropped)

        return UnretireResponse(id=memory_id, status="unretired", entries=self.db.write(write))

    def _ledger_id(self, memory_id: str, scope: ReadScope) -> str:
        """A memory id (or prefix) as the ledger knows it: the memory's, or a purged one's."""
        try:
            return self.full_id(memory_id, scope)
        except NotFound:
            if scope is not UNSCOPED:
                raise
            return memory_id

    # -- split (undo a reinforcement) --------------------------------------------------------
    def split(
        self,
        memory_id: str,
        event_id: str,
        *,
        reason: str,
        changed_by: str = "api",
        actor_type: str | None = None,
        scope: ReadScope = UNSCOPED,
    ) -> SplitResponse:
        """Undo one reinforcement: the wording its ``reinforced`` event recorded becomes a memory
        of its own (with the importance, tags and source it was said with) and the memory loses
        that confirmation. A ``split`` event on the memory and the new memory's ``created`` event
        name each other."""
        if not reason.strip():
            raise InvalidRequest("split needs a non-empty 'reason'")
        memory_id = self.full_id(memory_id, scope)
        event = self.db.read(
            lambda c: c.execute(
                "SELECT * FROM memory_history WHERE id = ? AND memory_id = ? AND event = 'reinforced'",
                (event_id, memory_id),
            ).fetchone()
        )
        if event is None:
            raise NotFound(f"memory '{memory_id}' has no reinforcement '{event_id}'", id=memory_id, event_id=event_id)
        meta = json.loads(event["metadata"] or "{}")
        text = str(event["new_content"])
        owner = self.db.read(lambda c: self._row(c, memory_id))
        if owner is None or not scope.allows(owner):
            raise NotFound(f"memory '{memory_id}' not found", id=memory_id)
        req = RememberRequest(
            content=text,
            type=owner["type"],
            importance=meta.get("importance"),
            tags=meta.get("tags") or None,
            who=meta.get("who"),
            why=meta.get("why"),
            project=owner["project"],
            source_type=meta.get("source_type"),
            source_id=meta.get("source_id"),
            created_at=datetime.fromisoformat(meta["stated_at"]) if meta.get("stated_at") else None,
            agent_id=owner["agent_id"],
            visibility=meta.get("visibility") or owner["visibility"],
        )
        mem = self._prepare(req, UNSCOPED)  # on this thread, before the write (prepare hooks)
        vector = self.embed_for_write(memory_id, text)

        def write(conn: Connection) -> SplitResponse:
            row = self._row(conn, memory_id)
            if row is None or not scope.allows(row):
                raise NotFound(f"memory '{memory_id}' not found", id=memory_id)
            if not scope.writable().allows(row):
                raise Forbidden(f"memory '{memory_id}' belongs to another agent", id=memory_id, reason="scope_mismatch")
            if (row["type"], row["agent_id"], row["project"]) != (owner["type"], owner["agent_id"], owner["project"]):
                raise Conflict(f"memory '{memory_id}' changed meanwhile; split again", code="changed", id=memory_id)
            done = conn.execute(
                "SELECT 1 FROM memory_history WHERE memory_id = ? AND event = 'split'"
                " AND json_extract(metadata, '$.event_id') = ?",
                (memory_id, event_id),
            ).fetchone()
            if done is not None:
                raise Conflict(f"reinforcement '{event_id}' was split off already", code="already_split", id=memory_id)
            out = self.insert(
                conn,
                mem,
                changed_by,
                actor_type,
                reason=f"split: {reason}",
                note={"split_from": memory_id, "event_id": event_id},
                vector=vector,
            )
            if out.retired or out.deduped:
                raise Conflict(
                    "this wording is " + ("retired" if out.retired else "already a memory of its own"),
                    code="retired" if out.retired else "duplicate",
                    id=memory_id,
                    duplicate_memory_id=None if out.retired else out.row["id"],
                )
            left = conn.execute(
                "UPDATE memories SET confirmations = MAX(confirmations - 1, 0) WHERE id = ? RETURNING confirmations",
                (memory_id,),
            ).fetchone()[0]
            record_history(
                conn,
                memory_id,
                "split",
                old_content=None,
                new_content=None,
                changed_by=changed_by,
                reason=reason,
                actor_type=actor_type,
                metadata={"event_id": event_id, "new_memory_id": mem["id"], "confirmations": int(left)},
            )
            return SplitResponse(id=memory_id, new_id=mem["id"], confirmations=int(left), content=text)

        out = self.db.write(write)
        self.embeddings.notify()
        return out

    # -- recover ---------------------------------------------------------------------------
    def recover(
        self,
        memory_id: str,
        req: RecoverRequest,
        *,
        changed_by: str = "api",
        actor_type: str | None = None,
        scope: ReadScope = UNSCOPED,
    ) -> RecoverResponse:
        if self.settings.memory.pipeline.mutations_frozen:
            raise MutationsFrozen("mutations are frozen (memory.pipelineV2.mutationsFrozen): recovery is disabled")
        window = timedelta(days=self.settings.retention.tombstone_days)
        memory_id = self.full_id(memory_id, scope)

        def write(conn: Connection) -> RecoverResponse:
            row = self._row(conn, memory_id)
            if row is None or not scope.allows(row):
                raise NotFound(f"memory '{memory_id}' not found", id=memory_id)
            if not scope.writable().allows(row):
                raise Forbidden(f"memory '{memory_id}' belongs to another agent", id=memory_id, reason="scope_mismatch")
            if not row["is_deleted"]:
                raise NotDeleted(f"memory '{memory_id}' is not deleted", id=memory_id, current_version=row["version"])
            deleted_at = datetime.fromisoformat(row["deleted_at"]) if row["deleted_at"] else None
            if deleted_at is not None and datetime.now(UTC) - deleted_at > window:
                raise RetentionExpired(
                    f"memory '{memory_id}' was deleted more than {self.settings.retention.tombstone_days:g} days ago",
                    id=memory_id,
                    deleted_at=row["deleted_at"],
                )
            if req.if_version is not None and req.if_version != row["version"]:
                raise VersionConflict(
                    f"memory '{memory_id}' is at version {row['version']}, not {req.if_version}",
                    id=memory_id,
                    current_version=row["version"],
                )
            dup = self.live_duplicate(conn, row["content_hash"], row["agent_id"], row["project"])
            if dup is not None:
                raise Conflict(
                    "a live memory already has this content",
                    code="duplicate",
                    id=memory_id,
                    duplicate_memory_id=dup["id"],
                )
            new_version = int(row["version"]) + 1
            ts = now_iso()
            unretired = bool(lifecycle.unretire_memory(conn, memory_id))  # recovering a retired memory un-retires it
            conn.execute(
                "UPDATE memories SET is_deleted = 0, deleted_at = NULL, version = ?, updated_at = ?, updated_by = ?"
                " WHERE id = ?",
                (new_version, ts, req.changed_by or changed_by, memory_id),
            )
            record_history(
                conn,
                memory_id,
                "recovered",
                old_content=None,
                new_content=row["content"],
                changed_by=req.changed_by or changed_by,
                reason=req.reason,
                actor_type=actor_type,
                metadata={"fromVersion": row["version"], "toVersion": new_version, "unretired": unretired},
            )
            self._index_existing_vector(conn, memory_id, row["content_hash"], row["project"], row["created_at"])
            return RecoverResponse(
                id=memory_id, status="recovered", current_version=int(row["version"]), new_version=new_version
            )

        result = self.db.write(write)
        self.embeddings.notify()
        return result

    # -- export / status -------------------------------------------------------------------
    def export_embeddings(
        self, *, limit: int, offset: int, with_vectors: bool, scope: ReadScope = UNSCOPED
    ) -> EmbeddingExport:
        flt = MemoryFilter(scope=scope)
        where, params = flt.sql(self.decay_rate)

        def read(conn: Connection) -> tuple[int, list[Any]]:
            base = f"FROM memories m JOIN embeddings e ON e.content_hash = m.content_hash WHERE {where}"
            total = conn.execute(f"SELECT COUNT(*) {base}", params).fetchone()[0]
            rows = list(
                conn.execute(
                    f"SELECT m.id, m.content, e.content_hash, e.model, e.dimensions, e.vector {base} "
                    "ORDER BY m.seq LIMIT ? OFFSET ?",
                    (*params, limit, offset),
                )
            )
            return int(total), rows

        total, rows = self.db.read(read)
        items = [
            EmbeddingRecord(
                memory_id=r["id"],
                content_hash=r["content_hash"],
                model=r["model"],
                dimensions=r["dimensions"],
                content=r["content"],
                vector=vector_blob.decode(r["vector"], int(r["dimensions"])).astype(float).tolist()
                if with_vectors
                else None,
            )
            for r in rows
        ]
        return EmbeddingExport(items=items, total=total, limit=limit, offset=offset)

    def counts(self) -> dict[str, int]:
        def read(conn: Connection) -> Any:
            return conn.execute(
                "SELECT COUNT(*) AS total, COALESCE(SUM(is_deleted = 0), 0) AS active,"
                " COALESCE(SUM(is_deleted = 1), 0) AS deleted, COALESCE(SUM(pinned = 1 AND is_deleted = 0), 0) AS pinned,"
                " COALESCE(SUM(is_deleted = 0 AND embedding_model = ?), 0) AS embedded,"
                " COALESCE(SUM(is_deleted = 0 AND embedding_model IS NOT NULL AND embedding_model != ?), 0) AS stale"
                " FROM memories",
                (self.embeddings.model_key, self.embeddings.model_key),
            ).fetchone()

        row = self.db.read(read)
        return {k: int(row[k]) for k in ("total", "active", "deleted", "pinned", "embedded", "stale")}

    def status(self, workspace: str, database: str) -> StatusResponse:
        c = self.counts()
        emb = self.embeddings
        vs = self._vector_state()
        warnings: list[str] = []
        if not vs.available:
            warnings.append(f"VECTOR SEARCH IS OFF: {vs.reason}")
        if emb.last_batch_error:
            warnings.append(f"embedding errors: {emb.last_batch_error}")
        if emb.stopped_error:
            warnings.append(emb.stopped_error)
        if c["stale"]:
            warnings.append(f"{c['stale']} memories were embedded with another model; they are being re-embedded")
        mirror = self.recaller.keywords
        keywords = mirror.state() if mirror is not None else KeywordIndexState(state="off")
        if keywords.error:
            warnings.append(keywords.error)
        if keywords.state == "drifted":
            warnings.append(
                "the keyword index (memories_ctx_fts) disagrees with its own statistics; recall uses "
                "FTS5 directly until it is repaired: POST /api/repair/check-fts "
                '{"repair": true}'
            )
        intake = self.intake.status() if self.intake is not None else None
        if intake is not None and intake.failed:
            warnings.append(
                f"{intake.failed} accepted remembers could not be stored; they are kept with their error in "
                "memory_intake_failed (see the daemon log)"
            )
        active = c["active"]
        embedding = EmbeddingStatus(
            provider=self.settings.embedding.provider,
            model=self.settings.embedding.model,
            backend=emb.backend,
            dimensions=emb.embedder.dimensions if emb.embedder is not None else self.index.dimensions,
            state=emb.state,
            error=emb.error,
            embedded=c["embedded"],
            total=active,
            coverage=round(c["embedded"] / active, 4) if active else 1.0,
            # accepted remembers still in the intake will need their vectors too
            pending=max(active - c["embedded"], 0) + (intake.pending if intake is not None else 0),
            stale_model=c["stale"],
        )
        return StatusResponse(
            status="ok" if vs.available and not emb.stopped_error else "degraded",
            version=__version__,
            pid=os.getpid(),
            uptime_s=round(time.time() - self.started, 3),
            workspace=workspace,
            database=database,
            memories={k: c[k] for k in ("total", "active", "deleted", "pinned")},
            embedding=embedding,
            vector_search=vs,
            keyword_index=keywords,
            storage=self._storage(),
            intake=intake,
            warnings=warnings,
        )

    def _storage(self) -> StorageStatus:
        """The store's size against its text and vectors, measured at most every
        :data:`STORAGE_TTL_S` (it reads the length of every memory: ~0.1 s at 100k)."""
        now = time.monotonic()
        cached = self._storage_cache
        if cached is None or now - cached[0] > STORAGE_TTL_S:
            u = self.db.read(space.usage)
            cached = self._storage_cache = (
                now,
                StorageStatus(
                    file_bytes=u.file_bytes,
                    free_bytes=u.free_bytes,
                    text_bytes=u.text_bytes,
                    vector_bytes=u.vector_bytes,
                    amplification=u.amplification,
                    auto_vacuum=u.auto_vacuum,
                ),
            )
        return cached[1]
