"""The repair actions, each run through the gate and written to the audit trail.

One registry (:data:`ACTIONS`) for every caller: the HTTP routes (an operator's request), the
maintenance worker (``system``) and ``signet doctor --fix`` call :meth:`Repairs.run` with an
action's name, so the gate, the audit row and the action itself cannot differ by caller.

=================  ==========================================================================
release-leases     leases older than the lease timeout back to pending (what the reaper does)
requeue-dead       dead jobs back to pending with a fresh budget of attempts (``limit``, ``job_id``)
check-fts          count and check both keyword indexes; ``repair``/``force`` rebuild them
retention-sweep    the retention sweep, now
re-embed           memories whose vector row is gone are marked unembedded, and the embedder is woken
clean-orphans      rows that point at memories that no longer exist (signet.ops.orphans)
deduplicate        semantic near-duplicates merged into one survivor, reversibly (signet.ops.dedup)
=================  ==========================================================================
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from signet.continuity import summary_queue
from signet.continuity.service import ContinuityService
from signet.errors import MutationsFrozen, SignetError, StorageError
from signet.memory.retention import RetentionWorker
from signet.memory.service import MemoryService
from signet.ops import dedup, orphans, repair_audit
from signet.ops.diagnostics import Sources
from signet.ops.repair_gate import ActorType, RepairGate
from signet.pipeline import queue
from signet.store.integrity import check_keyword_indexes, rebuild_keyword_indexes
from signet.store.scope import UNSCOPED, ReadScope
from signet.store.sqlite import Connection, sqlite3

log = logging.getLogger(__name__)


class RepairSources(Sources, Protocol):
    """What the actions reach in the composition root (signet.runtime.Runtime, structurally):
    what diagnostics reads, and the workers the actions drive."""

    @property
    def retention(self) -> RetentionWorker: ...
    @property
    def service(self) -> MemoryService: ...
    @property
    def continuity(self) -> ContinuityService: ...


@dataclass
class RepairResult:
    action: str
    affected: int
    """Rows (or indexes) changed: 0 means there was nothing to do."""
    message: str
    data: Any = None
    """The action's own answer (what its HTTP route returns)."""
    details: dict[str, Any] = field(default_factory=dict)
    """What goes into the audit row."""


@dataclass(frozen=True)
class Caller:
    actor: str
    actor_type: ActorType


SYSTEM = Caller("maintenance", "system")
"""The maintenance worker."""


def _history_actor(caller: Caller) -> str:
    """``memory_history.actor_type`` speaks the spec's words: operator, agent, daemon."""
    return "daemon" if caller.actor_type == "system" else caller.actor_type


# -- the actions ------------------------------------------------------------------------------


def release_leases(src: RepairSources, caller: Caller) -> RepairResult:
    ms = src.settings.memory.pipeline.lease_timeout_ms
    n = src.db.write(lambda c: queue.release_leases(c, ms))
    if n:
        src.pipeline.worker.notify()
    return RepairResult("release-leases", n, f"released {n} stale lease(s)", n)


def requeue_dead(src: RepairSources, caller: Caller, limit: int = 50, job_id: str | None = None) -> RepairResult:
    """Dead extraction jobs first, then dead session-summary jobs (their own queue), up to
    ``limit`` in all; a ``job_id`` names one job of either queue."""

    def both(conn: Connection) -> tuple[list[str], list[str]]:
        jobs = queue.requeue_dead(conn, limit=limit, job_id=job_id)
        left = limit - len(jobs)
        summaries = summary_queue.requeue_dead(conn, limit=left, job_id=job_id) if left > 0 else []
        return jobs, summaries

    jobs, summaries = src.db.write(both)
    if jobs:
        src.pipeline.worker.notify()
    if summaries:
        src.continuity.notify()
    ids = jobs + summaries
    return RepairResult("requeue-dead", len(ids), f"requeued {len(ids)} dead job(s)", ids, {"jobs": ids[:50]})


