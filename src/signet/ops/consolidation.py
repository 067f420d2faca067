"""Consolidation (docs/lifecycle.md): plan, apply and undo runs, and the scheduled run.

A run is planned (:mod:`signet.ops.consolidation_plan`) and stored (migration 24) before
anything changes. A dry-run stops there (state ``planned``); applying it, later, applies that
stored plan and nothing else: every memory an action touches must still be live at the
version it was planned at, or the whole apply is refused (409) and nothing changes. So the
plan a user saw is the list of changes made, as data.

Applying is one write transaction: retired sources are soft-deleted (a ``deleted`` history
event naming the run), duplicates and merge sources also go into the retirement ledger (the
same text re-ingested does not come back beside its survivor), a duplicate's survivor gets a
``consolidated`` event naming what it absorbed, and a merge writes a new memory (source type
``consolidation``) with one ``memory_sources`` row per source. Undo is one transaction too:
the sources come back (``recovered`` events, out of the ledger), the merged memories are
soft-deleted, and the run says ``undone``.
"""

from __future__ import annotations

import json
import logging
import re
import threading
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from signet.config import ConsolidationSettings
from signet.errors import Conflict, InvalidRequest, MutationsFrozen, NotFound, SignetError
from signet.memory.service import MemoryService
from signet.models import MemoryType, RememberRequest, Visibility
from signet.ops.consolidation_models import (
    Action,
    ConsolidateRequest,
    ConsolidationRun,
    MemorySource,
    Plan,
    RunList,
    RunSummary,
    SourcesResponse,
)
from signet.ops.consolidation_plan import Llm, live_rows, plan, plan_json
from signet.schedule import parse
from signet.store import lifecycle, vector_blob
from signet.store.records import now_iso, record_history, to_iso
from signet.store.scope import UNSCOPED, ReadScope
from signet.store.sqlite import Connection, sqlite3

if TYPE_CHECKING:
    from signet.pipeline.runtime import Pipeline

log = logging.getLogger(__name__)

SOURCE_TYPE = "consolidation"
"""The ``source_type`` of a memory a merge wrote (no extraction job is queued for it)."""

RUNS_KEPT = 500
"""Runs listed by ``GET /api/consolidations`` at most (all are kept: undo needs them)."""


def pipeline_llm(pipeline: Pipeline) -> Llm:
    """Tier 2's model: the pipeline's, when a call may be made now. With no provider configured
    (``provider: none``, an unknown name), an unreachable one or a spent budget, tier 2 is
    skipped and the run says why (the pipeline's own words, without its "waiting for")."""
    gate = pipeline.supply.blocked()
    if gate is not None:
        return Llm(None, re.sub(r"^waiting for (a |the )?(provider|budget): ", "", gate.reason))
    return Llm(pipeline.llm)


def _counts(p: Plan) -> dict[str, int]:
    out = {"duplicate": 0, "expired": 0, "stale_todo": 0, "merge": 0, "retired": 0}
    for a in p.actions:
        out[a.kind] += 1
        out["retired"] += len(a.retire)
    return out


def _run(row: Any) -> ConsolidationRun:
    p = Plan.model_validate_json(row["plan"])
    return ConsolidationRun(
        id=row["id"],
        status=row["status"],
        trigger=row["trigger"],
        actor=row["actor"],
        created_at=row["created_at"],
        applied_at=row["applied_at"],
        undone_at=row["undone_at"],
        plan=p,
        created=json.loads(row["created"] or "{}"),
        counts=_counts(p),
    )


