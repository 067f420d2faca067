"""One LLM provider's budget: calls and tokens per clock hour and per UTC day, and calls at once.

Runaway cost was a top complaint about the spec's Signet: a queue of thousands of jobs against
a paid API, or a harness CLI on a subscription, spends without asking. So every call asks the
budget first (:meth:`Budget.acquire`); a call over a limit is not made, and its caller gets
:class:`~signet.pipeline.llm.base.LlmBudgetExceeded` with the end of the window that refused
it. The workers then park their jobs as ``waiting_for_budget`` until then: a budget never
spends a job's attempts and never sends it to ``dead``.

Windows are clock windows (this hour, this UTC day), not sliding ones: "N calls per hour" is
then a number a user can check against the table ``llm_usage`` (one row per provider and
hour), and the budget survives a restart by reading that table (:meth:`Budget.load`).

Tokens are counted after the call (the provider's reported usage, else an estimate of four
characters a token); before the call, the tokens already used plus this prompt's estimate
must fit, so a token budget can be overrun by at most one call's answer.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from signet.config import LlmBudget
from signet.pipeline.llm.base import LlmBudgetExceeded


def hour_key(now: datetime) -> str:
    """``2026-11-25T20``: the UTC clock hour a call is counted in."""
    return now.astimezone(UTC).strftime("%Y-%m-%dT%H")


@dataclass
class Refusal:
    """Why a call may not be made now, and when (epoch seconds) the window allows it again."""

    reason: str
    retry_at: float | None


class Budget:
    """Limits and use of one provider. Thread-safe; the database writes go through ``db.submit``."""

    def __init__(
        self,
        provider: str,
        limits: LlmBudget | None = None,
        db: Any = None,
        *,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self.provider = provider
        self.clock = clock
        """The time windows are read from (a test moves it to the next hour)."""
        self.limits = limits or LlmBudget()
        self.db = db
        self._cond = threading.Condition()
        self._hour = ""
        self._day = ""
        self.hour_calls = self.hour_tokens = 0
        self.day_calls = self.day_tokens = 0
        self.in_flight = 0
        self.refused = 0
        self.last_refusal: str | None = None

    @property
    def limited(self) -> bool:
        lim = self.limits
        return any((lim.calls_per_hour, lim.calls_per_day, lim.tokens_per_hour, lim.tokens_per_day, lim.concurrency))

    def set_limits(self, limits: LlmBudget | None) -> None:
        """New limits from a reloaded agent.yaml; the use counted so far stays."""
        with self._cond:
            self.limits = limits or LlmBudget()
            self._cond.notify_all()

    def load(self) -> None:
        """This hour's and today's use from ``llm_usage`` (a restart does not reset the budget)."""
        if self.db is None:
            return
        now = self.clock()
        hour, day = hour_key(now), hour_key(now)[:10]
        rows = self.db.read(
            lambda c: c.execute(
                "SELECT hour, calls, tokens FROM llm_usage WHERE provider = ? AND hour >= ?", (self.provider, day)
            ).fetchall()
        )
        with self._cond:
            self._hour, self._day = hour, day
            self.hour_calls = sum(int(r[1]) for r in rows if r[0] == hour)
            self.hour_tokens = sum(int(r[2]) for r in rows if r[0] == hour)
            self.day_calls = sum(int(r[1]) for r in rows if r[0].startswith(day))
            self.day_tokens = sum(int(r[2]) for r in rows if r[0].startswith(day))

    def _roll(self, now: datetime) -> None:
        hour = hour_key(now)
        if hour != self._hour:
            self._hour, self.hour_calls, self.hour_tokens = hour, 0, 0
        if hour[:10] != self._day:
            self._day, self.day_calls, self.day_tokens = hour[:10], 0, 0

    def _window_refusal(self, estimate: int, now: datetime) -> Refusal | None:
        lim = self.limits
        hour_end = now.replace(minute=0, second=0, microsecond=0) + timedelta(hours=1)
        day_end = now.replace(hour=0, minute=0, second=0, microsecond=0) + timedelta(days=1)
        checks = (
            (lim.calls_per_day, self.day_calls, 1, "calls per day", day_end),
            (lim.tokens_per_day, self.day_tokens, estimate, "tokens per day", day_end),
            (lim.calls_per_hour, self.hour_calls, 1, "calls per hour", hour_end),
            (lim.tokens_per_hour, self.hour_tokens, estimate, "tokens per hour", hour_end),
        )
        for limit, used, wanted, what, until in checks:
            if limit and used + wanted > limit:
                return Refusal(
                    f"{self.provider} budget: {used:,}/{limit:,} {what} used; the next call waits until "
                    f"{until.strftime('%Y-%m-%d %H:%M')} UTC (memory.pipelineV2.budgets.{self.provider})",
                    until.timestamp(),
                )
        return None

    def check(self, estimate: int = 1) -> Refusal | None:
        """Would a call of about ``estimate`` tokens be refused by a window now? (No slot check.)"""
        with self._cond:
            now = self.clock()
            self._roll(now)
            return self._window_refusal(estimate, now)

    def acquire(self, estimate: int, *, wait: float = 0.0) -> None:
        """Count one call about to be made, or raise :class:`LlmBudgetExceeded` (nothing counted).

        A full concurrency limit is waited out for up to ``wait`` seconds (calls finish); a
        spent window is refused at once (it ends at the top of an hour or a day)."""
        deadline = time.monotonic() + wait
        with self._cond:
            while True:
                now = self.clock()
                self._roll(now)
                refusal = self._window_refusal(estimate, now)
                if refusal is not None:
                    self._refuse(refusal, now)
                    raise LlmBudgetExceeded(refusal.reason, refusal.retry_at)
                slots = self.limits.concurrency
                if not slots or self.in_flight < slots:
                    break
                left = deadline - time.monotonic()
                if left <= 0:
                    refusal = Refusal(
                        f"{self.provider} budget: {slots} calls at once already under way "
                        f"(memory.pipelineV2.budgets.{self.provider}.concurrency)",
                        None,
                    )
                    self._refuse(refusal, now)
                    raise LlmBudgetExceeded(refusal.reason, None)
                self._cond.wait(left)
            self.in_flight += 1
            self.hour_calls += 1
            self.day_calls += 1

    def release(self, tokens: int) -> None:
        """The call is over: free its slot, count its tokens, add it to ``llm_usage``."""
        with self._cond:
            self.in_flight = max(0, self.in_flight - 1)
            now = self.clock()
            self._roll(now)
            self.hour_tokens += tokens
            self.day_tokens += tokens
            hour = self._hour
            self._cond.notify_all()
        self._persist(hour, calls=1, tokens=tokens, refused=0)

    def _refuse(self, refusal: Refusal, now: datetime) -> None:
        self.refused += 1
        self.last_refusal = refusal.reason
        self._persist(hour_key(now), calls=0, tokens=0, refused=1)

    def _persist(self, hour: str, *, calls: int, tokens: int, refused: int) -> None:
        if self.db is None:
            return
        args = (self.provider, hour, calls, tokens, refused)
        # Fire and forget: after shutdown closed the database, submit drops it (a call that
        # finished at that very moment is missing from llm_usage after a restart).
        self.db.submit(
            lambda c: c.execute(
                "INSERT INTO llm_usage(provider, hour, calls, tokens, refused) VALUES (?, ?, ?, ?, ?)"
                " ON CONFLICT(provider, hour) DO UPDATE SET calls = calls + excluded.calls,"
                " tokens = tokens + excluded.tokens, refused = refused + excluded.refused",
                args,
            )
        )

    def snapshot(self) -> dict[str, Any]:
        """Use against limits, for status: ``{"calls_per_hour": {"used": 3, "limit": 10}, …}``."""
        with self._cond:
            self._roll(self.clock())
            lim = self.limits
            return {
                "provider": self.provider,
                "limited": self.limited,
                "calls_per_hour": {"used": self.hour_calls, "limit": lim.calls_per_hour or None},
                "calls_per_day": {"used": self.day_calls, "limit": lim.calls_per_day or None},
                "tokens_per_hour": {"used": self.hour_tokens, "limit": lim.tokens_per_hour or None},
                "tokens_per_day": {"used": self.day_tokens, "limit": lim.tokens_per_day or None},
                "concurrency": {"used": self.in_flight, "limit": lim.concurrency or None},
                "refused": self.refused,
                "last_refusal": self.last_refusal,
            }