@dataclass
class FtsOutcome:
    memories: int
    indexed: int
    context_indexed: int
    consistent: bool
    rebuilt: bool


def check_fts(src: RepairSources, caller: Caller, repair: bool = False, force: bool = False) -> RepairResult:
    """Both keyword indexes are rebuilt together, in one write: recall's keyword leg reads
    ``memories_ctx_fts`` and the legacy keyword-only search ``memories_fts``, and fixing one
    while leaving the other broken would leave recall answering differently by route."""
    check = src.db.write(check_keyword_indexes)
    before = check
    rebuilt = False
    if force or (repair and not check.consistent):
        src.db.write(rebuild_keyword_indexes)
        rebuilt = True
        check = src.db.write(check_keyword_indexes)
    out = FtsOutcome(check.memories, check.indexed, check.context_indexed, check.consistent, rebuilt)
    state = "consistent" if check.consistent else "inconsistent"
    message = f"keyword indexes {'rebuilt, now ' if rebuilt else ''}{state} ({check.indexed}/{check.memories} rows)"
    details = {
        "before": {"indexed": before.indexed, "context_indexed": before.context_indexed, "ok": before.ok},
        "memories": check.memories,
        "rebuilt": rebuilt,
    }
    return RepairResult("check-fts", int(rebuilt), message, out, details)


def retention_sweep(src: RepairSources, caller: Caller) -> RepairResult:
    report = src.retention.sweep().as_dict()
    n = sum(v for k, v in report.items() if k != "pages_reclaimed")
    return RepairResult("retention-sweep", n, f"retention sweep removed {n} row(s)", report, report)


def re_embed(src: RepairSources, caller: Caller) -> RepairResult:
    """Memories marked embedded whose vector row is gone lose the mark, so the background
    embedder (which only looks at unmarked ones once its first pass is done) embeds them again;
    then the embedder is woken to fill every gap now."""
    model = src.embeddings.model_key
    n = src.db.write(
        lambda c: int(
            c.execute(
                "UPDATE memories SET embedding_model = NULL WHERE is_deleted = 0 AND embedding_model = ? AND NOT EXISTS"
                " (SELECT 1 FROM embeddings e WHERE e.content_hash = memories.content_hash AND e.model = ?)",
                (model, model),
            ).rowcount
        )
    )
    src.embeddings.notify()
    pending = src.embeddings.pending_count()
    state = src.embeddings.state
    message = f"{n} lost vector(s) queued again; {pending} memories wait for a vector (embedder {state})"
    return RepairResult("re-embed", n, message, None, {"lost": n, "pending": pending, "embedder": state})


def clean_orphans(src: RepairSources, caller: Caller, dry_run: bool = False) -> RepairResult:
    if dry_run:
        found = src.db.read(orphans.count)
        return RepairResult("clean-orphans", 0, f"{sum(found.values())} orphaned row(s) found", found, found)
    removed = src.db.write(orphans.clean)
    n = sum(removed.values())
    return RepairResult("clean-orphans", n, f"removed {n} orphaned row(s)", removed, removed)


@dataclass
class DedupOutcome:
    scan: dedup.Scan
    merged: list[dict[str, Any]]
    dry_run: bool


