"""Wiring analytics, the telemetry event log and the recall QA ledger into the services.

The services only keep lists of listeners (``MemoryService.on_recall``,
``EmbeddingService.listeners``, ``RecordingLlm.listeners``, ``Worker.listeners``,
``MemoryService.on_remember_tx``) and know nothing of what listens; this module is where the
listeners are, and where each failure is given its error code (signet.ops.analytics). The
runtime builds one :class:`Observability` and starts and stops it with itself.

Every listener is cheap (counter bumps, a deque append) and cannot raise on well-formed input:
they run on the caller's thread, some inside a write transaction.
"""

from __future__ import annotations

import time
from typing import Any, Final

from signet import __version__
from signet.config import Settings
from signet.embedding.service import EmbeddingService
from signet.memory.service import MemoryService
from signet.models import RecallRequest, RecallResponse
from signet.ops.analytics import Analytics, ErrorCode, current_route
from signet.ops.search_ledger import SearchLedger
from signet.ops.telemetry import TelemetryLog
from signet.pipeline import queue
from signet.pipeline.llm.base import CallOutcome, LlmUnavailable
from signet.pipeline.runtime import Pipeline
from signet.pipeline.worker import LeaseLost
from signet.store.database import Database
from signet.store.scope import ReadScope

PARSE_MARKERS: Final = ("holds no JSON object", "is not valid JSON", "expected a JSON object")
"""What signet.pipeline.extraction.parse_json_object says about an answer it cannot read."""
REJECTED_MARKER: Final = "decision rejected"
"""How signet.pipeline.decision.parse_decision words an invalid decision."""
TIMEOUT_CODES: Final[dict[str, ErrorCode]] = {"extraction": "EXTRACTION_TIMEOUT", "decision": "DECISION_TIMEOUT"}
"""An LLM call's purpose -> the code of its timeout (other purposes: ``LLM_TIMEOUT``)."""


def _timed_out(exc: BaseException) -> bool:
    cause = exc.__cause__
    return (
        isinstance(exc, TimeoutError)
        or (cause is not None and ("Timeout" in type(cause).__name__ or isinstance(cause, TimeoutError)))
        or "timed out" in str(exc).lower()
    )


