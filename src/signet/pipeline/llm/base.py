"""The one LLM interface, its errors, and the call recorder.

Providers are plugins (``register_llm_providers``); each is a factory
``factory(ExtractionSettings) -> LlmProvider``. Callers never talk to a provider directly:
they go through :class:`RecordingLlm`, which applies the per-call timeout and records an
outcome (success / failure / timeout, latency) per call in ``llm_calls`` and in a ring
buffer for status and diagnostics. There is no fallback to another model: a failing
provider fails the call.

The recorder also holds the provider's :class:`~signet.pipeline.llm.budget.Budget`: a call
the budget refuses raises :class:`LlmBudgetExceeded` *before* the provider is asked, so the
N+1th call of a window is never made. :class:`LlmUnavailable` (and so a refusal) means "wait
and try later", never "this job failed": the workers park such jobs as
``waiting_for_provider`` / ``waiting_for_budget`` instead of spending their attempts. The
provider can be swapped while running (:meth:`RecordingLlm.swap`, on an agent.yaml change), so
everyone holding the recorder calls the new one.
"""

from __future__ import annotations

import collections
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from signet.config import ExtractionSettings
from signet.store.records import now_iso

KEEP_CALLS = 10_000
PRUNE_EVERY = 500


class LlmError(Exception):
    """A provider call that did not produce text. ``kind`` is the recorded outcome."""

    kind = "failure"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class LlmTimeout(LlmError):
    kind = "timeout"


class LlmUnavailable(LlmError):
    """Nothing answered (connection refused, DNS, the CLI is not installed) or no provider is
    configured: the caller waits for the provider instead of counting a failed attempt."""


class LlmBudgetExceeded(LlmUnavailable):
    """The provider's budget does not allow this call now; it was not made.

    ``retry_at`` (epoch seconds) is when the window that refused it ends, None when only a
    concurrency slot was missing."""

    kind = "refused"

    def __init__(self, message: str, retry_at: float | None = None) -> None:
        super().__init__(message)
        self.retry_at = retry_at


@dataclass(frozen=True)
class Usage:
    """Tokens one call used, as the provider reported them."""

    input_tokens: int
    output_tokens: int

    @property
    def total(self) -> int:
        return self.input_tokens + self.output_tokens


