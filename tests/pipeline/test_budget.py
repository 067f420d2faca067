"""LLM budgets: the N+1th call of a window is not made, the job waits (never dead, no attempt
spent), status shows the use, and the job runs when the window (or a raised limit) allows."""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from signet.config import LlmBudget, parse_settings
from signet.errors import ConfigError
from signet.pipeline import queue
from signet.pipeline.llm.base import LlmBudgetExceeded
from signet.pipeline.llm.budget import Budget, hour_key
from signet.runtime import Runtime
from signet.store.database import Database
from signet.workspace import Workspace
from tests.conftest import write_config
from tests.pipeline.conftest import pipeline_config, rows
from tests.pipeline.fake_llm import FakeLLM

Open = Callable[[Workspace], tuple[Runtime, TestClient]]


class Clock:
    def __init__(self, at: datetime) -> None:
        self.at = at

    def __call__(self) -> datetime:
        return self.at


def test_calls_per_hour_refuse_the_next_call_until_the_next_hour() -> None:
    clock = Clock(datetime(2026, 11, 25, 20, 40, tzinfo=UTC))
    b = Budget("ollama", LlmBudget(calls_per_hour=2), clock=clock)
    for _ in range(2):
        b.acquire(10)
        b.release(30)
    with pytest.raises(LlmBudgetExceeded, match=r"2/2 calls per hour used.*2026-11-25 21:00 UTC") as err:
        b.acquire(10)
    assert err.value.retry_at == datetime(2026, 11, 25, 21, tzinfo=UTC).timestamp()
    assert b.hour_calls == 2 and b.refused == 1  # the refused call is not counted as made
    clock.at += timedelta(minutes=20)  # 21:00: a new window
    assert b.check() is None
    b.acquire(10)
    snap = b.snapshot()
    assert snap["calls_per_hour"] == {"used": 1, "limit": 2} and snap["calls_per_day"] == {"used": 3, "limit": None}


def test_calls_per_day_span_the_hours_and_reset_at_midnight_utc() -> None:
    clock = Clock(datetime(2026, 11, 25, 21, 0, tzinfo=UTC))
    b = Budget("codex", LlmBudget(calls_per_day=3), clock=clock)
    for hours in (0, 1, 1):
        clock.at += timedelta(hours=hours)
        b.acquire(1)
        b.release(1)
    refusal = b.check()
    assert refusal is not None and "3/3 calls per day" in refusal.reason and "2026-11-26 00:00" in refusal.reason
    clock.at = datetime(2026, 11, 26, 0, 0, 1, tzinfo=UTC)
    assert b.check() is None


def test_tokens_are_checked_before_the_call_with_the_prompt_estimate() -> None:
    b = Budget("anthropic", LlmBudget(tokens_per_hour=1000), clock=Clock(datetime(2026, 1, 1, 1, tzinfo=UTC)))
    b.acquire(400)
    b.release(600)
    b.acquire(400)  # 600 used + 400 wanted = 1000: fits
    b.release(100)
    with pytest.raises(LlmBudgetExceeded, match=r"700/1,000 tokens per hour"):
        b.acquire(400)


def test_concurrency_waits_for_a_slot_then_refuses() -> None:
    b = Budget("claude-code", LlmBudget(concurrency=1))
    b.acquire(1)
    started = time.monotonic()
    with pytest.raises(LlmBudgetExceeded, match="1 calls at once") as err:
        b.acquire(1, wait=0.2)
    assert err.value.retry_at is None and time.monotonic() - started >= 0.2
    threading.Timer(0.2, b.release, args=(5,)).start()
    b.acquire(1, wait=5)  # the slot freed while it waited
    assert b.in_flight == 1 and b.hour_calls == 2


def test_use_is_kept_in_the_database_across_restarts(tmp_path: Path) -> None:
    db = Database(tmp_path / "m.db")
    db.open()
    try:
        hour = hour_key(datetime.now(UTC))
        b = Budget("ollama", LlmBudget(calls_per_hour=5), db)
        b.load()
        for tokens in (100, 200):
            b.acquire(1)
            b.release(tokens)
        db.write(lambda c: None)  # flush the fire-and-forget writes
        again = Budget("ollama", LlmBudget(calls_per_hour=5), db)
        again.load()
        if hour_key(datetime.now(UTC)) == hour:  # not across an hour boundary
            assert (again.hour_calls, again.hour_tokens, again.day_calls) == (2, 300, 2)
        other = Budget("codex", None, db)
        other.load()
        assert other.day_calls == 0
    finally:
        db.close()


