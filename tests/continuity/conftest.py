"""Continuity fixtures: runtimes whose pipeline LLM is the fake server of tests/pipeline."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from signet.runtime import Runtime
from signet.workspace import Workspace
from tests.conftest import write_config
from tests.pipeline.conftest import pipeline_config
from tests.pipeline.fake_llm import FakeLLM

SUMMARY = "- Fixed the flaky login test in acme\n- Next: ship release 2.4"
SYNTHESIS = "## Now\n- Shipping acme release 2.4 (from the fake model)"


@pytest.fixture
def fake_llm() -> Iterator[FakeLLM]:
    f = FakeLLM().start()
    f.summarize = lambda text: SUMMARY
    f.synthesize = lambda text: SYNTHESIS
    yield f
    f.stop()


@pytest.fixture
def continuity_ws(make_workspace: Callable[..., Workspace], fake_llm: FakeLLM) -> Callable[..., Workspace]:
    """Factory: a workspace whose LLM is the fake server (``llm=False``: provider none)."""

    def make(llm: bool = True, **continuity: Any) -> Workspace:
        ws = make_workspace(embedding="none")
        if llm:
            write_config(ws, memory=pipeline_config(fake_llm))
        else:
            write_config(ws, memory={"pipelineV2": {"pollIntervalMs": 50, "backoffMaxMs": 400}})
        if continuity:
            write_config(ws, memory={"continuity": continuity})
        return ws

    return make


def wait_for(check: Callable[[], Any], timeout: float = 20.0, what: str = "condition") -> Any:
    deadline = time.monotonic() + timeout
    while True:
        got = check()
        if got:
            return got
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} not met after {timeout}s")
        time.sleep(0.05)


def summary_status(rt: Runtime) -> dict[str, int]:
    return dict(rt.db.read(lambda c: c.execute("SELECT status, COUNT(*) FROM summary_jobs GROUP BY status").fetchall()))


def end_session(api: TestClient, session: str, project: str = "acme", harness: str = "claude-code") -> Any:
    r = api.post(
        "/api/hooks/session-end",
        json={
            "harness": harness,
            "session_id": session,
            "project": project,
            "turns": [
                {"role": "user", "content": "The login test in acme is flaky, please fix it"},
                {"role": "assistant", "content": "Fixed the login test: the pytest fixture raced the server"},
                {"role": "user", "content": "Great, next we ship release 2.4"},
            ],
        },
    )
    assert r.status_code == 200, r.text
    return r.json()
