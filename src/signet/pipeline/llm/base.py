"""The one LLM interface, its errors, and the call recorder.

Providers are plugins (``register_llm_providers``); each is a factory
``factory(ExtractionSettings) -> LlmProvider``. Callers never talk to a provider directly:
they go through :class:`RecordingLlm`, which applies the per-call timeout and records an
outcome (success / failure / timeout, latency) per call in ``llm_calls`` and in a ring
buffer for status and diagnostics. There is no fallback to another model: a failing
provider fails the call.
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
    """Nothing answered (connection refused, DNS) or no provider is configured."""


class LlmProvider(Protocol):
    name: str
    model: str

    def complete(self, prompt: str, *, system: str | None = None, timeout: float | None = None) -> str:
        """The model's text answer to one prompt."""
        ...

    def health(self) -> tuple[bool, str | None]:
        """(reachable, reason when not): a cheap probe, no generation."""
        ...


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
        self, provider: LlmProvider, settings: ExtractionSettings, *, db: Any = None, ring_size: int = 100
    ) -> None:
        self.provider = provider
        self.settings = settings
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

    def complete(self, prompt: str, *, purpose: str, system: str | None = None, job_id: str | None = None) -> str:
        started = time.perf_counter()
        error: str | None = None
        outcome = "success"
        try:
            return self.provider.complete(prompt, system=system, timeout=self.settings.timeout)
        except LlmError as exc:
            outcome, error = exc.kind, exc.message
            raise
        finally:
            self._record(purpose, outcome, (time.perf_counter() - started) * 1000, error, job_id)

    def _record(self, purpose: str, outcome: str, latency_ms: float, error: str | None, job_id: str | None) -> None:
        rec = CallOutcome(
            self.provider.name, self.provider.model, purpose, outcome, round(latency_ms, 3), error, now_iso()
        )
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