@pytest.mark.parametrize(
    ("budgets", "message"),
    [
        ({"olama": {"callsPerHour": 1}}, "unknown LLM provider 'olama'"),
        ({"ollama": {"callsPerHour": -1}}, "callsPerHour"),
        ({"ollama": {"callsPerHuor": 1}}, "did you mean"),
    ],
)
def test_budget_settings_are_validated(budgets: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        parse_settings({"memory": {"pipelineV2": {"budgets": budgets}}})


def test_queue_waiting_never_spends_attempts(tmp_path: Path) -> None:
    db = Database(tmp_path / "q.db")
    db.open()
    try:
        ids = [db.write(functools.partial(queue.enqueue, job_type="extract", memory_id=f"m{i}"))[0] for i in range(3)]
        assert db.write(lambda c: queue.park(c, ("extract",), queue.WAITING_FOR_PROVIDER)) == 3
        assert db.write(lambda c: queue.lease(c, ("extract",))) is None  # waiting jobs are never leased
        # A waiting job is still the live job for its memory: no duplicate is queued.
        assert db.write(lambda c: queue.enqueue(c, "extract", memory_id="m0")) == (ids[0], False)
        assert db.write(lambda c: queue.unpark(c, ("extract",))) == 3
        job = db.write(lambda c: queue.lease(c, ("extract",)))
        assert job is not None and job.attempts == 1
        assert not db.write(lambda c: queue.wait(c, job.id, queue.WAITING_FOR_BUDGET, "spent", attempt=0))
        assert db.write(lambda c: queue.wait(c, job.id, queue.WAITING_FOR_BUDGET, "spent", attempt=1))
        row = db.read(lambda c: queue.get_job(c, job.id))
        assert (row["status"], row["attempts"], row["max_attempts"]) == ("waiting_for_budget", 1, 4)
        st = db.read(queue.stats)
        assert (st["waiting"], st["by_status"]["waiting_for_budget"], st["by_status"]["pending"]) == (1, 1, 2)
        with pytest.raises(ValueError, match="not a waiting status"):
            db.write(lambda c: queue.park(c, ("extract",), "dead"))
    finally:
        db.close()


def wait_counts(rt: Runtime, want: dict[str, int], timeout: float = 30) -> dict[str, int]:
    deadline = time.monotonic() + timeout
    while True:
        counts = dict(
            rt.db.read(lambda c: c.execute("SELECT status, COUNT(*) FROM memory_jobs GROUP BY status").fetchall())
        )
        if counts == want:
            rt.db.write(lambda c: None)
            return counts
        if time.monotonic() > deadline:
            raise AssertionError(f"jobs are {counts}, not {want}")
        time.sleep(0.05)


def test_the_n_plus_first_call_is_not_made_and_its_job_waits(
    make_workspace: Callable[..., Workspace], open_app: Open, fake_llm: FakeLLM
) -> None:
    hour = hour_key(datetime.now(UTC))
    ws = make_workspace(
        embedding="none", memory=pipeline_config(fake_llm, "ollama", budgets={"ollama": {"callsPerHour": 3}})
    )
    rt, api = open_app(ws)
    for i in range(5):
        assert api.post("/api/memory/remember", json={"content": f"budget note {i}"}).status_code == 200
    wait_counts(rt, {"completed": 3, "waiting_for_budget": 2})
    time.sleep(0.5)
    assert fake_llm.calls("extract") == 3  # the 4th call was never made
    st = api.get("/api/pipeline/status").json()
    assert st["state"] == "waiting" and st["waiting_for"] == "waiting_for_budget"
    assert "3/3 calls per hour used" in st["reason"] and "memory.pipelineV2.budgets.ollama" in st["reason"]
    assert st["provider"]["budget"]["calls_per_hour"] == {"used": 3, "limit": 3}
    assert st["provider"]["budget"]["tokens_per_hour"] == {"used": 360, "limit": None}  # 120 reported per call
    assert st["queue"]["dead"] == 0 and st["worker"]["failed"] == 0
    llm = api.get("/api/status").json()["llm"]
    assert llm["waiting_for"] == "waiting_for_budget" and llm["waiting_jobs"] == 2
    assert llm["budget"]["calls_per_hour"] == {"used": 3, "limit": 3}
    waiting = rows(rt, "SELECT attempts FROM memory_jobs WHERE status = 'waiting_for_budget'")
    assert [w[0] for w in waiting] == [0, 0]  # never leased, never attempted
    if hour_key(datetime.now(UTC)) == hour:
        assert [tuple(r) for r in rows(rt, "SELECT calls, tokens FROM llm_usage")] == [(3, 360)]

    # The user raises the limit: the waiting jobs run now, without a restart.
    write_config(ws, memory={"pipelineV2": {"budgets": {"ollama": {"callsPerHour": 10}}}})
    assert rt.reload_config() or rt.pipeline.supply.reloads >= 1  # the watcher may have been first
    wait_counts(rt, {"completed": 5})
    assert fake_llm.calls("extract") == 5
    st = api.get("/api/pipeline/status").json()
    assert st["state"] == "running" and st["provider"]["budget"]["calls_per_hour"]["limit"] == 10


def test_a_budget_spent_before_a_restart_stays_spent(
    make_workspace: Callable[..., Workspace], open_app: Open, fake_llm: FakeLLM
) -> None:
    hour = hour_key(datetime.now(UTC))
    ws = make_workspace(
        embedding="none", memory=pipeline_config(fake_llm, "ollama", budgets={"ollama": {"callsPerDay": 2}})
    )
    rt, api = open_app(ws)
    for i in range(2):
        api.post("/api/memory/remember", json={"content": f"first run {i}"})
    wait_counts(rt, {"completed": 2})
    rt.stop()
    rt2, api2 = open_app(ws)
    api2.post("/api/memory/remember", json={"content": "after the restart"})
    if hour_key(datetime.now(UTC))[:10] != hour[:10]:
        pytest.skip("the UTC day changed during the test")
    wait_counts(rt2, {"completed": 2, "waiting_for_budget": 1})
    assert fake_llm.calls("extract") == 2
    assert api2.get("/api/pipeline/status").json()["provider"]["budget"]["calls_per_day"] == {"used": 2, "limit": 2}