def deduplicate(
    src: RepairSources,
    caller: Caller,
    threshold: float | None = None,
    dry_run: bool = False,
    limit: int | None = None,
    scan_limit: int = 5000,
    scope: ReadScope = UNSCOPED,
) -> RepairResult:
    """Merge near-duplicates: each duplicate close enough to its cluster's survivor is
    soft-deleted with a history row naming the survivor (``recover`` undoes it); pinned
    memories are never merged away. At most ``limit`` (``repair.dedupBatchSize``) per call."""
    cfg = src.settings.memory.pipeline.repair
    cut = cfg.dedup_semantic_threshold if threshold is None else threshold
    batch = min(limit or cfg.dedup_batch_size, cfg.dedup_batch_size)
    found = src.db.read(lambda c: dedup.scan(c, src.embeddings.model_key, cut, limit=scan_limit, scope=scope))
    todo = [(cl.survivor, m) for cl in found.clusters for m in cl.members if m.similarity >= cut and not m.pinned][
        :batch
    ]
    if dry_run or not todo:
        planned = [{"id": m.id, "survivor": s, "similarity": round(m.similarity, 4)} for s, m in todo]
        message = f"{len(planned)} near-duplicate(s) would be merged" if dry_run else "no near-duplicates to merge"
        return RepairResult("deduplicate", 0, message, DedupOutcome(found, planned, dry_run), {"would_merge": planned})

    def write(conn: Connection) -> list[dict[str, Any]]:
        merged = []
        for survivor, m in todo:
            alive = conn.execute("SELECT 1 FROM memories WHERE id = ? AND is_deleted = 0", (survivor,)).fetchone()
            if alive is None:  # changed since the scan: leave this pair for the next call
                continue
            version = src.service.delete_in(
                conn,
                m.id,
                reason=f"near-duplicate of {survivor} (cosine {m.similarity:.3f}); recover to undo",
                changed_by=caller.actor,
                actor_type=_history_actor(caller),
                note={"merged_into": survivor, "similarity": round(m.similarity, 4), "repair": "deduplicate"},
            )
            if version is not None:
                merged.append({"id": m.id, "survivor": survivor, "similarity": round(m.similarity, 4)})
        return merged

    merged = src.db.write(write)
    return RepairResult(
        "deduplicate",
        len(merged),
        f"merged {len(merged)} near-duplicate(s) into their survivors",
        DedupOutcome(found, merged, False),
        {"merged": merged, "threshold": cut},
    )


ACTIONS: dict[str, Callable[..., RepairResult]] = {
    "release-leases": release_leases,
    "requeue-dead": requeue_dead,
    "check-fts": check_fts,
    "retention-sweep": retention_sweep,
    "re-embed": re_embed,
    "clean-orphans": clean_orphans,
    "deduplicate": deduplicate,
}


class Repairs:
    """Runs an action through the gate and records it (:meth:`run`)."""

    def __init__(self, src: RepairSources, gate: RepairGate) -> None:
        self.src = src
        self.gate = gate

    def run(self, action: str, caller: Caller, *, reason: str | None = None, **params: Any) -> RepairResult:
        """Admit, run, audit. A refusal is audited and raised as the gate's error (429 with
        ``retry_after``, 503 frozen, 403 for an agent while autonomous repairs are off); a
        failure is audited and re-raised."""
        if action == "deduplicate" and self.src.settings.memory.pipeline.mutations_frozen:
            raise MutationsFrozen("mutations are frozen (memory.pipelineV2.mutationsFrozen): deduplicate is disabled")
        decision = self.gate.admit(action, caller.actor_type)
        base = {"reason": reason} if reason else {}
        if not decision.allowed:
            self._audit(
                action,
                caller,
                "refused",
                {**base, "code": decision.code, "message": decision.message, "retry_after": decision.retry_after},
            )
            raise decision.error()
        try:
            result = ACTIONS[action](self.src, caller, **params)
        except (SignetError, sqlite3.Error, OSError) as exc:
            self._audit(action, caller, "failed", {**base, "error": f"{type(exc).__name__}: {exc}"[:500]})
            raise
        self._audit(
            action,
            caller,
            "ok" if result.affected else "noop",
            {**base, "affected": result.affected, "message": result.message, **result.details},
        )
        log.info("repair %s by %s (%s): %s", action, caller.actor, caller.actor_type, result.message)
        return result

    def _audit(self, action: str, caller: Caller, outcome: str, details: dict[str, Any]) -> None:
        try:
            self.src.db.write(
                lambda c: repair_audit.record(c, action, caller.actor, caller.actor_type, outcome, details)
            )
        except (StorageError, sqlite3.Error, RuntimeError) as exc:
            # A full disk or closed database: the repair's own answer still goes back.
            log.warning("could not write the audit row for repair %s (%s): %s", action, outcome, exc)
