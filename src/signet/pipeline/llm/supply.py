"""Which LLM the pipeline has right now, whether a call may be made, and changing it live.

One :class:`LlmSupply` per runtime holds the configured provider behind one
:class:`~signet.pipeline.llm.base.RecordingLlm` (the object every LLM caller keeps), a
:class:`~signet.pipeline.llm.budget.Budget` per provider name, and a cached health probe.
:meth:`LlmSupply.blocked` is the question the workers ask before they lease a job: no provider
configured, the provider unreachable, or its budget spent each answer "wait", with the reason
a user reads in status and the queue status the jobs wait in. :meth:`LlmSupply.reload` applies
a changed ``memory.pipelineV2.extraction`` / ``budgets`` (agent.yaml edited while the daemon
runs) by swapping the provider inside the same recorder, so waiting jobs drain without a
restart.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from signet import plugins
from signet.config import ExtractionSettings, LlmBudget
from signet.pipeline import queue
from signet.pipeline.llm.base import LlmProvider, RecordingLlm
from signet.pipeline.llm.budget import Budget
from signet.pipeline.llm.http import HOW_TO_CONFIGURE, NoProvider

log = logging.getLogger(__name__)

HEALTH_TTL = 15.0
"""Seconds a probe's answer is trusted; an unreachable provider is asked again at most this
long after its last failed probe."""
DOWN_FIRST_S = 1.0
"""After the first failed probe the provider is asked again this soon, then twice as long after
each further failure, up to :data:`HEALTH_TTL`: a brief outage (an Ollama restarting, a laptop
waking) is over for the pipeline within a second or two of the provider answering, while a long
one costs one probe per :data:`HEALTH_TTL`."""
NONE_RECHECK_S = 5.0
"""With no provider, how often new jobs are parked (a remember, a reload wake the workers at once)."""
BUDGET_RECHECK_S = 60.0
"""The longest a worker sleeps on a spent budget before looking again (limits may be raised)."""


@dataclass(frozen=True)
class Blocked:
    """Why LLM jobs cannot run now: the queue status they wait in, the reason, when to look again."""

    status: str
    reason: str
    retry_s: float


class LlmSupply:
    def __init__(self, extraction: ExtractionSettings, budgets: dict[str, LlmBudget], db: Any) -> None:
        self.db = db
        self.extraction = extraction
        self.budget_limits = dict(budgets)
        self._budgets: dict[str, Budget] = {}
        self._lock = threading.Lock()
        self._health: tuple[float, bool, str | None] | None = None
        self._down_streak = 0
        """Failed probes (or calls) in a row: how long a "down" answer is trusted (:meth:`_ttl`)."""
        self._said_down = False
        """The last probe found the provider down and the log has said so (once per outage)."""
        self._loaded = False
        provider, self.provider_error = self._build(extraction)
        self.llm = RecordingLlm(provider, extraction, db=db, budget=self._budget(extraction.provider))
        self.on_change: list[Callable[[], None]] = []
        """Told after a reload changed the provider or its budget (the worker wakes up)."""
        self.reloads = 0

    # -- building ----------------------------------------------------------------------------
    @staticmethod
    def _build(ext: ExtractionSettings) -> tuple[LlmProvider, str | None]:
        factories = plugins.llm_providers()
        if ext.provider not in factories:
            return NoProvider(ext), f"unknown LLM provider {ext.provider!r} (installed: {', '.join(sorted(factories))})"
        provider: LlmProvider = plugins.resolve(factories[ext.provider]).from_settings(ext)
        if not isinstance(getattr(provider, "model", None), str):
            # A plugin's provider that names no model (the protocol asks for one, plugins forget):
            # the configured one, else its class default, so status and call records can say it.
            default = getattr(type(provider), "default_model", None)
            provider.model = ext.model or (default if isinstance(default, str) else "") or ext.provider
        return provider, None

    def _budget(self, name: str) -> Budget:
        with self._lock:
            budget = self._budgets.get(name)
            if budget is None:
                budget = self._budgets[name] = Budget(name, self.budget_limits.get(name), self.db)
                if self._loaded:
                    budget.load()
            return budget

    @property
    def provider(self) -> LlmProvider:
        return self.llm.provider

    @property
    def budget(self) -> Budget | None:
        """The current provider's budget (the one its calls pass through)."""
        with self._lock:
            return self._budgets.get(self.extraction.provider)

    def load(self) -> None:
        """Read today's use into every budget (the database is open now)."""
        with self._lock:
            self._loaded = True
            budgets = list(self._budgets.values())
        for b in budgets:
            b.load()

    def reload(self, extraction: ExtractionSettings, budgets: dict[str, LlmBudget]) -> bool:
        """Apply changed settings; True when anything changed. The provider is rebuilt only
        when its own settings changed; calls under way finish on the old one."""
        if extraction == self.extraction and budgets == self.budget_limits:
            return False
        with self._lock:
            self.budget_limits = dict(budgets)
            for name, b in self._budgets.items():
                b.set_limits(self.budget_limits.get(name))
        if extraction != self.extraction:
            provider, error = self._build(extraction)
            self.extraction, self.provider_error = extraction, error
            self.llm.swap(provider, extraction, self._budget(extraction.provider))
            with self._lock:
                self._health, self._down_streak = None, 0
            log.info("pipeline: LLM provider is now %s%s", extraction.provider, f" ({error})" if error else "")
        self.reloads += 1
        for fn in self.on_change:
            fn()
        return True

    # -- may a call be made ------------------------------------------------------------------
    def _ttl(self, ok: bool) -> float:
        """How long a probe's answer stands: :data:`HEALTH_TTL` for "up"; for "down",
        :data:`DOWN_FIRST_S` doubled per failure in a row, capped at :data:`HEALTH_TTL`."""
        if ok:
            return HEALTH_TTL
        return min(HEALTH_TTL, DOWN_FIRST_S * 2.0 ** max(self._down_streak - 1, 0))

    def health(self) -> tuple[bool, str | None]:
        """The provider's probe, cached (:meth:`_ttl`; a live answer since wins)."""
        if self.provider_error:
            return False, self.provider_error
        with self._lock:
            cached = self._health
            ttl = self._ttl(cached[1]) if cached is not None else 0.0
        if cached is not None and time.monotonic() - cached[0] < ttl:
            last_ok = self.llm.last_success
            if not cached[1] and last_ok is not None and last_ok > cached[0]:
                return True, None  # it answered since the failed probe
            return cached[1], cached[2]
        provider = self.provider
        ok, why = provider.health()
        with self._lock:
            if provider is self.provider:  # not a probe of a provider swapped out meanwhile
                self._health = (time.monotonic(), ok, why)
                self._down_streak = 0 if ok else self._down_streak + 1
                said, self._said_down = self._said_down, not ok
            else:
                said = True
        if not ok and not said and self.extraction.provider != "none":  # none is a choice, not an outage
            # Once per outage, not per job or per probe: a daemon whose LLM is away says so in
            # its log, then stays quiet until it has answered again (and gone away again).
            log.warning(
                "LLM did not answer: %s is not reachable (%s); LLM jobs wait and run when it answers",
                self.extraction.provider,
                why,
            )
        return ok, why

    def mark_down(self, why: str) -> None:
        """A call found the provider gone: trust that over the last probe for a while."""
        with self._lock:
            self._health = (time.monotonic(), False, why)
            self._down_streak += 1

    def blocked(self) -> Blocked | None:
        """None when an LLM call may be made now; else why not, and the status jobs wait in."""
        name = self.extraction.provider
        if self.provider_error:
            return Blocked(
                queue.WAITING_FOR_PROVIDER,
                f"waiting for a provider: {self.provider_error}; {HOW_TO_CONFIGURE}",
                HEALTH_TTL,
            )
        if name == "none":
            return Blocked(
                queue.WAITING_FOR_PROVIDER,
                f"waiting for a provider: no LLM provider is configured "
                f"(memory.pipelineV2.extraction.provider: none); {HOW_TO_CONFIGURE}",
                NONE_RECHECK_S,
            )
        ok, why = self.health()
        if not ok:
            with self._lock:
                again = self._ttl(False)
            return Blocked(
                queue.WAITING_FOR_PROVIDER,
                f"waiting for the provider: {name} is not reachable ({why}); jobs wait and run when it answers "
                f"(asked again within {HEALTH_TTL:g} s), or fix memory.pipelineV2.extraction in agent.yaml",
                again,
            )
        budget = self.budget
        refusal = budget.check() if budget is not None else None
        if refusal is not None:
            left = (refusal.retry_at - time.time()) if refusal.retry_at else BUDGET_RECHECK_S
            return Blocked(
                queue.WAITING_FOR_BUDGET,
                f"waiting for the budget: {refusal.reason}",
                min(max(left, 0.05), BUDGET_RECHECK_S),
            )
        return None

    # -- status ------------------------------------------------------------------------------
    def status(self, *, probe: bool = True) -> dict[str, Any]:
        ext = self.extraction
        provider = self.provider
        healthy, why = self.health() if probe else (None, None)
        return {
            "name": ext.provider,
            "model": provider.model or None,
            "endpoint": getattr(provider, "endpoint", None),
            "command": getattr(provider, "command", None),
            "timeout_s": ext.timeout,
            "healthy": healthy,
            "error": why,
            "calls": self.llm.summary(),
            "budget": self.budget.snapshot() if self.budget is not None else None,
            "reloads": self.reloads,
        }

    def close(self) -> None:
        close = getattr(self.provider, "close", None)
        if callable(close):
            close()
