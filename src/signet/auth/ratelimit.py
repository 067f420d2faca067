"""Rate limits keyed by ``actor:operation``: in memory for one daemon, or counted in the store
for several daemons sharing a PostgreSQL database (docs/team.md)."""

from __future__ import annotations

import hashlib
import math
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Protocol, runtime_checkable

from signet.config import RateLimitSettings


class _Limits:
    """What both limiters share: the settings, their clock (a test moves it) and a lock."""

    def __init__(self, settings: RateLimitSettings, clock: Callable[[], float]) -> None:
        self.settings = settings
        self.clock = clock
        self._lock = threading.Lock()

    def limit_for(self, operation: str) -> int:
        return self.settings.operations.get(operation, self.settings.default)


class RateLimiter(_Limits):
    """One daemon's sliding window per key, in memory."""

    def __init__(self, settings: RateLimitSettings, clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__(settings, clock)
        self._hits: dict[str, deque[float]] = {}

    def check(self, actor: str, operation: str) -> int:
        """0 when allowed (and counted); otherwise the whole seconds until a slot frees."""
        now = self.clock()
        window = self.settings.window_s
        limit = self.limit_for(operation)
        key = f"{actor}:{operation}"
        with self._lock:
            hits = self._hits.setdefault(key, deque())
            while hits and hits[0] <= now - window:
                hits.popleft()
            if len(hits) >= limit:
                return max(1, math.ceil(hits[0] + window - now))
            hits.append(now)
            if len(self._hits) > 10_000:  # drop idle keys so a flood of actors cannot grow memory
                for k in [k for k, v in self._hits.items() if not v or v[-1] <= now - window]:
                    del self._hits[k]
            return 0


@runtime_checkable
class HitCounter(Protocol):
    """What the shared limiter needs of the store (signet.store.postgres.PostgresDatabase)."""

    def rate_hit(self, key: str, now: float, window_s: float, limit: int) -> float | None: ...

    def forget_rate_hits(self, before: float) -> int: ...


def _key(actor: str, operation: str) -> str:
    """The stored key: a digest, so any actor a token or header can name (NUL, a lone
    surrogate from a token's JSON, 200 characters) is a fixed, valid text value."""
    return hashlib.sha256(f"{actor}:{operation}".encode("utf-8", "surrogatepass")).hexdigest()


PRUNE_EVERY = 1000
"""Checks between two deletes of idle keys' hits (per daemon)."""
PRUNE_AGE_S = 86_400.0
"""Hits older than the longest window a daemon may be configured with (``windowSeconds``)."""


class SharedRateLimiter(_Limits):
    """The same sliding-window limits as :class:`RateLimiter`, counted in the store, so N
    daemons behind one proxy allow an actor the limit, not N times it. One call per limited
    request (signet.store.postgres.PostgresDatabase.rate_hit counts and admits atomically)."""

    def __init__(self, settings: RateLimitSettings, store: HitCounter, clock: Callable[[], float] = time.time) -> None:
        super().__init__(settings, clock)
        self.store = store
        self._checks = 0

    def check(self, actor: str, operation: str) -> int:
        """0 when allowed (and counted); otherwise the whole seconds until a slot frees."""
        now = self.clock()
        window = self.settings.window_s
        oldest = self.store.rate_hit(_key(actor, operation), now, window, self.limit_for(operation))
        with self._lock:
            self._checks += 1
            prune = self._checks % PRUNE_EVERY == 0
        if prune:
            self.store.forget_rate_hits(now - PRUNE_AGE_S)
        return 0 if oldest is None else max(1, math.ceil(oldest + window - now))
