"""A sliding-window rate limiter keyed by ``actor:operation`` (in memory, per daemon)."""

from __future__ import annotations

import math
import threading
import time
from collections import deque
from collections.abc import Callable

from signet.config import RateLimitSettings


class RateLimiter:
    def __init__(self, settings: RateLimitSettings, clock: Callable[[], float] = time.monotonic) -> None:
        self.settings = settings
        self.clock = clock
        self._hits: dict[str, deque[float]] = {}
        self._lock = threading.Lock()

    def limit_for(self, operation: str) -> int:
        return self.settings.operations.get(operation, self.settings.default)

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
