"""The repair gate: may this repair run now, for this caller? (spec 001, "Repair actions").

Every repair action asks here first, whoever calls it: an operator over HTTP, ``signet doctor
--fix``, or the maintenance worker. In order:

1. ``autonomous.frozen`` refuses every repair, whoever asks (the hard stop);
2. an agent-role caller needs ``autonomous.enabled`` (operators and the worker do not);
3. a per-action cooldown (the worker and agents: a loop cannot hammer one action) and an
   hourly budget (everyone), over a sliding hour. The worker (``system``), operators and agents
   count in separate buckets, so an operator's manual repairs never starve the worker's nor the
   other way round. An operator's own call has no cooldown: a person asked for it now.

A refusal says when to come back: ``retry_after`` is the whole number of seconds until the
cooldown ends and a slot of the budget frees, whichever is later (the HTTP answer's
``Retry-After``). Pure and thread-safe: no I/O, one lock, an injectable clock; the audit trail
is written by the caller (signet.ops.repairs).
"""

from __future__ import annotations

import math
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from signet.config import AutonomousSettings, RepairSettings
from signet.errors import Forbidden, RateLimited, SignetError

ActorType = Literal["operator", "agent", "system"]

HOUR_S = 3600.0

FTS_HOURLY_BUDGET = 5
"""A keyword index rebuild holds the write lock for the whole table: at most 5 an hour,
whatever ``reembedHourlyBudget`` says (the spec's cap)."""

ACTIONS: dict[str, str] = {
    "release-leases": "requeue",
    "requeue-dead": "requeue",
    "retention-sweep": "requeue",
    "clean-orphans": "requeue",
    "re-embed": "reembed",
    "check-fts": "reembed",
    "deduplicate": "dedup",
}
"""Every gated action and the ``repair.*`` settings it is held to (spec: requeue, reembed, dedup)."""


@dataclass(frozen=True)
class Limits:
    cooldown_s: float
    hourly_budget: int


def limits_for(action: str, settings: RepairSettings) -> Limits:
    kind = ACTIONS[action]
    if kind == "requeue":
        return Limits(settings.requeue_cooldown_ms / 1000, settings.requeue_hourly_budget)
    if kind == "dedup":
        return Limits(settings.dedup_cooldown_ms / 1000, settings.dedup_hourly_budget)
    budget = settings.reembed_hourly_budget
    if action == "check-fts":
        budget = min(budget, FTS_HOURLY_BUDGET)
    return Limits(settings.reembed_cooldown_ms / 1000, budget)


@dataclass(frozen=True)
class Decision:
    allowed: bool
    code: str | None = None
    """Why not: ``repairs_frozen``, ``autonomous_disabled``, ``cooldown`` or ``hourly_budget``."""
    message: str | None = None
    retry_after: int | None = None
    """Whole seconds until the action may run again (None when waiting will not help)."""

    def error(self) -> SignetError:
        """The refusal as the API answers it (429 with Retry-After, 503 frozen, 403 disabled)."""
        message = self.message or "repair refused"
        if self.code == "repairs_frozen":
            return RepairsFrozen(message)
        if self.code == "autonomous_disabled":
            return Forbidden(message, code="autonomous_disabled", reason="autonomous_disabled")
        return RateLimited(message, retry_after=self.retry_after or 1, reason=self.code)


class RepairsFrozen(SignetError):
    """``autonomous.frozen`` is set: no repair runs until it is lifted and the daemon restarted."""

    code = "repairs_frozen"
    status = 503


ALLOWED = Decision(True)


class RepairGate:
    def __init__(
        self,
        autonomous: AutonomousSettings,
        repair: RepairSettings,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.autonomous = autonomous
        self.repair = repair
        self.clock = clock
        self._lock = threading.Lock()
        self._runs: dict[tuple[ActorType, str], deque[float]] = {}
        """(kind of caller, action) -> when it was admitted, oldest first, within the last hour."""

    def check(self, action: str, actor_type: ActorType) -> Decision:
        """Whether ``action`` may run now for ``actor_type`` (nothing is recorded)."""
        with self._lock:
            return self._decide(action, actor_type, self.clock())

    def admit(self, action: str, actor_type: ActorType) -> Decision:
        """Check and, when allowed, count the run, in one step: two callers racing for the last
        slot of a budget cannot both get it."""
        with self._lock:
            now = self.clock()
            decision = self._decide(action, actor_type, now)
            if decision.allowed:
                self._runs.setdefault((actor_type, action), deque()).append(now)
            return decision

    def _decide(self, action: str, actor_type: ActorType, now: float) -> Decision:
        if action not in ACTIONS:
            raise ValueError(f"unknown repair action {action!r}")
        if self.autonomous.frozen:
            return Decision(
                False,
                "repairs_frozen",
                "repairs are frozen (memory.pipelineV2.autonomous.frozen): no repair runs, whoever asks; "
                "lift it in agent.yaml and restart the daemon",
            )
        if actor_type == "agent" and not self.autonomous.enabled:
            return Decision(
                False,
                "autonomous_disabled",
                "agents may not trigger repairs while memory.pipelineV2.autonomous.enabled is false",
            )
        limits = limits_for(action, self.repair)
        runs = self._runs.get((actor_type, action))
        if not runs:
            return ALLOWED
        while runs and now - runs[0] >= HOUR_S:
            runs.popleft()
        waits: list[tuple[float, str]] = []
        if actor_type != "operator" and runs and now - runs[-1] < limits.cooldown_s:
            waits.append((runs[-1] + limits.cooldown_s - now, "cooldown"))
        if len(runs) >= limits.hourly_budget:
            # the run that must leave the window for one slot to free
            oldest = runs[len(runs) - limits.hourly_budget]
            waits.append((oldest + HOUR_S - now, "hourly_budget"))
        if not waits:
            return ALLOWED
        wait, code = max(waits)
        retry = max(1, math.ceil(wait))
        if code == "cooldown":
            message = f"{action} ran {now - runs[-1]:.0f}s ago; its cooldown is {limits.cooldown_s:.0f}s"
        else:
            message = f"{action} has used its budget of {limits.hourly_budget} runs an hour"
        return Decision(False, code, f"{message}; retry in {retry}s", retry)

    def snapshot(self) -> dict[str, Any]:
        """Per bucket and action: runs in the last hour, the budget, and when the next may run."""
        with self._lock:
            now = self.clock()
            out: dict[str, Any] = {}
            for (bucket, action), runs in sorted(self._runs.items()):
                while runs and now - runs[0] >= HOUR_S:
                    runs.popleft()
                limits = limits_for(action, self.repair)
                decision = self._decide(action, bucket, now)
                out.setdefault(bucket, {})[action] = {
                    "runs_last_hour": len(runs),
                    "hourly_budget": limits.hourly_budget,
                    "cooldown_s": 0.0 if bucket == "operator" else limits.cooldown_s,
                    "next_in_s": decision.retry_after or 0,
                }
            return out
