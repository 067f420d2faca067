"""The LLM knowledge builder against a fake Ollama server (the real HTTP client runs): entities,
aspects and attribute claims are written per agent; a later contradicting fact supersedes the
older attribute (kept, linked, timed); recall over HTTP returns the current fact first and marks
the superseded one; malformed answers, timeouts and outages leave the memory intact and the job
to the queue's rules."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient

from signet.runtime import Runtime
from signet.workspace import Workspace
from tests.conftest import DaemonProcess
from tests.pipeline.conftest import pipeline_config, rows, wait_idle
from tests.pipeline.fake_llm import FakeLLM, Reply, as_json

Make = Callable[..., tuple[Runtime, TestClient]]

BERLIN = "Alice Moreau lives in Berlin. Last spring she visited Rome with her brother."
BERLIN_ONLY = "Alice Moreau lives in Berlin, near the old harbour."
PARIS = "Alice Moreau moved to Paris in May; she has lived there since."


def _fact(text: str) -> str:
    if "Berlin" in text:
        return "Alice Moreau lives in Berlin."
    if "Paris" in text:
        return "Alice Moreau lives in Paris now."
    return "Nothing durable was said here."


def extract(text: str) -> str:
    if "Alice" not in text:
        return as_json({"facts": [], "entities": []})
    return as_json({"facts": [{"content": _fact(text), "type": "fact", "confidence": 0.9}], "entities": []})


def alice(aspects: list[dict[str, Any]]) -> dict[str, Any]:
    return {"name": "Alice Moreau", "type": "person", "aliases": ["Alice"], "aspects": aspects}


def knowledge(text: str, known: list[str]) -> str:
    """The scripted model: Berlin (a state) and a trip (an event); later Paris, the same claim."""
    if "Berlin" in text:
        aspects = [
            {"name": "home", "attributes": [{"key": "city", "value": "Berlin", "kind": "state", "confidence": 0.9}]}
        ]
        if "Rome" in text:
            aspects.append(
                {"name": "travel", "attributes": [{"key": "trip", "value": "Rome", "kind": "event", "confidence": 0.8}]}
            )
        return as_json({"entities": [alice(aspects), {"name": "Berlin", "type": "place"}]})
    if "Paris" in text:
        # A model that files the new value under another aspect name: still the same claim (entity + key).
        return as_json(
            {
                "entities": [
                    alice(
                        [
                            {
                                "name": "residence",
                                "attributes": [{"key": "City", "value": "Paris", "kind": "state", "confidence": 0.95}],
                            }
                        ]
                    )
                ]
            }
        )
    return as_json({"entities": []})


def attributes(rt: Runtime, agent: str = "default") -> list[Any]:
    return rows(
        rt,
        "SELECT t.*, s.aspect_name FROM entity_attributes t JOIN entity_aspects s ON s.id = t.aspect_id"
        " WHERE t.agent_id = ? ORDER BY t.created_at, t.attribute_value",
        agent,
    )


def test_builds_entities_aspects_attributes_and_supersedes(pipeline_rt: Make, fake_llm: FakeLLM) -> None:
    fake_llm.extract = extract
    prompts: list[tuple[str, list[str]]] = []

    def record(text: str, known: list[str]) -> str:
        prompts.append((text, known))
        return knowledge(text, known)

    fake_llm.knowledge = record
    rt, api = pipeline_rt("ollama", embedding="none")
    first = api.post("/api/memory/remember", json={"content": BERLIN}).json()["id"]
    wait_idle(rt)
    job = rows(rt, "SELECT status, result FROM memory_jobs WHERE memory_id = ?", first)[0]
    assert job["status"] == "completed", job
    result = json.loads(job["result"])
    assert result["knowledge"] == {
        "entities": 2,
        "aspects": 2,
        "attributes": 2,
        "confirmed": 0,
        "superseded": 0,
        "unsourced": 0,
    }
    assert prompts[0] == (BERLIN, [])  # nothing known yet
    ents = {r["canonical_name"]: r for r in rows(rt, "SELECT * FROM entities WHERE agent_id = 'default'")}
    assert ents["alice moreau"]["entity_type"] == "person" and ents["berlin"]["entity_type"] == "place"
    aliases = rows(rt, "SELECT alias FROM entity_aliases WHERE entity_id = ?", ents["alice moreau"]["id"])
    assert [a[0] for a in aliases] == ["Alice"]
    got = attributes(rt)
    assert [(a["aspect_name"], a["attribute_key"], a["attribute_value"], a["claim_type"]) for a in got] == [
        ("home", "city", "Berlin", "state"),
        ("travel", "trip", "Rome", "event"),
    ]
    city = got[0]
    assert city["claim_key"] == "alice moreau|city" and city["group_key"] == "alice moreau|home"
    assert city["status"] == "active" and city["source_memory_id"] == first and city["confidence"] == 0.9
    # the memory is linked to its entities, so traversal reaches it
    linked = rows(rt, "SELECT entity_id FROM memory_entity_mentions WHERE memory_id = ?", first)
    assert {r[0] for r in linked} >= {ents["alice moreau"]["id"], ents["berlin"]["id"]}

    # A later, contradicting fact: the prompt shows the current value, the model reuses the key.
    second = api.post("/api/memory/remember", json={"content": PARIS}).json()["id"]
    wait_idle(rt)
    assert prompts[-1] == (PARIS, ["Alice Moreau | home | city = Berlin"])
    result = json.loads(rows(rt, "SELECT result FROM memory_jobs WHERE memory_id = ?", second)[0][0])
    assert result["knowledge"]["superseded"] == 1 and result["knowledge"]["entities"] == 1
    by_value = {a["attribute_value"]: a for a in attributes(rt)}
    assert set(by_value) == {"Berlin", "Rome", "Paris"}  # nothing deleted
    old, new, trip = by_value["Berlin"], by_value["Paris"], by_value["Rome"]
    assert old["status"] == "superseded" and old["superseded_by"] == new["id"] and old["superseded_at"]
    assert new["status"] == "active" and new["source_memory_id"] == second and new["superseded_by"] is None
    assert new["claim_key"] == old["claim_key"]
    assert trip["status"] == "active"  # an event is never superseded

    # Recall: the first memory still states a true event (the trip), so it is not wholly
    # superseded, but it says which memory holds the current value of the claim that changed.
    hits = api.post("/api/memory/recall", json={"query": "Alice Moreau Berlin Rome", "min_score": 0}).json()["results"]
    by_id = {h["id"]: h for h in hits}
    assert by_id[first]["superseded"] is False and by_id[first]["superseded_by"] == second

    # The knowledge endpoint shows both, the superseded one with its link and time.
    eid = ents["alice moreau"]["id"]
    detail = api.get(f"/api/knowledge/entities/{eid}").json()
    shown = {t["value"]: t for a in detail["aspects"] for t in a["attributes"]}
    assert shown["Berlin"]["status"] == "superseded" and shown["Berlin"]["superseded_by"] == new["id"]
    assert shown["Berlin"]["superseded_at"] == old["superseded_at"] and shown["Paris"]["claim_type"] == "state"

    # The same value said again is a confirmation, not a new row.
    api.post("/api/memory/remember", json={"content": "Alice Moreau still lives in Paris, she told us."})
    wait_idle(rt)
    assert [a["attribute_value"] for a in attributes(rt)].count("Paris") == 1

    # The newer memory was wrong and is forgotten: the old value is current again at recall
    # (the rows keep their history).
    assert api.request("DELETE", f"/api/memory/{second}", params={"reason": "wrong"}).status_code == 200
    hits = api.post("/api/memory/recall", json={"query": "Alice Moreau Berlin Rome", "min_score": 0}).json()["results"]
    mark = next(h for h in hits if h["id"] == first)
    assert mark["superseded"] is False and mark["superseded_by"] is None


def test_an_older_statement_extracted_late_is_filed_as_superseded(pipeline_rt: Make, fake_llm: FakeLLM) -> None:
    """The order is the order the facts were said, not the order their jobs ran."""
    fake_llm.extract = extract
    fake_llm.knowledge = knowledge
    rt, api = pipeline_rt("ollama", embedding="none")
    new = api.post("/api/memory/remember", json={"content": PARIS}).json()["id"]
    wait_idle(rt)
    old = api.post("/api/memory/remember", json={"content": BERLIN}).json()["id"]
    rt.db.write(
        lambda c: c.execute("UPDATE memories SET created_at = '2020-01-01T00:00:00+00:00' WHERE id = ?", (old,))
    )
    wait_idle(rt)
    by_value = {a["attribute_value"]: a for a in attributes(rt)}
    assert by_value["Paris"]["status"] == "active" and by_value["Paris"]["source_memory_id"] == new
    assert (
        by_value["Berlin"]["status"] == "superseded" and by_value["Berlin"]["superseded_by"] == by_value["Paris"]["id"]
    )


def test_claims_are_per_agent(pipeline_rt: Make, fake_llm: FakeLLM) -> None:
    """Agent b's Paris never supersedes agent a's Berlin: same name, same key, other agent."""
    fake_llm.extract = extract
    known: dict[str, list[str]] = {}

    def record(text: str, k: list[str]) -> str:
        known[text] = k
        return knowledge(text, k)

    fake_llm.knowledge = record
    rt, api = pipeline_rt("ollama", embedding="none")
    api.post("/api/memory/remember", json={"content": BERLIN, "agent_id": "a"})
    wait_idle(rt)
    api.post("/api/memory/remember", json={"content": PARIS, "agent_id": "b"})
    wait_idle(rt)
    assert known[PARIS] == []  # a's current value is not shown to b's builder
    a, b = attributes(rt, "a"), attributes(rt, "b")
    assert {(x["attribute_value"], x["status"]) for x in a} == {("Berlin", "active"), ("Rome", "active")}
    assert [(x["attribute_value"], x["status"]) for x in b] == [("Paris", "active")]
    assert {r[0] for r in rows(rt, "SELECT agent_id FROM entities WHERE canonical_name = 'alice moreau'")} == {"a", "b"}


MALFORMED = {
    "broken envelope": Reply(raw=b'{"message": {"content'),
    "not json": '{"not json',
    "prose only": "I found Alice Moreau, who lives in Berlin.",
    "cut off": '{"entities": [{"name": "Alice Moreau", "aspects": [{"name": "home", "attributes": [{"key": "ci',
    "no entities key": as_json({"facts": []}),
    "entities not a list": as_json({"entities": {"name": "Alice"}}),
    "attribute without value": as_json(
        {"entities": [alice([{"name": "home", "attributes": [{"key": "city", "kind": "state"}]}])]}
    ),
    "unknown kind": as_json(
        {"entities": [alice([{"name": "home", "attributes": [{"key": "city", "value": "Berlin", "kind": "rumour"}]}])]}
    ),
    "confidence out of range": as_json(
        {"entities": [alice([{"name": "home", "attributes": [{"key": "city", "value": "Berlin", "confidence": 7}]}])]}
    ),
    "unknown entity type": as_json({"entities": [{"name": "Alice", "type": "spaceship"}]}),
    "empty name": as_json({"entities": [{"name": "  ", "type": "person"}]}),
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_malformed_answer_fails_the_job_and_the_retry_builds(pipeline_rt: Make, fake_llm: FakeLLM, case: str) -> None:
    """A malformed (or partial) answer writes nothing and fails the attempt; the queue retries
    the job (with backoff) and the next, well-formed answer builds the knowledge."""
    fake_llm.extract = extract
    answers = iter([MALFORMED[case]])
    fake_llm.knowledge = lambda text, known: next(answers, None) or knowledge(text, known)
    rt, api = pipeline_rt("ollama", embedding="none", maxAttempts=3)
    mid = api.post("/api/memory/remember", json={"content": BERLIN}).json()["id"]
    wait_idle(rt)
    job = rows(rt, "SELECT status, attempts, error FROM memory_jobs WHERE memory_id = ?", mid)[0]
    assert job["status"] == "completed" and job["attempts"] == 2, dict(job)
    outcomes = rows(rt, "SELECT outcome FROM llm_calls WHERE purpose = 'knowledge' ORDER BY created_at")
    # the call itself worked (its answer did not), unless the HTTP envelope was broken
    first = "failure" if isinstance(MALFORMED[case], Reply) else "success"
    assert [o[0] for o in outcomes] == [first, "success"]
    assert api.get(f"/api/memory/{mid}").json()["content"] == BERLIN
    assert {a["attribute_value"] for a in attributes(rt)} == {"Berlin", "Rome"}
    # the failed attempt wrote no fact: the knowledge call comes before the writes
    assert len(rows(rt, "SELECT id FROM memories WHERE source_type = 'pipeline' AND source_id = ?", mid)) == 1


def test_always_malformed_goes_dead_and_leaves_the_memory(pipeline_rt: Make, fake_llm: FakeLLM) -> None:
    fake_llm.extract = extract
    fake_llm.knowledge = lambda text, known: "no JSON here at all"
    rt, api = pipeline_rt("ollama", embedding="none", maxAttempts=2)
    mid = api.post("/api/memory/remember", json={"content": BERLIN}).json()["id"]
    wait_idle(rt)
    job = rows(rt, "SELECT status, attempts, error FROM memory_jobs WHERE memory_id = ?", mid)[0]
    assert job["status"] == "dead" and job["attempts"] == 2
    assert "knowledge answer rejected" in job["error"] and "no JSON object" in job["error"]
    assert api.get(f"/api/memory/{mid}").json()["content"] == BERLIN
    assert attributes(rt) == [] and rows(rt, "SELECT id FROM entity_aspects") == []
    assert rows(rt, "SELECT id FROM memories WHERE source_type = 'pipeline'") == []  # no fact without its knowledge


def test_timeout_fails_the_attempt_then_the_retry_builds(pipeline_rt: Make, fake_llm: FakeLLM) -> None:
    fake_llm.extract = extract
    slow = iter([Reply(text=as_json({"entities": []}), delay=2.5)])
    fake_llm.knowledge = lambda text, known: next(slow, None) or knowledge(text, known)
    rt, api = pipeline_rt("ollama", embedding="none", maxAttempts=3, extraction={"timeout": 1})
    mid = api.post("/api/memory/remember", json={"content": BERLIN}).json()["id"]
    wait_idle(rt)
    job = rows(rt, "SELECT status, attempts FROM memory_jobs WHERE memory_id = ?", mid)[0]
    assert job["status"] == "completed" and job["attempts"] == 2
    outcomes = [o[0] for o in rows(rt, "SELECT outcome FROM llm_calls WHERE purpose = 'knowledge' ORDER BY created_at")]
    assert outcomes == ["timeout", "success"]
    assert {a["attribute_value"] for a in attributes(rt)} == {"Berlin", "Rome"}


def test_outage_mid_job_waits_for_the_provider_then_builds(pipeline_rt: Make, fake_llm: FakeLLM) -> None:
    """The provider goes away at the knowledge call: the job waits (its attempt given back),
    nothing is written, and it completes once the provider answers again."""
    port = fake_llm.port
    fake_llm.extract = extract
    state = {"down": False}

    def die(text: str, known: list[str]) -> str:
        if not state["down"]:
            state["down"] = True
            fake_llm.stop()  # the listening socket closes; this request's connection is dropped too
            raise ConnectionAbortedError("the model server went away")
        return knowledge(text, known)

    fake_llm.knowledge = die
    rt, api = pipeline_rt("ollama", embedding="none")
    mid = api.post("/api/memory/remember", json={"content": BERLIN}).json()["id"]
    deadline = time.monotonic() + 20
    while rows(rt, "SELECT status FROM memory_jobs WHERE memory_id = ?", mid)[0][0] != "waiting_for_provider":
        assert time.monotonic() < deadline, rows(rt, "SELECT status, error FROM memory_jobs")
        time.sleep(0.05)
    job = rows(rt, "SELECT attempts, max_attempts FROM memory_jobs WHERE memory_id = ?", mid)[0]
    assert job["attempts"] == 1 and job["max_attempts"] == 4  # the attempt is given back (queue.wait)
    assert attributes(rt) == [] and api.get(f"/api/memory/{mid}").json()["content"] == BERLIN
    fake_llm._port = port
    fake_llm.start()
    deadline = time.monotonic() + 45
    while rows(rt, "SELECT status FROM memory_jobs WHERE memory_id = ?", mid)[0][0] != "completed":
        assert time.monotonic() < deadline, rows(rt, "SELECT status, error FROM memory_jobs")
        time.sleep(0.1)
    assert {a["attribute_value"] for a in attributes(rt)} == {"Berlin", "Rome"}


def test_shadow_mode_and_graph_off_build_nothing(pipeline_rt: Make, fake_llm: FakeLLM) -> None:
    fake_llm.extract = extract
    fake_llm.knowledge = knowledge
    rt, api = pipeline_rt("ollama", embedding="none", graph={"enabled": False})
    api.post("/api/memory/remember", json={"content": BERLIN})
    wait_idle(rt)
    assert fake_llm.calls("knowledge") == 0 and attributes(rt) == []


def _wait_jobs(c: httpx.Client, d: DaemonProcess, completed: int, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while True:
        q = c.get("/api/pipeline/status").json()["queue"]["by_status"]
        if q["completed"] >= completed:
            return
        assert time.monotonic() < deadline, (q, d.log.read_text()[-2000:])
        time.sleep(0.1)


def test_recall_over_http_returns_the_current_fact_first_and_marks_the_superseded(
    make_workspace: Callable[..., Workspace], fake_llm: FakeLLM, start_daemon: Callable[..., DaemonProcess]
) -> None:
    """A real daemon (uvicorn on loopback), the real embedding model, the fake Ollama."""
    fake_llm.extract = extract
    fake_llm.knowledge = knowledge
    ws = make_workspace(embedding="local", memory=pipeline_config(fake_llm))
    d = start_daemon(ws)
    d.wait_embedder()
    with d.client() as c:
        old = c.post("/api/memory/remember", json={"content": BERLIN_ONLY}).json()["id"]
        _wait_jobs(c, d, 1)
        new = c.post("/api/memory/remember", json={"content": PARIS}).json()["id"]
        _wait_jobs(c, d, 2)
        d.wait_embedder()
        for query in ("Where does Alice Moreau live?", "Alice Moreau Berlin"):
            r = c.post("/api/memory/recall", json={"query": query, "limit": 10, "min_score": 0})
            assert r.status_code == 200, r.text
            hits = r.json()["results"]
            ids = [h["id"] for h in hits]
            assert old in ids and new in ids, hits
            by_id = {h["id"]: h for h in hits}
            assert by_id[old]["superseded"] is True and by_id[old]["superseded_by"] == new
            assert by_id[new]["superseded"] is False and by_id[new]["current"] is True
            # the current fact comes first: every result stating Berlin ranks below the first stating Paris
            first_paris = next(i for i, h in enumerate(hits) if "Paris" in h["content"])
            assert first_paris == 0, [(h["content"], h["score"]) for h in hits]
            for i, h in enumerate(hits):
                if "Berlin" in h["content"]:
                    assert i > first_paris and h["superseded"] is True and h["superseded_by"] == new, h
        # A question about the past keeps its order and its marks.
        r = c.post("/api/memory/recall", json={"query": "Where did Alice Moreau live in 2020?", "min_score": 0})
        by_id = {h["id"]: h for h in r.json()["results"]}
        assert by_id[old]["superseded"] is True


def test_a_transcript_builds_from_its_facts_and_cites_the_fact_memory(pipeline_rt: Make, fake_llm: FakeLLM) -> None:
    """A transcript has no source memory: the builder reads the facts extracted from it, and an
    attribute cites the written fact that states its value (what recall leads to)."""
    fake_llm.extract = extract
    seen: list[str] = []

    def record(text: str, known: list[str]) -> str:
        seen.append(text)
        return knowledge(text, known)

    fake_llm.knowledge = record
    rt, api = pipeline_rt("ollama", embedding="none")
    body = {
        "path": "/tmp/kg-session.jsonl",
        "content_hash": "ab" * 32,
        "adapter": "claude-code",
        "session_id": "kg-session",
        "harness": "claude-code",
        "turns": [
            {"role": "user", "content": "Where does Alice Moreau live these days?"},
            {"role": "assistant", "content": "Alice Moreau lives in Berlin, she said so yesterday."},
        ],
    }
    assert api.post("/api/ingest/transcript", json=body).status_code == 200
    wait_idle(rt)
    assert seen == ["Alice Moreau lives in Berlin."]  # the extracted facts, not the raw turns
    fact = rows(rt, "SELECT id FROM memories WHERE source_type = 'pipeline' AND content = ?", seen[0])
    assert len(fact) == 1
    (city,) = [a for a in attributes(rt) if a["attribute_key"] == "city"]
    assert city["attribute_value"] == "Berlin" and city["source_memory_id"] == fact[0][0]


def test_the_current_memory_is_brought_in_only_where_the_filter_allows(pipeline_rt: Make, fake_llm: FakeLLM) -> None:
    """Keyword search finds only the old memory ("harbour"): the current one joins the results
    (source graph) above it; a project filter that excludes the current one leaves the old one
    marked, with no id to a memory the request may not read."""
    fake_llm.extract = extract
    fake_llm.knowledge = knowledge
    rt, api = pipeline_rt("ollama", embedding="none")
    old = api.post("/api/memory/remember", json={"content": BERLIN_ONLY, "project": "home"}).json()["id"]
    wait_idle(rt)
    new = api.post("/api/memory/remember", json={"content": PARIS, "project": "moves"}).json()["id"]
    wait_idle(rt)
    r = api.post("/api/memory/recall", json={"query": "harbour", "min_score": 0}).json()
    assert [h["id"] for h in r["results"][:2]] == [new, old], r["results"]
    assert r["results"][0]["source"] == "graph" and r["results"][0]["current"] is True
    assert r["results"][1]["superseded"] is True and r["results"][1]["superseded_by"] == new
    r = api.post("/api/memory/recall", json={"query": "harbour", "project": "home", "min_score": 0}).json()
    assert [h["id"] for h in r["results"]] == [old]
    assert r["results"][0]["superseded"] is True and r["results"][0]["superseded_by"] is None
    # graph reads off: the same store ranks by words alone and marks nothing
    rt.settings.memory.pipeline.graph.enabled = False
    try:
        r = api.post("/api/memory/recall", json={"query": "harbour", "min_score": 0}).json()
    finally:
        rt.settings.memory.pipeline.graph.enabled = True
    assert [h["id"] for h in r["results"]] == [old] and r["results"][0]["superseded"] is False
