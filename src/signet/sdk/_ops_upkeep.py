"""SDK operations for keeping a store healthy: the extraction pipeline, diagnostics, the
repair actions, the maintenance worker and embedding coverage.

The diagnostics report is typed (signet.ops.diagnostics_report); the other reports are
defined in the daemon's route modules (the layers contract keeps the SDK from importing
those), so each comes back as the JSON object the daemon sent. The request side is checked
here for what the SDK can know (an empty id, an unknown mode).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from signet.errors import InvalidRequest
from signet.ops.diagnostics_report import DiagnosticsReport, DomainReport
from signet.sdk._core import Call, json_object, parser, query, segment

# --- pipeline ---------------------------------------------------------------------------------


def pipeline_status() -> Call[dict[str, Any]]:
    """Mode, flags, provider health, queue depth by status and type, the worker, and why the pipeline waits."""
    return Call("GET", "/api/pipeline/status", json_object)


def pipeline_jobs(
    *,
    status: str | None = None,
    job_type: Literal["extract", "document_ingest"] | None = None,
    memory_id: str | None = None,
    limit: int = 50,
    offset: int = 0,
) -> Call[dict[str, Any]]:
    """``{items, total}``: jobs, newest first, filtered by status, type or memory."""
    params = query(status=status, job_type=job_type, memory_id=memory_id, limit=limit, offset=offset)
    return Call("GET", "/api/pipeline/jobs", json_object, params=params)


def pipeline_job(job_id: str) -> Call[dict[str, Any]]:
    """One job with its payload, result and last error (a unique id prefix will do)."""
    return Call("GET", f"/api/pipeline/jobs/{segment(job_id, 'job id')}", json_object)


def requeue_dead(*, job_id: str | None = None, limit: int | None = None) -> Call[dict[str, Any]]:
    """Dead-letter jobs back to pending (``job_id``: just that one): ``{requeued, count}``."""
    if job_id is not None and not job_id.strip():
        raise InvalidRequest("a job id is required")
    payload = {k: v for k, v in {"job_id": job_id, "limit": limit}.items() if v is not None}
    return Call("POST", "/api/repair/requeue-dead", json_object, json=payload or None)


def release_leases() -> Call[dict[str, Any]]:
    """Expired leases back to pending (what the reaper does every minute): ``{released}``."""
    return Call("POST", "/api/repair/release-leases", json_object)


# --- diagnostics and embeddings ---------------------------------------------------------------


def diagnostics() -> Call[DiagnosticsReport]:
    """The health report: a composite score and each domain's findings, metrics and repairs."""
    return Call("GET", "/api/diagnostics", parser(DiagnosticsReport))


def diagnostics_domain(domain: str) -> Call[DomainReport]:
    """One domain's report (``queue``, ``storage``, ``index``, ``provider``, ``mutation``, ``connector``)."""
    return Call("GET", f"/api/diagnostics/{segment(domain, 'diagnostics domain')}", parser(DomainReport))


def embeddings_status() -> Call[dict[str, Any]]:
    """The embedder (provider, model, state), coverage of live memories, and the map's cache."""
    return Call("GET", "/api/embeddings/status", json_object)


# --- repairs and maintenance ------------------------------------------------------------------


def retention_sweep() -> Call[dict[str, Any]]:
    """Purge what the retention window has expired, now (through the repair gate)."""
    return Call("POST", "/api/repair/retention-sweep", json_object)


def check_fts(*, repair: bool = False, force: bool = False) -> Call[dict[str, Any]]:
    """Compare the keyword indexes with the memories; ``repair`` rebuilds them when inconsistent,
    ``force`` in any case."""
    payload = {k: True for k, v in {"repair": repair, "force": force}.items() if v}
    return Call("POST", "/api/repair/check-fts", json_object, json=payload or None)


def embedding_gaps() -> Call[dict[str, Any]]:
    """How many live memories wait for an embedding with the current model."""
    return Call("GET", "/api/repair/embedding-gaps", json_object)


def re_embed() -> Call[dict[str, Any]]:
    """Queue the memories missing an embedding now."""
    return Call("POST", "/api/repair/re-embed", json_object)


def clean_orphans(*, dry_run: bool = False) -> Call[dict[str, Any]]:
    """Remove rows whose memory is gone (``dry_run`` counts them): ``{dry_run, rows, total}``."""
    return Call("POST", "/api/repair/clean-orphans", json_object, json={"dry_run": True} if dry_run else None)


def dedup_stats(*, threshold: float | None = None, limit: int | None = None) -> Call[dict[str, Any]]:
    """Near-duplicate clusters among the newest memories, and how many a deduplicate would merge."""
    return Call("GET", "/api/repair/dedup-stats", json_object, params=query(threshold=threshold, limit=limit))


def deduplicate(
    *, dry_run: bool = False, threshold: float | None = None, limit: int | None = None, scan_limit: int | None = None
) -> Call[dict[str, Any]]:
    """Merge near duplicates into their survivors (each merge recoverable); ``dry_run`` merges nothing."""
    fields = {"dry_run": dry_run or None, "threshold": threshold, "limit": limit, "scan_limit": scan_limit}
    payload = {k: v for k, v in fields.items() if v is not None}
    return Call("POST", "/api/repair/deduplicate", json_object, json=payload or None)


def repair_audit(
    *,
    action: str | None = None,
    outcome: str | None = None,
    actor_type: str | None = None,
    since: datetime | str | None = None,
    limit: int = 50,
) -> Call[dict[str, Any]]:
    """The repair audit log, newest first: ``{items, count}``."""
    params = query(action=action, outcome=outcome, actor_type=actor_type, since=since, limit=limit)
    return Call("GET", "/api/repair/audit", json_object, params=params)


def maintenance() -> Call[dict[str, Any]]:
    """The maintenance worker: enabled, mode, schedule, last cycle, halted repairs, the gate's counters."""
    return Call("GET", "/api/repair/maintenance", json_object)


def run_maintenance(mode: Literal["observe", "execute"] | None = None) -> Call[dict[str, Any]]:
    """One maintenance cycle now: diagnose and plan, and in ``execute`` mode run the plan."""
    if mode is not None and mode not in ("observe", "execute"):
        raise InvalidRequest(f"invalid request: mode: must be 'observe' or 'execute', not {mode!r}")
    return Call("POST", "/api/repair/maintenance/run", json_object, json={"mode": mode} if mode else None)