class Observability:
    """Analytics (in memory), telemetry (buffered to the database) and the QA ledger, and the
    listeners that feed them."""

    def __init__(
        self,
        settings: Settings,
        db: Database,
        service: MemoryService,
        embeddings: EmbeddingService,
        pipeline: Pipeline,
    ) -> None:
        tsettings = settings.memory.pipeline.telemetry
        self.settings = settings
        self.analytics = Analytics()
        self.telemetry = TelemetryLog(db, tsettings)
        self.ledger = SearchLedger(db, tsettings)
        # Old ledger rows go even while the ledger is off (rows from when it was on).
        self.telemetry.prune_hooks.append(("memory_search_telemetry", "created_at"))
        self._embedding_provider = embeddings.settings.provider
        service.on_recall.append(self.on_recall)
        service.on_remember_tx.append(self.on_remember)
        embeddings.listeners.append(self.on_embed)
        if pipeline.llm is not None:
            pipeline.llm.listeners.append(self.on_llm)
        pipeline.worker.listeners.append(self.on_job)

    # -- lifecycle ---------------------------------------------------------------------------
    def start(self) -> None:
        s = self.settings
        self.telemetry.emit(
            "runtime.started",
            {
                "version": __version__,
                "auth_mode": s.auth_mode or s.auth.mode,
                "embedding_provider": s.embedding.provider,
                "llm_provider": s.memory.pipeline.extraction.provider,
                "pipeline": s.memory.pipeline.enabled,
                "qa_ledger": self.ledger.enabled,
            },
        )
        self.telemetry.start()  # flushes events and applies retentionDays (the ledger's too)

    def stop(self) -> None:
        a = self.analytics
        self.telemetry.emit(
            "runtime.stopped",
            {
                "uptime_s": time.time() - a.started_at,
                "requests": a.requests,
                "dropped_events": self.telemetry.dropped,
            },
        )
        self.telemetry.stop()

    # -- listeners ---------------------------------------------------------------------------
    def on_recall(self, req: RecallRequest, resp: RecallResponse, scope: ReadScope) -> None:
        self.analytics.observe("search", resp.took_ms)
        route = current_route.get()
        if route is None:  # the pipeline's own candidate search, not a caller's recall
            return
        self.telemetry.emit(
            "recall.performed",
            {
                "surface": route,
                "method": resp.method,
                "results": resp.count,
                "no_hits": resp.count == 0,
                "latency_ms": resp.took_ms,
                "vector": resp.vector_search.available,
                "limit": req.limit,
            },
        )
        self.ledger.record(route, req, resp, scope)

    def on_remember(self, _conn: Any, mem: dict[str, Any]) -> None:
        if not self.telemetry.enabled:
            return
        self.telemetry.emit(
            "memory.created",
            {
                "type": mem.get("type"),
                "source_type": mem.get("source_type"),
                "pinned": bool(mem.get("pinned")),
                "has_project": mem.get("project") is not None,
                "importance": mem.get("importance"),
            },
        )

    def on_embed(self, kind: str, texts: int, seconds: float, error: BaseException | None) -> None:
        ms = seconds * 1000
        outcome = "success" if error is None else ("timeout" if _timed_out(error) else "failure")
        self.analytics.record_provider("embedding", self._embedding_provider, outcome, ms)
        if error is not None:
            self.analytics.record_error(
                "EMBEDDING_TIMEOUT" if outcome == "timeout" else "EMBEDDING_PROVIDER_DOWN",
                f"{kind} embedding of {texts} text(s) with {self._embedding_provider} failed: {error}",
            )
        self.telemetry.emit(
            "embedding.call",
            {
                "provider": self._embedding_provider,
                "kind": kind,
                "texts": texts,
                "outcome": outcome,
                "duration_ms": ms,
            },
        )

    def on_llm(self, rec: CallOutcome) -> None:
        self.analytics.record_provider("llm", rec.provider, rec.outcome, rec.latency_ms)
        code: ErrorCode | None = None
        if rec.outcome == "timeout":
            code = TIMEOUT_CODES.get(rec.purpose, "LLM_TIMEOUT")
        elif rec.outcome != "success":
            code = "LLM_PROVIDER_FAIL"
        if code is not None:
            self.analytics.record_error(
                code, f"{rec.purpose} call to {rec.provider}:{rec.model} ({rec.outcome}): {rec.error or ''}"
            )
        self.telemetry.emit(
            "llm.generate",
            {
                "provider": rec.provider,
                "model": rec.model,
                "purpose": rec.purpose,
                "outcome": rec.outcome,
                "duration_ms": rec.latency_ms,
            },
        )

    def on_job(
        self, job: queue.Job, seconds: float, result: dict[str, Any] | None, error: BaseException | None
    ) -> None:
        ms = seconds * 1000
        a = self.analytics
        a.observe("jobs", ms)
        warnings = [str(w) for w in (result or {}).get("warnings") or []]
        if isinstance(error, LeaseLost):
            outcome = "lease_lost"
        elif isinstance(error, LlmUnavailable):  # not a failure: the job waits for its provider or budget
            outcome = "waiting"
        elif error is not None:
            outcome = "failed"
            a.record_error(
                "JOB_FAILED",
                f"job {job.id} ({job.job_type}, attempt {job.attempts}/{job.max_attempts}): "
                f"{type(error).__name__}: {error}",
                memory_id=job.memory_id,
            )
        else:
            outcome = "skipped" if result is not None and "skipped" in result else "done"
            if any(m in w for w in warnings for m in PARSE_MARKERS if REJECTED_MARKER not in w):
                a.record_error(
                    "EXTRACTION_PARSE_FAIL",
                    f"job {job.id}: the extraction answer was not a readable JSON object",
                    memory_id=job.memory_id,
                )
            rejected = sum(1 for w in warnings if REJECTED_MARKER in w)
            if rejected:
                a.record_error(
                    "DECISION_INVALID",
                    f"job {job.id}: {rejected} decision(s) rejected as invalid",
                    memory_id=job.memory_id,
                )
        r = result or {}
        self.telemetry.emit(
            "pipeline.job",
            {
                "job_type": job.job_type,
                "outcome": outcome,
                "duration_ms": ms,
                "facts": r.get("facts"),
                "entities": r.get("entities"),
                "warnings": len(warnings),
            },
        )
