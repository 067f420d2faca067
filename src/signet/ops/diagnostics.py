"""Read-only health signals across domains, weighted into one composite score (spec 001).

| domain   | weight | signals                                                        |
| queue    | 0.28   | a stalled backlog (> 50 pending or oldest > 5 min, nothing done for 5 min), dead rate > 1%, stale leases; jobs that wait for a provider |
| storage  | 0.14   | tombstone ratio > 30%, SQLite quick_check, orphaned rows (signet.ops.orphans) |
| index    | 0.19   | FTS/memory count mismatch (any; > 10% weighs more), vectors lost (a memory marked embedded whose vector row is gone), embedding coverage < 80% while the embedder is failing |
| provider | 0.24   | embedder state, paused query embeddings; LLM call outcomes when the pipeline records them; an unreachable LLM provider while jobs wait |
| mutation | 0.10   | recovery events > 5 in the last 7 days                         |
| connector| 0.05   | connectors in error and the age of the oldest error; with no connector the domain says so and is left out of the composite |

Scores run 0..1; ``>= 0.8`` healthy, ``>= 0.5`` degraded, else unhealthy. Nothing here
writes; every finding says what would fix it, and a fault a repair action fixes also carries
that action (``repairs``: the action, its parameters and a *signal*, the number the repair
should bring down), which the maintenance worker plans from (signet.ops.maintenance).

Ordinary load is not a fault: a deep queue the pipeline is working through (a job done or
leased within :data:`PROGRESS_WINDOW_S`) and an embedding backlog the embedder is working
through (no batch error) cost nothing; the same depth with nothing moving does. Jobs that
wait for an LLM provider on purpose (``provider: none``, frozen, no workers) are reported
without a penalty, since that is a choice; a provider that is unknown or unreachable is a fault.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Protocol

from signet.config import Settings
from signet.embedding.service import EmbeddingService
from signet.ops import orphans
from signet.pipeline import queue
from signet.pipeline.runtime import Pipeline
from signet.search.vectors import VectorIndex
from signet.store.database import Database, connect
from signet.store.sqlite import Connection, sqlite3


class Sources(Protocol):
    """What diagnostics reads from the composition root (signet.runtime.Runtime), which sits
    above this layer: read-only properties, so the runtime satisfies it structurally."""

    @property
    def settings(self) -> Settings: ...
    @property
    def db(self) -> Database: ...
    @property
    def embeddings(self) -> EmbeddingService: ...
    @property
    def index(self) -> VectorIndex: ...
    @property
    def pipeline(self) -> Pipeline: ...


PROGRESS_WINDOW_S = 300.0
"""A job finished this recently (or a live lease) means the queue is being worked."""

WEIGHTS = {"queue": 0.28, "storage": 0.14, "index": 0.19, "provider": 0.24, "mutation": 0.10, "connector": 0.05}


@dataclass
class Domain:
    name: str
    score: float = 1.0
    findings: list[str] = field(default_factory=list)
    metrics: dict[str, Any] = field(default_factory=dict)
    repairs: list[dict[str, Any]] = field(default_factory=list)
    applicable: bool = True
    """False for a domain with nothing to measure (no connectors): left out of the composite."""

    def penalize(self, amount: float, finding: str) -> None:
        self.score = max(0.0, self.score - amount)
        self.findings.append(finding)

    def repair(self, action: str, signal: float, finding: str, **params: Any) -> None:
        """The last finding is fixed by ``action``; ``signal`` is what it should bring down."""
        self.repairs.append({"action": action, "signal": signal, "finding": finding, "params": params})

    @property
    def status(self) -> str:
        return status_of(self.score)


def status_of(score: float) -> str:
    return "healthy" if score >= 0.8 else ("degraded" if score >= 0.5 else "unhealthy")


def _scalar(conn: Connection, sql: str, *params: Any) -> Any:
    row = conn.execute(sql, params).fetchone()
    return row[0] if row is not None else None


def _table_exists(conn: Connection, name: str) -> bool:
    return _scalar(conn, "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", name) is not None


def queue_domain(
    conn: Connection, lease_timeout_ms: int, now: datetime, waiting: str | None = None, *, fault: bool = False
) -> Domain:
    """``waiting``: why the pipeline runs no jobs (its ``wait_reason``), None while it runs;
    ``fault``: that reason is a mistake (an unknown provider), not a choice."""
    d = Domain("queue")
    counts = {r[0]: int(r[1]) for r in conn.execute("SELECT status, COUNT(*) FROM memory_jobs GROUP BY status")}
    total = sum(counts.values())
    # Jobs parked for a missing provider or a spent budget are pending work too.
    pending = counts.get("pending", 0) + sum(counts.get(w, 0) for w in queue.WAITING)
    dead = counts.get("dead", 0)
    oldest = _scalar(conn, "SELECT MIN(created_at) FROM memory_jobs WHERE status = 'pending'")
    stale_cut = (now - timedelta(milliseconds=lease_timeout_ms)).isoformat()
    stale = int(_scalar(conn, "SELECT COUNT(*) FROM memory_jobs WHERE status = 'leased' AND leased_at < ?", stale_cut))
    live = counts.get("leased", 0) - stale
    done_at = _scalar(conn, "SELECT MAX(completed_at) FROM memory_jobs WHERE status = 'completed'")
    done_ago = (now - datetime.fromisoformat(done_at)).total_seconds() if done_at else None
    moving = live > 0 or (done_ago is not None and done_ago < PROGRESS_WINDOW_S)
    age = (now - datetime.fromisoformat(oldest)).total_seconds() if oldest is not None else 0.0
    backlog = pending > 50 or age > 300
    d.metrics = {
        "by_status": counts,
        "oldest_pending": oldest,
        "stale_leases": stale,
        "last_completed_s_ago": round(done_ago, 1) if done_ago is not None else None,
        "backlog": "waiting" if pending and waiting else ("draining" if moving else "stalled") if backlog else None,
    }
    if pending and waiting:
        finding = f"{pending} jobs pending, none will run: {waiting}"
        if fault:
            d.penalize(0.4, finding)
        else:
            d.findings.append(finding)  # a choice (provider none, frozen): said, not scored
    elif backlog and not moving and pending > 50:
        d.penalize(
            0.3,
            f"{pending} jobs pending and none done in {PROGRESS_WINDOW_S / 60:.0f} min: is the LLM provider "
            "reachable? (`signet pipeline status`)",
        )
    if total and dead / total > 0.01:
        finding = (
            f"{dead} dead jobs ({dead / total:.1%}): read their errors, then requeue (POST /api/repair/requeue-dead)"
        )
        d.penalize(0.3, finding)
        d.repair("requeue-dead", dead, finding)
    if oldest is not None:
        d.metrics["oldest_pending_age_s"] = round(age, 1)
        if age > 300 and not moving and not waiting:
            d.penalize(0.2, f"the oldest pending job has waited {age / 60:.0f} min")
    if stale:
        finding = (
            f"{stale} leases older than the lease timeout (released by the reaper, or POST /api/repair/release-leases)"
        )
        d.penalize(0.2, finding)
        d.repair("release-leases", stale, finding)
    return d


def _confirm_quick_check(conn: Connection) -> str:
    """quick_check again on a fresh connection to the same file. A pooled reader that read the
    keyword tables before other connections wrote them can report an FTS5 "checksum mismatch"
    from FTS5's per-connection cache while the file is sound (seen in the test suite: the
    writer and a fresh connection said ok). Damage is reported only when a fresh look sees it."""
    row = conn.execute("PRAGMA database_list").fetchone()
    path = str(row[2]) if row is not None and row[2] else ""
    if not path:  # an in-memory database: nothing else to ask
        return str(_scalar(conn, "PRAGMA quick_check"))
    fresh = connect(Path(path), readonly=True)
    try:
        return str(_scalar(fresh, "PRAGMA quick_check"))
    finally:
        fresh.close()


def storage_domain(conn: Connection, integrity: bool = True) -> Domain:
    """``integrity``: run SQLite's quick_check (it reads the whole file); without it the check
    is reported as ``skipped`` (damage found at start-up or by a failing write is reported
    by the runtime's condition either way)."""
    d = Domain("storage")
    total = int(_scalar(conn, "SELECT COUNT(*) FROM memories"))
    deleted = int(_scalar(conn, "SELECT COUNT(*) FROM memories WHERE is_deleted = 1"))
    if getattr(conn, "dialect", "sqlite") == "postgres":  # the server checks its own pages; its size
        check = "skipped"
        pages = int(_scalar(conn, "SELECT pg_database_size(current_database())"))
    else:
        check = str(_scalar(conn, "PRAGMA quick_check")) if integrity else "skipped"
        if check not in ("ok", "skipped"):
            check = _confirm_quick_check(conn)
        pages = int(_scalar(conn, "PRAGMA page_count")) * int(_scalar(conn, "PRAGMA page_size"))
    d.metrics = {"memories": total, "tombstones": deleted, "quick_check": check, "database_bytes": pages}
    if check not in ("ok", "skipped"):
        d.penalize(
            1.0,
            f"SQLite quick_check failed: {' '.join(check.split())[:300]}; stop the daemon and run "
            "`signet repair --recover` (it keeps the damaged file), or restore a backup",
        )
    if total and deleted / total > 0.3:
        finding = f"{deleted / total:.0%} of rows are tombstones; run POST /api/repair/retention-sweep"
        d.penalize(0.4, finding)
        d.repair("retention-sweep", deleted, finding)
    lost = orphans.count(conn)
    d.metrics["orphans"] = lost
    if n := sum(lost.values()):
        kinds = ", ".join(f"{v} {k.replace('_', ' ')}" for k, v in lost.items() if v)
        finding = f"{n} rows point at memories that no longer exist ({kinds}); POST /api/repair/clean-orphans"
        d.penalize(0.1, finding)
        d.repair("clean-orphans", n, finding)
    return d


def index_domain(conn: Connection, runtime: Sources) -> Domain:
    d = Domain("index")
    memories = int(_scalar(conn, "SELECT COUNT(*) FROM memories"))
    if getattr(conn, "dialect", "sqlite") == "postgres":  # a generated tsvector column: every row is indexed
        indexed = context_indexed = memories
    else:
        indexed = int(_scalar(conn, "SELECT COUNT(*) FROM memories_fts_docsize"))
        context_indexed = int(_scalar(conn, "SELECT COUNT(*) FROM memories_ctx_fts_docsize"))
    active = int(_scalar(conn, "SELECT COUNT(*) FROM memories WHERE is_deleted = 0"))
    embedded = int(
        _scalar(
            conn,
            "SELECT COUNT(*) FROM memories WHERE is_deleted = 0 AND embedding_model = ?",
            runtime.embeddings.model_key,
        )
    )
    coverage = embedded / active if active else 1.0
    lost = int(
        _scalar(
            conn,
            "SELECT COUNT(*) FROM memories m WHERE m.is_deleted = 0 AND m.embedding_model = ? AND NOT EXISTS"
            " (SELECT 1 FROM embeddings e WHERE e.content_hash = m.content_hash AND e.model = ?)",
            runtime.embeddings.model_key,
            runtime.embeddings.model_key,
        )
    )
    d.metrics = {
        "memories": memories,
        "fts_rows": indexed,
        "context_fts_rows": context_indexed,
        "embedded": embedded,
        "active": active,
        "coverage": round(coverage, 4),
        "vectors_lost": lost,
        "vector_index_rows": len(runtime.index),
    }

    # Both keyword indexes hold one row per memory row (tombstones included): any difference is
    # a memory keyword search cannot find (or a row it finds that is gone); past 10% it weighs more.
    def weight(rows: int) -> float:
        return 0.5 if not memories or abs(memories - rows) / memories > 0.1 else 0.2

    drift = abs(memories - indexed) + abs(memories - context_indexed)
    if indexed != memories:
        finding = f"FTS index has {indexed} rows for {memories} memories; POST /api/repair/check-fts with repair"
        d.penalize(weight(indexed), finding)
    if context_indexed != memories:
        # recall's keyword leg reads this index: when it drifts, keyword hits go missing
        finding = (
            f"thread-context FTS index has {context_indexed} rows for {memories} memories; "
            "POST /api/repair/check-fts with repair"
        )
        d.penalize(weight(context_indexed), finding)
    if drift:
        d.repair("check-fts", drift, finding, repair=True)
    emb = runtime.embeddings
    failing = emb.state == "unavailable" or emb.stopped_error or emb.last_batch_error
    if lost and emb.state != "disabled":
        finding = (
            f"{lost} memories are marked embedded but their vector is gone: recall cannot find them by meaning; "
            "POST /api/repair/re-embed"
        )
        d.penalize(0.3, finding)
        d.repair("re-embed", lost, finding)
    if emb.state != "disabled" and coverage < 0.8:
        if failing:
            finding = f"only {coverage:.0%} of memories have vectors; see /api/repair/embedding-gaps"
            d.penalize(0.4, finding)
            d.repair("re-embed", active - embedded, finding)
        else:  # a backlog the embedder is working through (a bulk import): load, not a fault
            d.metrics["embedding_backlog"] = active - embedded
    return d


def provider_domain(conn: Connection, runtime: Sources) -> Domain:
    d = Domain("provider")
    emb = runtime.embeddings
    paused = emb.query_paused() if emb.state == "ready" else None
    d.metrics = {
        "embedding": {"provider": emb.settings.provider, "state": emb.state, "error": emb.error, "query_paused": paused}
    }
    if emb.state == "unavailable":
        d.penalize(0.6, f"embedding provider unavailable: {emb.error}")
    elif emb.state == "disabled":
        d.penalize(0.3, "embedding provider is 'none': vector search is off")
    elif paused is not None:
        d.penalize(
            0.3,
            f"recall is keyword-only for now: {paused}; check the embedding provider "
            f"({emb.settings.base_url or emb.settings.provider})",
        )
    ext = runtime.settings.memory.pipeline.extraction  # the LLM pipeline: which provider, and why it waits
    waiting = runtime.pipeline.wait_reason()
    budget = runtime.pipeline.supply.budget
    d.metrics["llm"] = {
        "provider": ext.provider,
        "model": runtime.pipeline.provider.model or None,
        "waiting": waiting,
        "budget": budget.snapshot() if budget is not None and budget.limited else None,
    }
    pending = int(
        _scalar(
            conn,
            "SELECT COUNT(*) FROM memory_jobs WHERE status IN"
            " ('pending', 'leased', 'waiting_for_provider', 'waiting_for_budget')",
        )
    )
    if pending and ext.provider != "none":  # jobs that should run: is the provider there? (a cached probe)
        reachable, why = runtime.pipeline.health()
        if not reachable:  # configured but away: a fault (provider none is a choice, said by the queue domain)
            d.penalize(
                0.4,
                f"LLM provider {ext.provider!r} is unreachable ({why}) and {pending} jobs wait: start it, or fix "
                "memory.pipelineV2.extraction in agent.yaml (endpoint, model, api_key); a running daemon picks "
                "the change up",
            )
    if _table_exists(conn, "llm_calls"):
        rows = list(
            conn.execute(
                "SELECT outcome, COUNT(*) FROM (SELECT outcome FROM llm_calls ORDER BY rowid DESC LIMIT 100) GROUP BY outcome"
            )
        )
        outcomes = {r[0]: int(r[1]) for r in rows}
        n = sum(outcomes.values())
        d.metrics["llm_recent_outcomes"] = outcomes
        if n:
            ok = outcomes.get("success", 0) / n
            if ok < 0.9:
                d.penalize(0.4 * (1 - ok) / 0.9 + 0.1, f"only {ok:.0%} of the last {n} LLM calls succeeded")
    return d


def mutation_domain(conn: Connection, now: datetime) -> Domain:
    d = Domain("mutation")
    since = (now - timedelta(days=7)).isoformat()
    recovered = int(
        _scalar(conn, "SELECT COUNT(*) FROM memory_history WHERE event = 'recovered' AND created_at >= ?", since)
    )
    d.metrics = {"recoveries_7d": recovered}
    if recovered > 5:
        d.penalize(0.4, f"{recovered} recoveries in 7 days: something is deleting memories it should not")
    return d


def connector_domain(conn: Connection, now: datetime) -> Domain:
    """Connectors (signet.documents.connectors) in error, and how long the oldest error has
    stood. With no connector there is nothing to measure: the domain says so and stays out of
    the composite, rather than report a health it never measured."""
    total = int(_scalar(conn, "SELECT COUNT(*) FROM connectors") or 0)
    if total == 0:
        d = Domain("connector", applicable=False)
        d.metrics = {"configured": 0, "note": "no connectors configured"}
        return d
    d = Domain("connector")
    errors = int(_scalar(conn, "SELECT COUNT(*) FROM connectors WHERE last_error IS NOT NULL") or 0)
    oldest = _scalar(conn, "SELECT MIN(last_error_at) FROM connectors WHERE last_error IS NOT NULL")
    age = (now - datetime.fromisoformat(oldest)).total_seconds() if oldest else None
    d.metrics = {"configured": total, "in_error": errors, "oldest_error_age_s": round(age, 1) if age else None}
    if errors:
        d.penalize(
            0.6 * errors / total,
            f"{errors} of {total} connectors in error: `signet connectors list` shows why; fix it and "
            "`signet connectors sync ID`",
        )
        if age is not None and age > 3600:
            d.penalize(0.3, f"a connector error has stood for {age / 3600:.1f} h")
    return d


def _guarded(name: str, measure: Callable[[], Domain]) -> Domain:
    """A domain whose reads hit a damaged database says so (with what to do) instead of
    failing the whole report."""
    try:
        return measure()
    except sqlite3.DatabaseError as exc:
        d = Domain(name)
        d.penalize(
            1.0,
            f"the database could not be read ({exc}); stop the daemon and run `signet repair --recover`, "
            "or restore a backup",
        )
        return d


def _describe_store(d: Domain, store: dict[str, Any]) -> None:
    """Which store this is (SQLite file, or PostgreSQL host:port/database, never a password)
    and its reader pool; requests waiting for a connection are a finding."""
    pool = store["pool"]
    d.metrics.update(backend=store["backend"], location=store["location"], pool=pool)
    if pool["waiting"]:
        d.penalize(
            0.1,
            f"{pool['waiting']} reads wait for one of the {pool['max']} database connections; "
            "raise storage.poolSize in agent.yaml (PostgreSQL) or look for slow reads in the log",
        )


def diagnose(runtime: Sources, *, integrity: bool = True) -> dict[str, Any]:
    """The report; ``integrity=False`` skips SQLite's quick_check (the cheap watch that keeps
    /health current, signet.ops.maintenance)."""
    now = datetime.now(UTC)
    lease_ms = runtime.settings.memory.pipeline.lease_timeout_ms
    waiting = runtime.pipeline.wait_reason()
    # A configured provider that is unknown or does not answer is a fault; "none" is a choice.
    configured = runtime.settings.memory.pipeline.extraction.provider != "none"
    fault = runtime.pipeline.provider_error is not None or (
        waiting is not None
        and configured
        and runtime.pipeline.worker.waiting is not None
        and runtime.pipeline.worker.waiting.status == queue.WAITING_FOR_PROVIDER
    )

    def read(conn: Connection) -> list[Domain]:
        return [
            _guarded("queue", lambda: queue_domain(conn, lease_ms, now, waiting, fault=fault)),
            _guarded("storage", lambda: storage_domain(conn, integrity)),
            _guarded("index", lambda: index_domain(conn, runtime)),
            _guarded("provider", lambda: provider_domain(conn, runtime)),
            _guarded("mutation", lambda: mutation_domain(conn, now)),
            _guarded("connector", lambda: connector_domain(conn, now)),
        ]

    domains = runtime.db.read(read)
    _describe_store(domains[1], runtime.db.describe())
    counted = [d for d in domains if d.applicable]
    composite = sum(WEIGHTS[d.name] * d.score for d in counted) / sum(WEIGHTS[d.name] for d in counted)
    return {
        "score": round(composite, 4),
        "status": status_of(composite),
        "checked_at": now.isoformat(),
        "domains": {
            d.name: {
                "score": round(d.score, 4),
                "status": d.status,
                "weight": WEIGHTS[d.name],
                "findings": d.findings,
                "metrics": d.metrics,
                "repairs": d.repairs,
                "applicable": d.applicable,
            }
            for d in domains
        },
    }