class Consolidator:
    """Plans, applies and undoes consolidation runs; runs on ``memory.consolidation.schedule``."""

    def __init__(self, service: MemoryService, settings: ConsolidationSettings, llm: Callable[[], Llm]) -> None:
        self.service = service
        self.db = service.db
        self.settings = settings
        self.llm = llm
        """What tier 2 may ask, read at each run (the provider may be configured later)."""
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.last_error: str | None = None

    # -- run ---------------------------------------------------------------------------------
    def consolidate(
        self, req: ConsolidateRequest, *, actor: str, scope: ReadScope = UNSCOPED, trigger: str = "manual"
    ) -> ConsolidationRun:
        """Plan (and unless ``dry_run``, apply) a run; with ``plan_id``, apply that stored plan."""
        if req.plan_id is not None:
            if req.dry_run:
                raise InvalidRequest("plan_id applies a stored plan: it cannot be combined with dry_run")
            return self.apply(req.plan_id, actor=actor, scope=scope)
        if not req.dry_run:
            self._check_frozen()
        rows = self.db.read(lambda c: live_rows(c, self.service.embeddings.model_key, scope, self.settings.scan_limit))
        p = plan(rows, self.settings, self.llm() if req.tier2 else Llm(None), with_tier2=req.tier2)
        run_id = str(uuid.uuid4())
        agent_scope = scope.write_agent  # an agent-scoped token's runs are its own

        def store(conn: Connection) -> Any:
            conn.execute(
                "INSERT INTO consolidation_runs(id, status, trigger, actor, agent_scope, plan, tier2, created_at)"
                " VALUES (?, 'planned', ?, ?, ?, ?, ?, ?)",
                (run_id, trigger, actor, agent_scope, plan_json(p), p.tier2, now_iso()),
            )
            if not req.dry_run:
                self._apply_in(conn, run_id, p, actor, scope)
            return conn.execute("SELECT * FROM consolidation_runs WHERE id = ?", (run_id,)).fetchone()

        out = _run(self.db.write(store))
        if out.created:
            self.service.embeddings.notify()  # the merged memories are embedded in the background
        return out

    def apply(self, run_id: str, *, actor: str, scope: ReadScope = UNSCOPED) -> ConsolidationRun:
        """Apply a stored dry-run's plan, exactly: refused (409) if any memory it touches changed."""
        self._check_frozen()

        def write(conn: Connection) -> Any:
            row = self._run_row(conn, run_id, scope)
            if row["status"] != "planned":
                raise Conflict(f"consolidation run '{run_id}' is {row['status']}, not planned", code=row["status"])
            self._apply_in(conn, run_id, Plan.model_validate_json(row["plan"]), actor, scope)
            return conn.execute("SELECT * FROM consolidation_runs WHERE id = ?", (run_id,)).fetchone()

        out = _run(self.db.write(write))
        if out.created:
            self.service.embeddings.notify()
        return out

    def _check_frozen(self) -> None:
        if self.service.settings.memory.pipeline.mutations_frozen:
            raise MutationsFrozen("mutations are frozen (memory.pipelineV2.mutationsFrozen): consolidation is disabled")

    def _run_row(self, conn: Connection, run_id: str, scope: ReadScope) -> Any:
        row = conn.execute("SELECT * FROM consolidation_runs WHERE id = ?", (run_id,)).fetchone()
        # A scoped caller sees only the runs it made under its own scope.
        if row is None or (scope.write_agent is not None and row["agent_scope"] != scope.write_agent):
            raise NotFound(f"consolidation run '{run_id}' not found", id=run_id)
        return row

    def _live(self, conn: Connection, action: Action, run_id: str, scope: ReadScope) -> None:
        """Every memory the action touches is live, writable and at its planned version."""
        writable = scope.writable()
        for mid, version in action.versions.items():
            row = conn.execute("SELECT * FROM memories WHERE id = ?", (mid,)).fetchone()
            if row is None or row["is_deleted"] or int(row["version"]) != version or not writable.allows(row):
                raise Conflict(
                    f"memory '{mid}' changed since consolidation run '{run_id}' was planned; plan again",
                    code="plan_stale",
                    id=mid,
                    run_id=run_id,
                )
            if mid in action.retire and row["pinned"]:
                raise Conflict(f"memory '{mid}' is pinned now; plan again", code="plan_stale", id=mid, run_id=run_id)

    def _apply_in(self, conn: Connection, run_id: str, p: Plan, actor: str, scope: ReadScope) -> None:
        for action in p.actions:
            self._live(conn, action, run_id, scope)
        created: dict[str, str] = {}
        for n, action in enumerate(p.actions):
            note: dict[str, Any] = {"consolidation_run": run_id, "kind": action.kind}
            if action.keep is not None:
                note["kept"] = action.keep
            rows = [conn.execute("SELECT * FROM memories WHERE id = ?", (mid,)).fetchone() for mid in action.retire]
            for row in rows:
                self.service.delete_in(
                    conn, row["id"], reason=f"consolidation: {action.reason}", changed_by=actor, note=note
                )
            kept_hash: str | None = None
            if action.kind == "merge":  # after its sources are retired: the model may repeat one of them
                created[str(n)], kept_hash = self._write_merge(conn, run_id, action, actor)
                for row in rows:
                    record_history(
                        conn,
                        row["id"],
                        "merged",
                        old_content=None,
                        new_content=None,
                        changed_by=actor,
                        reason=action.reason,
                        metadata={"consolidation_run": run_id, "merged_into": created[str(n)]},
                    )
            if action.kind in ("duplicate", "merge"):  # the text lives on in the survivor or the merge
                for row in rows:
                    if row["content_hash"] == kept_hash:
                        continue  # the merge is this very text: the ledger would refuse it
                    lifecycle.retire(
                        conn,
                        content_hash=row["content_hash"],
                        agent_id=row["agent_id"],
                        project=row["project"],
                        memory_id=row["id"],
                        content=row["content"],
                        reason=f"consolidation run {run_id}",
                        retired_by=actor,
                    )
            if action.keep is not None:
                record_history(
                    conn,
                    action.keep,
                    "consolidated",
                    old_content=None,
                    new_content=None,
                    changed_by=actor,
                    reason=action.reason,
                    metadata={"consolidation_run": run_id, "absorbed": action.retire},
                )
        conn.execute(
            "UPDATE consolidation_runs SET status = 'applied', applied_at = ?, actor = ?, created = ? WHERE id = ?",
            (now_iso(), actor, json.dumps(created, sort_keys=True), run_id),
        )

    def _write_merge(self, conn: Connection, run_id: str, action: Action, actor: str) -> tuple[str, str]:
        """Write a merge's memory and its provenance links; (its id, its content hash)."""
        req = RememberRequest(
            content=action.content or "",
            type=MemoryType(action.type),
            importance=action.importance,
            tags=action.tags or None,
            project=action.project,
            agent_id=action.agent_id,
            visibility=Visibility(action.visibility),
            source_type=SOURCE_TYPE,
            source_id=run_id,
            who="consolidation",
        )
        row, deduped = self.service.remember_in(
            conn,
            req,
            changed_by=actor,
            reason="consolidation",
            note={"consolidation_run": run_id, "sources": action.retire},
        )
        if row is None or deduped:
            raise Conflict(
                "a merged text is already a memory (or retired); plan again",
                code="plan_stale",
                run_id=run_id,
                duplicate_memory_id=None if row is None else row["id"],
            )
        ts = now_iso()
        for src in action.retire:
            conn.execute(
                "INSERT INTO memory_sources(memory_id, source_id, run_id, created_at) VALUES (?, ?, ?, ?)",
                (row["id"], src, run_id, ts),
            )
        return str(row["id"]), str(row["content_hash"])

    # -- undo --------------------------------------------------------------------------------
    def undo(
        self, run_id: str, *, actor: str, reason: str | None = None, scope: ReadScope = UNSCOPED
    ) -> ConsolidationRun:
        """Restore an applied run's sources and remove what its merges wrote, in one transaction."""
        self._check_frozen()
        why = f"consolidation run {run_id} undone" + (f": {reason}" if reason else "")

        def write(conn: Connection) -> Any:
            row = self._run_row(conn, run_id, scope)
            if row["status"] != "applied":
                raise Conflict(
                    f"consolidation run '{run_id}' is {row['status']}: only an applied run is undone",
                    code=row["status"],
                )
            p = Plan.model_validate_json(row["plan"])
            created: dict[str, str] = json.loads(row["created"] or "{}")
            for merged in created.values():  # first: a merge's text may equal a source's
                self.service.delete_in(conn, merged, reason=why, changed_by=actor, note={"consolidation_run": run_id})
            for action in p.actions:
                for mid in action.retire:
                    self._restore(conn, mid, run_id, why, actor)
                if action.keep is not None:
                    record_history(
                        conn,
                        action.keep,
                        "consolidation_undone",
                        old_content=None,
                        new_content=None,
                        changed_by=actor,
                        reason=why,
                        metadata={"consolidation_run": run_id, "restored": action.retire},
                    )
            conn.execute(
                "UPDATE consolidation_runs SET status = 'undone', undone_at = ?, undone_by = ? WHERE id = ?",
                (now_iso(), actor, run_id),
            )
            return conn.execute("SELECT * FROM consolidation_runs WHERE id = ?", (run_id,)).fetchone()

        return _run(self.db.write(write))

    def _restore(self, conn: Connection, mid: str, run_id: str, why: str, actor: str) -> None:
        row = conn.execute("SELECT * FROM memories WHERE id = ?", (mid,)).fetchone()
        if row is None:
            raise Conflict(
                f"memory '{mid}' of run '{run_id}' was purged (retention.tombstone_days): the run cannot be undone",
                code="purged",
                id=mid,
            )
        if not row["is_deleted"]:
            return  # recovered by hand since: nothing to restore
        dup = conn.execute(
            "SELECT id FROM memories WHERE content_hash = ? AND agent_id = ? AND COALESCE(project, '') = ?"
            " AND is_deleted = 0 AND id != ?",
            (row["content_hash"], row["agent_id"], row["project"] or "", mid),
        ).fetchone()
        if dup is not None:
            raise Conflict(
                f"memory '{mid}' cannot come back: a live memory ({dup[0]}) has its text now",
                code="duplicate",
                id=mid,
                duplicate_memory_id=dup[0],
            )
        lifecycle.unretire_memory(conn, mid)
        version = int(row["version"]) + 1
        ts = now_iso()
        conn.execute(
            "UPDATE memories SET is_deleted = 0, deleted_at = NULL, version = ?, updated_at = ?, updated_by = ?"
            " WHERE id = ?",
            (version, ts, actor, mid),
        )
        record_history(
            conn,
            mid,
            "recovered",
            old_content=None,
            new_content=row["content"],
            changed_by=actor,
            reason=why,
            metadata={"consolidation_run": run_id, "fromVersion": row["version"], "toVersion": version},
        )
        self._reindex(conn, row)

    def _reindex(self, conn: Connection, row: Any) -> None:
        """Put a restored memory's stored vector back in the index (after the commit)."""
        svc = self.service
        found = conn.execute(
            "SELECT vector, dimensions FROM embeddings WHERE content_hash = ? AND model = ?",
            (row["content_hash"], svc.embeddings.model_key),
        ).fetchone()
        if found is None:
            svc.embeddings.notify()
            return
        vec = vector_blob.decode(found[0], int(found[1]))
        if svc.index.dimensions in (None, vec.shape[0]):
            mid, project, created = row["id"], row["project"], row["created_at"]
            self.db.after_commit(lambda: svc.index.upsert(mid, vec, project, created))

    # -- read --------------------------------------------------------------------------------
    def get(self, run_id: str, *, scope: ReadScope = UNSCOPED) -> ConsolidationRun:
        return _run(self.db.read(lambda c: self._run_row(c, run_id, scope)))

    def runs(self, *, scope: ReadScope = UNSCOPED, limit: int = 50) -> RunList:
        def read(conn: Connection) -> list[Any]:
            if scope.write_agent is None:
                return list(
                    conn.execute(
                        "SELECT * FROM consolidation_runs ORDER BY created_at DESC, rowid DESC LIMIT ?", (limit,)
                    )
                )
            return list(
                conn.execute(
                    "SELECT * FROM consolidation_runs WHERE agent_scope = ? ORDER BY created_at DESC, rowid DESC LIMIT ?",
                    (scope.write_agent, limit),
                )
            )

        items = []
        for r in self.db.read(read):
            p = Plan.model_validate_json(r["plan"])
            items.append(
                RunSummary(
                    id=r["id"],
                    status=r["status"],
                    trigger=r["trigger"],
                    actor=r["actor"],
                    created_at=r["created_at"],
                    applied_at=r["applied_at"],
                    undone_at=r["undone_at"],
                    actions=len(p.actions),
                    retired=sum(len(a.retire) for a in p.actions),
                    tier2=r["tier2"],
                )
            )
        return RunList(items=items)

    def sources(self, memory_id: str, *, scope: ReadScope = UNSCOPED) -> SourcesResponse:
        """The memories a merged memory was made from (its provenance links)."""
        memory_id = self.service.get(memory_id, scope=scope).id  # 404 outside the caller's scope
        rows = self.db.read(
            lambda c: list(
                c.execute(
                    "SELECT s.source_id, s.run_id, m.content, m.is_deleted FROM memory_sources s"
                    " LEFT JOIN memories m ON m.id = s.source_id WHERE s.memory_id = ? ORDER BY s.rowid",
                    (memory_id,),
                )
            )
        )
        return SourcesResponse(
            id=memory_id,
            sources=[
                MemorySource(
                    source_id=r["source_id"],
                    run_id=r["run_id"],
                    content=r["content"],
                    is_deleted=None if r["is_deleted"] is None else bool(r["is_deleted"]),
                )
                for r in rows
            ],
        )

    # -- schedule ----------------------------------------------------------------------------
    def start(self) -> None:
        """Run on ``memory.consolidation.schedule`` (nothing when it is unset)."""
        if not self.settings.schedule:
            return
        self._stop.clear()
        self._thread = threading.Thread(target=self._loop, name="signet-consolidation", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
            self._thread = None

    def _loop(self) -> None:
        schedule = parse(self.settings.schedule or "")
        while True:
            now = datetime.now(UTC)
            fire = schedule.next_after(now)
            wait = (fire - now).total_seconds()
            if self._stop.wait(max(wait, 0.0)):
                return
            try:
                run = self.scheduled_run(fire)
                self.last_error = None
                if run is not None:
                    log.info("scheduled consolidation %s: %s (tier 2 %s)", run.id, run.counts, run.plan.tier2)
            except (SignetError, sqlite3.Error) as exc:  # the next fire time tries again
                self.last_error = str(exc)
                log.warning("scheduled consolidation failed: %s", exc)

    def scheduled_run(self, due: datetime) -> ConsolidationRun | None:
        """The run for the fire time ``due``, made by one daemon of the store: None when another
        daemon is consolidating now or already ran for this fire time (every daemon's timer
        fires at the same times; a tier-2 run asks the LLM, so it must not be made twice)."""
        with self.db.exclusive("consolidation") as mine:
            if not mine:
                log.info("scheduled consolidation skipped: another daemon on the store is consolidating")
                return None
            since = to_iso(due)
            done = self.db.read(
                lambda c: c.execute(
                    "SELECT 1 FROM consolidation_runs WHERE trigger = 'scheduled' AND created_at >= ? LIMIT 1",
                    (since,),
                ).fetchone()
            )
            if done is not None:
                log.info("scheduled consolidation for %s already made by another daemon on the store", since)
                return None
            return self.consolidate(ConsolidateRequest(), actor="system", trigger="scheduled")
