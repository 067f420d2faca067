"""Cost of a rate-limit check, one daemon's vs. shared by a store's daemons:
``python -m signet.bench.ratelimit postgresql://user@host/db [N]``.

The same ``check(actor, operation)`` in the same run: the in-memory limiter (one daemon's
window) and the shared one (signet.auth.ratelimit.SharedRateLimiter: one call of
``signet_rate_hit`` on a pooled connection of the given PostgreSQL database), over 50 actors
so the checks are admitted, as most are. The password is read from ``SIGNET_PG_PASSWORD``.
Figures are in docs/team.md.
"""

from __future__ import annotations

import statistics
import sys
import time

from signet.auth.ratelimit import RateLimiter, SharedRateLimiter
from signet.config import RateLimitSettings
from signet.store.pg_url import resolve
from signet.store.postgres import PostgresDatabase

ACTORS = 50


def timings(limiter: RateLimiter | SharedRateLimiter, n: int) -> list[float]:
    out = []
    for i in range(n + 100):  # the first 100 warm the pool and the plan
        t = time.perf_counter()
        limiter.check(f"actor-{i % ACTORS}", "recall")
        if i >= 100:
            out.append((time.perf_counter() - t) * 1000)
    return out


def main() -> None:
    if len(sys.argv) < 2:
        sys.exit("usage: python -m signet.bench.ratelimit postgresql://user@host/db [N]")
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 5000
    settings = RateLimitSettings.model_validate({"windowSeconds": 60, "default": 10**9, "operations": {}})
    with PostgresDatabase(resolve(sys.argv[1], "env:SIGNET_PG_PASSWORD")).open() as db:
        arms: dict[str, RateLimiter | SharedRateLimiter] = {
            "in memory (one daemon)": RateLimiter(settings),
            "shared (PostgreSQL)": SharedRateLimiter(settings, db),
        }
        for name, limiter in arms.items():
            ms = sorted(timings(limiter, n))
            p95 = ms[int(0.95 * len(ms)) - 1]
            print(f"{name:24s} n={n}  p50 {statistics.median(ms):.3f} ms  p95 {p95:.3f} ms")


if __name__ == "__main__":
    main()
