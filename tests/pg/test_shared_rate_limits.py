"""Rate limits shared by every daemon of a PostgreSQL store (signet.auth.ratelimit.SharedRateLimiter).

With N daemons behind one proxy an actor gets the limit, not N times it: two daemons' apps
on one database refuse the N+1th request whichever daemon it reaches, and limiters hammering
the same key from many threads on two stores admit exactly the limit.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from fastapi.testclient import TestClient

from signet.auth.ratelimit import SharedRateLimiter
from signet.config import RateLimitSettings
from signet.daemon.app import create_app
from signet.runtime import Runtime
from signet.store.pg_url import resolve
from signet.store.postgres import PostgresDatabase
from signet.workspace import Workspace
from tests.auth.conftest import bearer, configure, token_for
from tests.conftest import start_runtime
from tests.pg.conftest import NO_PASSWORD


def test_concurrent_checks_on_two_stores_admit_exactly_the_limit(stores: Callable[[], PostgresDatabase]) -> None:
    settings = RateLimitSettings.model_validate({"windowSeconds": 60, "operations": {"remember": 50}})
    limiters = [SharedRateLimiter(settings, db, clock=lambda: 5000.0) for db in (stores(), stores())]
    results: list[int] = []
    lock = threading.Lock()

    def hammer(limiter: SharedRateLimiter) -> None:
        for _ in range(20):
            wait = limiter.check("alice", "remember")
            with lock:
                results.append(wait)

    threads = [threading.Thread(target=hammer, args=(limiters[i % 2],)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert len(results) == 160
    assert results.count(0) == 50  # 160 tries, 8 threads over two daemons: exactly the limit
    assert set(results) - {0} == {60}  # the oldest hit (t=5000) leaves the window at 5060
    assert limiters[0].check("bob", "remember") == 0  # another actor has its own window
    assert limiters[1].check("alice", "recall") == 0  # and another operation
    for hostile in ("a\x00b", "x'; DROP TABLE memories; --", "\ud800", "é" * 200):  # any actor a token can name
        assert limiters[0].check(hostile, "remember") == 0
        assert limiters[1].check(hostile, "remember") == 0


def test_two_daemons_refuse_the_n_plus_one_th_request_together(
    pg_url: str, make_workspace: Callable[..., Workspace]
) -> None:
    limits = {"windowSeconds": 60, "default": 1000, "operations": {"recall": 4}}
    runtimes: list[Runtime] = []
    try:
        for _ in range(2):
            ws = configure(
                make_workspace(embedding="none", memory={"pipelineV2": {"enabled": False}}), "team", rateLimits=limits
            )
            runtimes.append(start_runtime(ws, storage=PostgresDatabase(resolve(pg_url, NO_PASSWORD))))
        assert all(isinstance(rt.auth.limiter, SharedRateLimiter) for rt in runtimes)
        for rt in runtimes:
            rt.auth.limiter.clock = lambda: 7000.0
        alice = bearer(token_for(runtimes[0].workspace, "agent", sub="alice"))  # one secret: the store's
        clients = [
            TestClient(create_app(rt, manage_runtime=False), base_url="http://localhost", client=("10.0.0.7", 1))
            for rt in runtimes
        ]
        codes = [clients[i % 2].get("/api/memories", headers=alice).status_code for i in range(6)]
        assert codes == [200, 200, 200, 200, 429, 429]  # round robin: 4 in all, not 4 per daemon
        refused = clients[1].get("/api/memories", headers=alice)
        assert refused.headers["retry-after"] == "60" and refused.json()["code"] == "rate_limited"
        for c in clients:
            c.close()
    finally:
        for rt in runtimes:
            rt.stop()
