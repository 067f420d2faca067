"""Rate limits: the N+1th request in the window is a 429 with a correct Retry-After."""

from __future__ import annotations

from collections.abc import Callable

from fastapi.testclient import TestClient

from signet.daemon.app import create_app
from signet.workspace import Workspace
from tests.auth.conftest import bearer, configure, token_for
from tests.conftest import start_runtime

LIMITS = {"windowSeconds": 60, "default": 1000, "operations": {"recall": 3, "remember": 2}}


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def test_n_plus_one_gets_429_with_retry_after(make_workspace: Callable[..., Workspace]) -> None:
    ws = configure(
        make_workspace(embedding="none", memory={"pipelineV2": {"enabled": False}}), "team", rateLimits=LIMITS
    )
    rt = start_runtime(ws)
    clock = Clock()
    rt.auth.limiter.clock = clock
    try:
        with TestClient(create_app(rt, manage_runtime=False), base_url="http://localhost", client=("10.0.0.7", 1)) as c:
            alice, bob = bearer(token_for(ws, "agent", sub="alice")), bearer(token_for(ws, "agent", sub="bob"))
            for dt in (0.0, 0.5, 10.25):
                clock.t = 1000.0 + dt
                assert c.get("/api/memories", headers=alice).status_code == 200
            clock.t = 1020.0
            r = c.get("/api/memories", headers=alice)
            assert r.status_code == 429 and r.json()["code"] == "rate_limited"
            assert r.headers["retry-after"] == "40"  # the oldest hit (t=1000) leaves the window at 1060
            assert r.json()["retry_after"] == 40
            clock.t = 1059.5
            assert c.get("/api/memories", headers=alice).headers["retry-after"] == "1"  # ceil(0.5)
            # other actors and other operations have their own windows
            assert c.get("/api/memories", headers=bob).status_code == 200
            assert c.post("/api/memory/remember", headers=alice, json={"content": "one"}).status_code == 200
            clock.t = 1060.0
            assert c.get("/api/memories", headers=alice).status_code == 200
            # refused requests never reach the limiter; public routes are not limited
            for _ in range(10):
                assert c.get("/health").status_code == 200
            # unauthenticated callers are refused before the limiter: their 401s cost no slot
            assert c.get("/api/memories").status_code == 401
    finally:
        rt.stop()


def test_hybrid_local_callers_are_limited_by_actor(make_workspace: Callable[..., Workspace]) -> None:
    ws = configure(
        make_workspace(embedding="none", memory={"pipelineV2": {"enabled": False}}), "hybrid", rateLimits=LIMITS
    )
    rt = start_runtime(ws)
    rt.auth.limiter.clock = Clock()
    try:
        with TestClient(
            create_app(rt, manage_runtime=False), base_url="http://127.0.0.1", client=("127.0.0.1", 1)
        ) as c:
            codes = [c.get("/api/memories", headers={"X-Signet-Actor": "script"}).status_code for _ in range(4)]
            assert codes == [200, 200, 200, 429]
            assert c.get("/api/memories", headers={"X-Signet-Actor": "other"}).status_code == 200
    finally:
        rt.stop()


def test_local_mode_is_never_limited(make_workspace: Callable[..., Workspace]) -> None:
    ws = configure(
        make_workspace(embedding="none", memory={"pipelineV2": {"enabled": False}}),
        "local",
        rateLimits={"windowSeconds": 60, "default": 1, "operations": {"recall": 1, "remember": 1}},
    )
    rt = start_runtime(ws)
    try:
        with TestClient(create_app(rt, manage_runtime=False), base_url="http://127.0.0.1") as c:
            for i in range(30):
                assert c.get("/api/memories", headers={"X-Signet-Actor": "same"}).status_code == 200
                assert c.post("/api/memory/remember", json={"content": f"note {i}"}).status_code == 200
    finally:
        rt.stop()
