"""The LLM hints job against a fake Ollama server (the real HTTP client runs): the model's
questions become the memory's ``llm`` hints and recall finds the memory by them; a malformed
answer fails the attempt and the retry writes; an answer that is always malformed goes dead and
leaves the template hints; a timeout and an outage follow the queue's rules."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest
from fastapi.testclient import TestClient

from signet.runtime import Runtime
from tests.pipeline.conftest import rows, wait_idle
from tests.pipeline.fake_llm import FakeLLM, Reply, as_json

Make = Callable[..., tuple[Runtime, TestClient]]
TEXT = "Joanna: I visited Woodhaven with Nate last week."
QUESTIONS = ["Where did Joanna travel recently?", "Which small town did Joanna see?", "Who went on the trip?"]


def _job(rt: Runtime, mid: str) -> dict[str, object]:
    return dict(
        rows(
            rt,
            "SELECT status, attempts, max_attempts, error FROM memory_jobs WHERE memory_id = ? AND job_type = 'hints'",
            mid,
        )[0]
    )


def _hints(api: TestClient, mid: str, source: str) -> list[str]:
    return [h["hint"] for h in api.get(f"/api/memory/{mid}/hints").json()["hints"] if h["source"] == source]


def test_the_models_questions_become_hints_that_recall_matches(pipeline_rt: Make, fake_llm: FakeLLM) -> None:
    seen: list[str] = []

    def answer(text: str) -> str:
        seen.append(text)
        return as_json({"questions": [*QUESTIONS, QUESTIONS[0], "  extra   spaces  "]})

    fake_llm.hints = answer
    rt, api = pipeline_rt("ollama", embedding="none", hints={"enabled": True, "max": 3})
    mid = api.post("/api/memory/remember", json={"content": TEXT, "who": "Joanna"}).json()["id"]
    wait_idle(rt)
    assert seen == [TEXT]
    assert _job(rt, mid)["status"] == "completed"
    assert _hints(api, mid, "llm") == QUESTIONS  # at most hints.max, each once
    assert _hints(api, mid, "template")  # the template's stay beside them
    outcomes = rows(rt, "SELECT outcome FROM llm_calls WHERE purpose = 'hints'")
    assert [o[0] for o in outcomes] == ["success"]
    results = api.post("/api/memory/recall", json={"query": "small town", "track_access": False}).json()["results"]
    assert [(r["id"], r["source"]) for r in results] == [(mid, "hint")]


MALFORMED = {
    "no JSON": "I cannot answer that.",
    "not a list": as_json({"questions": "Where did Joanna go?"}),
    "not a string": as_json({"questions": ["Where?", 42]}),
    "too long": as_json({"questions": ["Where " * 60 + "?"]}),
    "broken envelope": Reply(raw=b"{not json"),
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_a_malformed_answer_fails_the_attempt_and_the_retry_writes(
    pipeline_rt: Make, fake_llm: FakeLLM, case: str
) -> None:
    answers = iter([MALFORMED[case]])
    fake_llm.hints = lambda text: next(answers, None) or as_json({"questions": QUESTIONS})
    rt, api = pipeline_rt("ollama", embedding="none", maxAttempts=3, hints={"enabled": True})
    mid = api.post("/api/memory/remember", json={"content": TEXT, "who": "Joanna"}).json()["id"]
    wait_idle(rt)
    job = _job(rt, mid)
    assert job["status"] == "completed" and job["attempts"] == 2, job
    assert _hints(api, mid, "llm") == QUESTIONS
    assert api.get(f"/api/memory/{mid}").json()["content"] == TEXT


def test_always_malformed_goes_dead_and_keeps_the_template_hints(pipeline_rt: Make, fake_llm: FakeLLM) -> None:
    fake_llm.hints = lambda text: as_json({"questions": [None]})
    rt, api = pipeline_rt("ollama", embedding="none", maxAttempts=2, hints={"enabled": True})
    mid = api.post("/api/memory/remember", json={"content": TEXT, "who": "Joanna"}).json()["id"]
    wait_idle(rt)
    job = _job(rt, mid)
    assert job["status"] == "dead" and job["attempts"] == 2
    assert "hints answer rejected: question 0 is not a string" in str(job["error"])
    assert _hints(api, mid, "llm") == [] and _hints(api, mid, "template")
    extract = rows(rt, "SELECT status FROM memory_jobs WHERE memory_id = ? AND job_type = 'extract'", mid)
    assert extract[0][0] == "completed"  # the extraction job is its own: it is not failed with it


def test_a_timeout_fails_the_attempt_then_the_retry_writes(pipeline_rt: Make, fake_llm: FakeLLM) -> None:
    slow = iter([Reply(text=as_json({"questions": ["late"]}), delay=2.5)])
    fake_llm.hints = lambda text: next(slow, None) or as_json({"questions": QUESTIONS})
    rt, api = pipeline_rt("ollama", embedding="none", extraction={"timeout": 1}, hints={"enabled": True})
    mid = api.post("/api/memory/remember", json={"content": TEXT, "who": "Joanna"}).json()["id"]
    wait_idle(rt)
    assert _job(rt, mid)["attempts"] == 2
    outcomes = [o[0] for o in rows(rt, "SELECT outcome FROM llm_calls WHERE purpose = 'hints' ORDER BY created_at")]
    assert outcomes == ["timeout", "success"]
    assert _hints(api, mid, "llm") == QUESTIONS


def test_an_outage_parks_the_job_until_the_provider_answers(pipeline_rt: Make, fake_llm: FakeLLM) -> None:
    """The provider goes away at the hints call: the job waits (its attempt given back), nothing
    is written, and it completes once the provider answers again."""
    port = fake_llm.port
    state = {"down": False}

    def die(text: str) -> str:
        if not state["down"]:
            state["down"] = True
            fake_llm.stop()  # the listening socket closes; this request's connection is dropped too
            raise ConnectionAbortedError("the model server went away")
        return as_json({"questions": QUESTIONS})

    fake_llm.hints = die
    rt, api = pipeline_rt("ollama", embedding="none", hints={"enabled": True})
    mid = api.post("/api/memory/remember", json={"content": TEXT, "who": "Joanna"}).json()["id"]
    deadline = time.monotonic() + 20
    while _job(rt, mid)["status"] != "waiting_for_provider":
        assert time.monotonic() < deadline, [
            dict(r) for r in rows(rt, "SELECT job_type, status, error FROM memory_jobs")
        ]
        time.sleep(0.05)
    job = _job(rt, mid)
    assert job["attempts"] == 1 and job["max_attempts"] == 4  # the attempt is given back (queue.wait)
    assert _hints(api, mid, "llm") == [] and _hints(api, mid, "template")
    fake_llm._port = port
    fake_llm.start()
    deadline = time.monotonic() + 45
    while _job(rt, mid)["status"] != "completed":
        assert time.monotonic() < deadline, [
            dict(r) for r in rows(rt, "SELECT job_type, status, error FROM memory_jobs")
        ]
        time.sleep(0.1)
    assert _hints(api, mid, "llm") == QUESTIONS


def test_no_hints_job_with_hints_off_without_llm_hints_or_in_shadow_mode(pipeline_rt: Make, fake_llm: FakeLLM) -> None:
    cases: list[tuple[dict[str, bool], dict[str, bool]]] = [
        ({"enabled": False}, {}),
        ({"enabled": True, "llm": False}, {}),
        ({"enabled": True}, {"shadowMode": True}),
    ]
    for flags, more in cases:
        rt, api = pipeline_rt("ollama", embedding="none", hints=flags, **more)
        mid = api.post("/api/memory/remember", json={"content": TEXT, "who": "Joanna"}).json()["id"]
        wait_idle(rt)
        assert rows(rt, "SELECT id FROM memory_jobs WHERE memory_id = ? AND job_type = 'hints'", mid) == []
        assert _hints(api, mid, "llm") == []
