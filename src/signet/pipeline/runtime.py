"""The pipeline of one runtime: its provider, worker, hooks on remember and status.

The composition root (:mod:`signet.runtime`) builds it from the settings, the database and
the memory service, and calls :meth:`Pipeline.start` / :meth:`Pipeline.stop`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from signet.config import ExtractionSettings, LlmBudget, PipelineSettings
from signet.knowledge import hints
from signet.knowledge import store as knowledge
from signet.knowledge.extract import extract as extract_mentions
from signet.memory.service import MemoryService
from signet.pipeline import graph, queue
from signet.pipeline.extraction import cap_input, render, strip_think
from signet.pipeline.hint_fill import HintFiller
from signet.pipeline.llm.base import LlmProvider, LlmUnavailable
from signet.pipeline.llm.supply import LlmSupply
from signet.pipeline.worker import Processor, Worker
from signet.search.names import linkable_names
from signet.store.database import Database
from signet.store.sqlite import Connection

LINK_NAMES = "link_names"
"""Key :meth:`Pipeline.prepare_remember` adds to the memory dict: the entity linker's candidate names."""
MENTIONS = "mentions"
"""Key :meth:`Pipeline.prepare_remember` adds: the deterministic extractor's entities (signet.knowledge)."""
HINTS = "hints"
"""Key :meth:`Pipeline.prepare_remember` adds: the memory's template hints (signet.knowledge.hints)."""

if TYPE_CHECKING:
    from signet.transcript import Turn

log = logging.getLogger(__name__)

NOT_EXTRACTED = ("pipeline", "document", "consolidation")
"""Memory sources no extraction job is queued for: the pipeline's own facts, document chunks,
the merges consolidation writes (signet.ops.consolidation: their sources were extracted)."""


