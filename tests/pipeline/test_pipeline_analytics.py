"""Pipeline failures reach the analytics error ring with the spec's codes, LLM calls and jobs
are counted and timed, and the telemetry events about them hold no prompt or memory text
(a fake LLM server speaking the real protocol)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

from fastapi.testclient import TestClient

from signet.runtime import Runtime
from tests.pipeline.conftest import wait_idle
from tests.pipeline.fake_llm import FakeLLM, Reply, as_json

Make = Callable[..., tuple[Runtime, TestClient]]

SOURCE = "Henrietta Vasquez-Oyelaran runs the quarterly okapi census for the Lisbon zoo."


def remember(api: TestClient, content: str) -> str:
    r = api.post("/api/memory/remember", json={"content": content})
    assert r.status_code == 200, r.text
    return str(r.json()["id"])


def jobs_seen(rt: Runtime, n: int, timeout: float = 20.0) -> None:
    """Wait until the worker has reported ``n`` job runs (it does so right after each finishes)."""
    deadline = time.monotonic() + timeout
    while rt.observability.analytics.latency()["operations"]["jobs"]["count"] < n:
        assert time.monotonic() < deadline, "the worker did not report its jobs"
        time.sleep(0.02)


def codes(api: TestClient) -> list[str]:
    return [e["code"] for e in api.get("/api/analytics/errors").json()["errors"]]


def test_an_unreadable_extraction_is_a_parse_failure(pipeline_rt: Make, fake_llm: FakeLLM) -> None:
    rt, api = pipeline_rt("ollama", embedding="none")
    fake_llm.extract = lambda text: "Sure! The okapi census is run by Henrietta."
    mid = remember(api, SOURCE)
    wait_idle(rt)
    jobs_seen(rt, 1)
    errors = api.get("/api/analytics/errors", params={"stage": "extraction"}).json()["errors"]
    assert [e["code"] for e in errors] == ["EXTRACTION_PARSE_FAIL"] and errors[0]["memory_id"] == mid
    usage = api.get("/api/analytics/usage").json()
    assert usage["providers"]["llm:ollama"]["calls"] == 1 and usage["providers"]["llm:ollama"]["failures"] == 0
    ops = api.get("/api/analytics/latency").json()["operations"]
    assert ops["llm"]["count"] == 1 and ops["jobs"]["count"] == 1 and ops["jobs"]["p50"] > 0

    events = api.get("/api/telemetry/events", params={"limit": 1000}).json()["events"]
    llm = [e["properties"] for e in events if e["event"] == "llm.generate"]
    assert llm == [{**llm[0], "provider": "ollama", "model": "qwen3:4b", "purpose": "extraction", "outcome": "success"}]
    (job,) = [e["properties"] for e in events if e["event"] == "pipeline.job"]
    assert job["outcome"] == "done" and job["facts"] == 0 and job["warnings"] == 1
    dump = json.dumps(events).lower()
    assert "okapi" not in dump and "henrietta" not in dump


def test_rejected_decisions_are_decision_invalid(pipeline_rt: Make, fake_llm: FakeLLM) -> None:
    rt, api = pipeline_rt("ollama", embedding="none")
    remember(api, "Henrietta Vasquez-Oyelaran counts okapis at the Lisbon zoo")
    wait_idle(rt)
    fake_llm.extract = lambda text: as_json(
        {"facts": [{"content": "Henrietta counts okapis in Lisbon", "type": "fact", "confidence": 0.9}], "entities": []}
    )
    fake_llm.decide = lambda fact, cands: "{not json"
    remember(api, SOURCE)
    wait_idle(rt)
    jobs_seen(rt, 2)
    assert codes(api) == ["DECISION_INVALID"]  # an unreadable *decision* is not an extraction parse failure
    purposes = {
        e["properties"]["purpose"]
        for e in api.get("/api/telemetry/events").json()["events"]
        if e["event"] == "llm.generate"
    }
    assert purposes == {"extraction", "knowledge", "decision"}


def test_llm_timeouts_and_failed_jobs(pipeline_rt: Make, fake_llm: FakeLLM) -> None:
    rt, api = pipeline_rt("ollama", embedding="none", extraction={"timeout": 0.3}, maxAttempts=1)
    fake_llm.extract = lambda text: Reply(text=as_json({"facts": [], "entities": []}), delay=1.0)
    mid = remember(api, SOURCE)
    wait_idle(rt)
    jobs_seen(rt, 1)
    out = api.get("/api/analytics/errors").json()
    assert sorted(e["code"] for e in out["errors"]) == ["EXTRACTION_TIMEOUT", "JOB_FAILED"]
    failed = next(e for e in out["errors"] if e["code"] == "JOB_FAILED")
    assert failed["memory_id"] == mid and failed["stage"] == "jobs" and "attempt 1/1" in failed["message"]
    assert out["summary"]["by_stage"] == {"extraction": 1, "jobs": 1}
    usage = api.get("/api/analytics/usage").json()
    assert usage["providers"]["llm:ollama"]["timeouts"] == 1
    safety = api.get("/api/analytics/memory-safety").json()
    assert safety["dead_jobs"] == 1
    stats = api.get("/api/telemetry/stats").json()
    assert stats["llm"]["outcomes"] == {"timeout": 1} and stats["pipeline"]["outcomes"] == {"failed": 1}
    assert stats["errors_by_code"] == {"EXTRACTION_TIMEOUT": 1, "JOB_FAILED": 1}


def test_an_unreachable_llm_is_a_provider_failure(pipeline_rt: Make, fake_llm: FakeLLM) -> None:
    rt, api = pipeline_rt("ollama", embedding="none", maxAttempts=1)
    fake_llm.extract = lambda text: Reply(status=500)
    remember(api, SOURCE)
    wait_idle(rt)
    jobs_seen(rt, 1)
    assert sorted(codes(api)) == ["JOB_FAILED", "LLM_PROVIDER_FAIL"]
    entry: dict[str, Any] = next(
        e for e in api.get("/api/analytics/errors").json()["errors"] if e["code"] == "LLM_PROVIDER_FAIL"
    )
    assert entry["stage"] == "llm" and "extraction call to ollama:qwen3:4b (failure)" in entry["message"]
