"""The pipeline of one runtime: its provider, worker, hooks on remember and status.

The composition root (:mod:`signet.runtime`) builds it from the settings, the database and
the memory service, and calls :meth:`Pipeline.start` / :meth:`Pipeline.stop`.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from signet import plugins
from signet.config import PipelineSettings
from signet.memory.service import MemoryService
from signet.pipeline import graph, queue
from signet.pipeline.extraction import cap_input, render, strip_think
from signet.pipeline.llm.base import LlmProvider, RecordingLlm
from signet.pipeline.worker import Processor, Worker
from signet.store.database import Database
from signet.store.sqlite import Connection

LINK_NAMES = "link_names"
"""Key :meth:`Pipeline.prepare_remember` adds to the memory dict: the entity linker's candidate names."""

if TYPE_CHECKING:
    from signet.transcript import Turn

log = logging.getLogger(__name__)

NOT_EXTRACTED = ("pipeline", "document")
"""Memory sources no extraction job is queued for: the pipeline's own facts, document chunks."""

HEALTH_TTL = 15.0


class Pipeline:
    """The pipeline of one runtime: provider, worker, and the status snapshot.

    Built, it hooks itself into the memory service's remember path (entity linking, queueing
    extraction inside the write's transaction)."""

    def __init__(self, settings: PipelineSettings, db: Database, service: MemoryService) -> None:
        self.db = db
        self.settings = settings
        self.provider: LlmProvider | None = None
        self.provider_error: str | None = None
        name = self.settings.extraction.provider
        factories = plugins.llm_providers()
        if name not in factories:
            self.provider_error = f"unknown LLM provider {name!r} (installed: {', '.join(sorted(factories))})"
        else:
            self.provider = plugins.resolve(factories[name]).from_settings(self.settings.extraction)
        self.llm = RecordingLlm(self.provider, self.settings.extraction, db=db) if self.provider else None
        self.worker = Worker(
            Processor(service, self.settings, self.llm) if self.llm is not None else None,
            self.settings,
            db,
            self.wait_reason(),
        )
        service.prepare_hooks.append(self.prepare_remember)
        service.on_remember_tx.append(self.on_remember)
        self._health: tuple[float, bool, str | None] | None = None
        self._health_lock = threading.Lock()

    def wait_reason(self) -> str | None:
        s = self.settings
        if not s.enabled:
            return "the pipeline is disabled (memory.pipelineV2.enabled: false)"
        if self.provider_error:
            return f"waiting for a provider: {self.provider_error}"
        if s.extraction.provider == "none":
            return (
                "waiting for a provider: memory.pipelineV2.extraction.provider is 'none'; set it to ollama, "
                "openai or anthropic and restart the daemon"
            )
        if s.mutations_frozen:
            return "mutations are frozen (memory.pipelineV2.mutationsFrozen): jobs wait, nothing is extracted"
        if s.workers == 0:
            return "no workers (memory.pipelineV2.workers: 0)"
        return None

    # -- hooks -----------------------------------------------------------------------------
    def prepare_remember(self, mem: dict[str, Any]) -> None:
        """Before the write is queued, on the caller's thread: the names the entity linker
        will look up (pure work kept off the writer thread)."""
        if self.settings.graph.enabled:
            mem[LINK_NAMES] = graph.candidate_names(mem["content"])

    def on_remember(self, conn: Connection, mem: dict[str, Any]) -> None:
        """Inside the remember transaction: link entities, queue extraction (never for the
        pipeline's own facts, which would loop, nor for document chunks: a document is stored
        as it is written, chunk by chunk, and is searchable without an LLM reading it)."""
        if self.settings.graph.enabled:
            graph.inline_link(conn, mem["id"], mem["content"], mem.get("agent_id") or "default", mem.get(LINK_NAMES))
        if self.settings.enabled and mem.get("source_type") not in NOT_EXTRACTED:
            queue.enqueue(conn, "extract", memory_id=mem["id"], max_attempts=self.settings.max_attempts)
            self.worker.notify()

    def summarize(self, turns: list[Turn]) -> str | None:
        """The handoff summarizer (HookService.summarizer) on the configured provider."""
        if self.llm is None:
            return None
        text = "\n".join(f"{t.role}: {t.content}" for t in turns)
        out = self.llm.complete(render("summary", text=cap_input(text)), purpose="summary")
        return strip_think(out) or None

    # -- lifecycle -------------------------------------------------------------------------
    def summarizer(self) -> Callable[[list[Turn]], str | None] | None:
        """The handoff summarizer for the hook service, when a provider is ready for it."""
        if self.llm is not None and self.settings.summarize_handoff and self.wait_reason() is None:
            return self.summarize
        return None

    def start(self) -> None:
        self.worker.start()

    def stop(self) -> None:
        self.worker.stop()

    # -- status ----------------------------------------------------------------------------
    def health(self) -> tuple[bool, str | None]:
        if self.provider is None:
            return False, self.provider_error
        with self._health_lock:
            cached = self._health
            if cached is not None and time.monotonic() - cached[0] < HEALTH_TTL:
                last_ok = self.llm.last_success if self.llm is not None else None
                if not cached[1] and last_ok is not None and last_ok > cached[0]:
                    return True, None  # it answered since the failed probe
                return cached[1], cached[2]
        ok, why = self.provider.health()
        with self._health_lock:
            self._health = (time.monotonic(), ok, why)
        return ok, why

    def status(self) -> dict[str, Any]:
        s = self.settings
        stats = self.db.read(queue.stats)
        healthy, why = self.health() if s.enabled else (False, None)
        waiting = self.wait_reason()
        worker = self.worker.snapshot()
        if waiting is not None:
            state = "disabled" if not s.enabled else "waiting"
        elif worker["backoff_s"] > 0:
            state = "backoff"
        elif not healthy:
            state = "degraded"
            waiting = (
                f"provider unreachable: {why}; jobs are retried with backoff and go dead after "
                f"{s.max_attempts} attempts (requeue with `signet pipeline requeue`)"
            )
        else:
            state = "running"
        if state == "backoff":
            waiting = (
                f"backing off {worker['backoff_s']:.1f}s after {worker['consecutive_failures']} failures: "
                f"{worker['last_error']}"
            )
        mode = (
            "disabled"
            if not s.enabled
            else "frozen"
            if s.mutations_frozen
            else "shadow"
            if s.shadow_mode
            else "controlled"
        )
        return {
            "state": state,
            "reason": waiting,
            "mode": mode,
            "flags": {
                "enabled": s.enabled,
                "shadowMode": s.shadow_mode,
                "mutationsFrozen": s.mutations_frozen,
                "allowUpdateDelete": s.allow_update_delete,
                "minFactConfidenceForWrite": s.min_fact_confidence_for_write,
                "graphEnabled": s.graph.enabled,
                "maxAttempts": s.max_attempts,
                "leaseTimeoutMs": s.lease_timeout_ms,
                "workers": s.workers,
            },
            "provider": {
                "name": s.extraction.provider,
                "model": s.extraction.model,
                "endpoint": getattr(self.provider, "endpoint", None),
                "timeout_s": s.extraction.timeout,
                "healthy": healthy,
                "error": why,
                "calls": self.llm.summary() if self.llm is not None else None,
            },
            "queue": stats,
            "worker": worker,
        }