class Pipeline:
    """The pipeline of one runtime: provider, worker, and the status snapshot.

    Built, it hooks itself into the memory service's remember path (entity linking, queueing
    extraction inside the write's transaction)."""

    def __init__(self, settings: PipelineSettings, db: Database, service: MemoryService) -> None:
        self.db = db
        self.settings = settings
        self.supply = LlmSupply(settings.extraction, settings.budgets, db)
        """The provider, its budget and health; swapped live on an agent.yaml change (:meth:`reload`)."""
        self.llm = self.supply.llm
        """The one LLM every caller uses (never None: with no provider its calls raise LlmUnavailable)."""
        self.worker = Worker(
            Processor(service, self.settings, self.llm),
            self.settings,
            db,
            self.static_wait_reason(),
            blocked=self.supply.blocked,
            on_unavailable=self.supply.mark_down,
        )
        self.supply.on_change.append(self.worker.kick)
        self.hint_filler = HintFiller(db, settings.hints)
        """Template hints for memories that have none (stored while hints were off, imported, edited)."""
        service.prepare_hooks.append(self.prepare_remember)
        service.on_remember_tx.append(self.on_remember)

    @property
    def provider(self) -> LlmProvider:
        return self.supply.provider

    @property
    def provider_error(self) -> str | None:
        return self.supply.provider_error

    def static_wait_reason(self) -> str | None:
        """Why no worker runs at all, from settings only a restart changes; None when they run."""
        s = self.settings
        if not s.enabled:
            return "the pipeline is disabled (memory.pipelineV2.enabled: false)"
        if s.mutations_frozen:
            return "mutations are frozen (memory.pipelineV2.mutationsFrozen): jobs wait, nothing is extracted"
        if s.workers == 0:
            return "no workers (memory.pipelineV2.workers: 0)"
        return None

    def wait_reason(self) -> str | None:
        """Why LLM jobs do not run now (as above, or no provider, an unreachable one, a spent
        budget: :meth:`LlmSupply.blocked`); None when they run."""
        static = self.static_wait_reason()
        if static is not None:
            return static
        gate = self.supply.blocked()
        return gate.reason if gate is not None else None

    def reload(self, extraction: ExtractionSettings, budgets: dict[str, LlmBudget]) -> bool:
        """A changed agent.yaml: the new provider and budgets apply from the next call, and the
        workers look again at once, so waiting jobs drain without a restart."""
        self.settings.extraction = extraction  # diagnostics and status read the settings too
        self.settings.budgets = budgets
        return self.supply.reload(extraction, budgets)

    # -- hooks -----------------------------------------------------------------------------
    def prepare_remember(self, mem: dict[str, Any]) -> None:
        """Before the write is queued, on the caller's thread: the names the entity linker
        will look up (pure work kept off the writer thread)."""
        if self.settings.graph.enabled:
            mem[LINK_NAMES] = linkable_names(mem["content"])
            if not self.llm_builds_graph():
                mem[MENTIONS] = extract_mentions(mem["content"], mem.get("who"))
        if self.settings.hints.enabled:
            mentions = mem.get(MENTIONS)
            if mentions is None:
                mentions = extract_mentions(mem["content"], mem.get("who"))
            mem[HINTS] = hints.templates(mem["content"], mem.get("who"), mentions, limit=self.settings.hints.max)

    def llm_builds_graph(self) -> bool:
        """Whether an LLM builds the knowledge graph (extraction on and a provider set): then
        the deterministic extractor stays out of it, so the graph is one builder's, not two
        builders' counts of the same names (docs/recall.md#the-knowledge-graph)."""
        return self.settings.enabled and self.settings.extraction.provider != "none" and self.provider is not None

    def on_remember(self, conn: Connection, mem: dict[str, Any]) -> None:
        """Inside the remember transaction: link entities, write the template hints (computed
        before, on the caller's thread), queue extraction (never for the pipeline's own facts,
        which would loop, nor for document chunks: a document is stored as it is written, chunk
        by chunk, and is searchable without an LLM reading it)."""
        if self.settings.graph.enabled:
            agent = mem.get("agent_id") or "default"
            mentions, seq = mem.get(MENTIONS) or [], int(mem["seq"])
            knowledge.record(conn, seq, agent, mentions)
            linked = {m.canonical for m in mentions}  # record() linked these already
            graph.inline_link(conn, seq, mem["content"], agent, mem.get(LINK_NAMES), skip=linked)
        if mem.get(HINTS):
            hints.write(conn, int(mem["seq"]), mem[HINTS], "template")
        if self.settings.enabled and mem.get("source_type") not in NOT_EXTRACTED:
            queue.enqueue(conn, "extract", memory_id=mem["id"], max_attempts=self.settings.max_attempts)
            if self.llm_hints():
                queue.enqueue(conn, "hints", memory_id=mem["id"], max_attempts=self.settings.max_attempts)
            self.worker.notify()

    def llm_hints(self) -> bool:
        """Whether a remembered memory also gets an LLM ``hints`` job (signet.pipeline.hints):
        hints on, their LLM part on, a provider configured (with ``none`` the job could only
        wait), and not in shadow mode (which writes nothing an LLM proposed)."""
        h = self.settings.hints
        return h.enabled and h.llm and self.settings.extraction.provider != "none" and not self.settings.shadow_mode

    def summarize(self, turns: list[Turn]) -> str | None:
        """The handoff summarizer (HookService.summarizer) on the configured provider. With
        ``provider: none`` it is None at once (the last-exchanges handoff stays, nothing to say);
        while a configured provider cannot be called it raises :class:`LlmUnavailable` without
        calling it, which the hook service reports once."""
        if self.settings.extraction.provider == "none":
            return None
        gate = self.supply.blocked()
        if gate is not None:
            raise LlmUnavailable(gate.reason)
        text = "\n".join(f"{t.role}: {t.content}" for t in turns)
        out = self.llm.complete(render("summary", text=cap_input(text)), purpose="summary")
        return strip_think(out) or None

    # -- lifecycle -------------------------------------------------------------------------
    def summarizer(self) -> Callable[[list[Turn]], str | None] | None:
        """The handoff summarizer for the hook service (it waits out a missing provider itself)."""
        if self.settings.summarize_handoff and self.static_wait_reason() is None:
            return self.summarize
        return None

    def start(self) -> None:
        self.supply.load()
        self.worker.start()
        self.hint_filler.start()

    def stop(self) -> None:
        self.hint_filler.stop()
        self.worker.stop()

    # -- status ----------------------------------------------------------------------------
    def health(self) -> tuple[bool, str | None]:
        return self.supply.health()

    def brief(self) -> dict[str, Any]:
        """The LLM part of ``/api/status``: provider, state, why jobs wait, the budget's use."""
        full = self.status()
        q = full["queue"]
        budget = full["provider"]["budget"]
        return {
            "provider": full["provider"]["name"],
            "model": full["provider"]["model"],
            "state": full["state"],
            "reason": full["reason"],
            "waiting_for": full["waiting_for"],
            "waiting_jobs": q["waiting"],
            "dead_jobs": q["dead"],
            "budget": budget if budget is not None and budget["limited"] else None,
        }

    def status(self) -> dict[str, Any]:
        s = self.settings
        stats = self.db.read(queue.stats)
        static = self.static_wait_reason()
        gate = self.supply.blocked() if static is None else None
        provider = self.supply.status(probe=s.enabled)
        worker = self.worker.snapshot()
        waiting = static or (gate.reason if gate is not None else None)
        if not s.enabled:
            state = "disabled"
        elif waiting is not None:
            state = "waiting"
        elif worker["backoff_s"] > 0:
            state = "backoff"
            waiting = (
                f"backing off {worker['backoff_s']:.1f}s after {worker['consecutive_failures']} failures: "
                f"{worker['last_error']}"
            )
        else:
            state = "running"
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
            "waiting_for": gate.status if gate is not None else None,
            "provider": provider,
            "queue": stats,
            "worker": worker,
        }