def estimate_tokens(text: str) -> int:
    """About four characters a token: for budgets when a provider reports no usage."""
    return max(1, len(text) // 4)


class Budget(Protocol):
    """The gate a call passes (signet.pipeline.llm.budget.Budget, which imports this module's
    errors: a protocol here keeps the two modules from importing each other)."""

    def acquire(self, estimate: int, *, wait: float = 0.0) -> None: ...
    def release(self, tokens: int) -> None: ...


class LlmProvider(Protocol):
    name: str
    model: str

    def complete(self, prompt: str, *, system: str | None = None, timeout: float | None = None) -> str:
        """The model's text answer to one prompt."""
        ...

    def health(self) -> tuple[bool, str | None]:
        """(reachable, reason when not): a cheap probe, no generation."""
        ...


class UsageReporting(Protocol):
    """A provider that can say how many tokens a call used (optional: budgets estimate otherwise)."""

    def complete_with_usage(
        self, prompt: str, *, system: str | None = None, timeout: float | None = None
    ) -> tuple[str, Usage | None]: ...


@dataclass(frozen=True)
class CallOutcome:
    provider: str
    model: str
    purpose: str
    outcome: str
    latency_ms: float
    error: str | None
    at: str


class RecordingLlm:
    """Wraps a provider: per-call timeout, one outcome record per call."""

    def __init__(
        self,
        provider: LlmProvider,
        settings: ExtractionSettings,
        *,
        db: Any = None,
        ring_size: int = 100,
        budget: Budget | None = None,
    ) -> None:
        self.provider = provider
        self.settings = settings
        self.budget = budget
        """Checked before every call; None: no limits."""
        self.db = db
        self.recent: collections.deque[CallOutcome] = collections.deque(maxlen=ring_size)
        self._lock = threading.Lock()
        self._recorded = 0
        self.last_success: float | None = None
        """``time.monotonic()`` of the last successful call (a live answer beats a stale probe)."""
        self.listeners: list[Callable[[CallOutcome], None]] = []
        """Told of every call's outcome (analytics, telemetry: signet.ops.observe); must not raise."""

    @property
    def name(self) -> str:
        return self.provider.name

    @property
    def model(self) -> str:
        return self.provider.model

    def swap(self, provider: LlmProvider, settings: ExtractionSettings, budget: Budget | None) -> None:
        """Use another provider (or the same one with new settings) from the next call on;
        a call already under way finishes on the old one (which is therefore not closed here)."""
        with self._lock:
            self.provider, self.settings, self.budget = provider, settings, budget
            self.last_success = None

    def complete(self, prompt: str, *, purpose: str, system: str | None = None, job_id: str | None = None) -> str:
        """The provider's answer; :class:`LlmBudgetExceeded` (no call made) when the budget refuses."""
        with self._lock:
            provider, settings, budget = self.provider, self.settings, self.budget
        estimate = estimate_tokens(prompt) + estimate_tokens(system or "")
        if budget is not None:
            budget.acquire(estimate, wait=settings.timeout)
        started = time.perf_counter()
        error: str | None = None
        outcome = "success"
        tokens = estimate
        try:
            with_usage = getattr(provider, "complete_with_usage", None)
            if callable(with_usage):
                text, usage = with_usage(prompt, system=system, timeout=settings.timeout)
            else:
                text, usage = provider.complete(prompt, system=system, timeout=settings.timeout), None
            tokens = usage.total if usage is not None else estimate + estimate_tokens(text)
            return str(text)
        except LlmError as exc:
            outcome, error = exc.kind, exc.message
            raise
        finally:
            if budget is not None:
                budget.release(tokens)
            self._record(provider, purpose, outcome, (time.perf_counter() - started) * 1000, error, job_id)

    def _record(
        self,
        provider: LlmProvider,
        purpose: str,
        outcome: str,
        latency_ms: float,
        error: str | None,
        job_id: str | None,
    ) -> None:
        rec = CallOutcome(provider.name, provider.model, purpose, outcome, round(latency_ms, 3), error, now_iso())
        for fn in self.listeners:
            fn(rec)
        with self._lock:
            self.recent.append(rec)
            if outcome == "success":
                self.last_success = time.monotonic()
            self._recorded += 1
            prune = self._recorded % PRUNE_EVERY == 0
        if self.db is not None and prune:
            # The call log is for diagnostics, not an archive: keep the newest KEEP_CALLS rows.
            self.db.submit(
                lambda c: c.execute(
                    "DELETE FROM llm_calls WHERE id <= (SELECT MAX(id) FROM llm_calls) - ?", (KEEP_CALLS,)
                )
            )
        if self.db is not None:
            self.db.submit(
                lambda c: c.execute(
                    "INSERT INTO llm_calls(provider, model, purpose, outcome, latency_ms, error, job_id, created_at)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    (rec.provider, rec.model, rec.purpose, rec.outcome, rec.latency_ms, rec.error, job_id, rec.at),
                )
            )

    def summary(self) -> dict[str, Any]:
        with self._lock:
            recent = list(self.recent)
        counts = collections.Counter(r.outcome for r in recent)
        lat = sorted(r.latency_ms for r in recent if r.outcome == "success")
        last = recent[-1] if recent else None
        return {
            "calls": len(recent),
            "outcomes": dict(counts),
            "success_rate": round(counts["success"] / len(recent), 4) if recent else None,
            "p50_latency_ms": lat[len(lat) // 2] if lat else None,
            "last_outcome": last.outcome if last else None,
            "last_error": next((r.error for r in reversed(recent) if r.error), None),
            "last_call_at": last.at if last else None,
        }
