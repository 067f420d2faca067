"""The pipeline end to end against a fake LLM server speaking the real protocols."""

from __future__ import annotations

import itertools
import json
import time
from collections.abc import Callable
from typing import Any

import pytest
from fastapi.testclient import TestClient

from signet.pipeline import queue
from signet.pipeline.worker import LeaseLost
from signet.runtime import Runtime
from tests.pipeline.conftest import rows, wait_idle
from tests.pipeline.fake_llm import FakeLLM, Reply, as_json

Make = Callable[..., tuple[Runtime, TestClient]]

SOURCE = (
    "Alice Moreau leads the billing team at Acme. For new services she prefers PostgreSQL over MySQL, "
    "and the team decided to deploy billing on Kubernetes."
)
FACTS = [
    {"content": "Alice Moreau leads the billing team at Acme", "type": "fact", "confidence": 0.95},
    {"content": "Alice Moreau prefers PostgreSQL over MySQL for new services", "type": "preference", "confidence": 0.9},
    {"content": "The billing team decided to deploy billing on Kubernetes", "type": "decision", "confidence": 0.85},
]
ENTITIES = [
    {"source": "Alice Moreau", "relationship": "leads", "target": "billing team", "confidence": 0.9},
    {"source": "Alice Moreau", "relationship": "prefers", "target": "PostgreSQL", "confidence": 0.8},
    {"source": "billing team", "relationship": "part of", "target": "Acme", "confidence": 0.7},
]


def remember(api: TestClient, content: str, **kw: Any) -> str:
    r = api.post("/api/memory/remember", json={"content": content, **kw})
    assert r.status_code == 200, r.text
    return str(r.json()["id"])


def history(api: TestClient, mid: str) -> list[dict[str, Any]]:
    r = api.get(f"/api/memory/{mid}/history")
    assert r.status_code == 200, r.text
    return list(r.json()["events"])


def job_of(rt: Runtime, mid: str) -> Any:
    found = rows(rt, "SELECT * FROM memory_jobs WHERE memory_id = ?", mid)
    assert len(found) == 1, found
    return found[0]


@pytest.mark.parametrize("provider", ["ollama", "openai"])
def test_extraction_and_decision_round_trip(
    pipeline_rt: Make, fake_llm: FakeLLM, provider: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    rt, api = pipeline_rt(provider)
    existing = remember(api, "Alice Moreau likes PostgreSQL for analytics work")
    wait_idle(rt)  # its own (empty) extraction
    decisions: list[tuple[str, list[str]]] = []

    def decide(fact: str, cands: list[tuple[str, str]]) -> str:
        decisions.append((fact, [c[0] for c in cands]))
        return as_json({"action": "add", "targetId": None, "confidence": 0.8, "reason": "new detail"})

    fake_llm.extract = lambda text: (
        as_json({"facts": FACTS, "entities": ENTITIES}) if "Acme" in text else as_json({"facts": [], "entities": []})
    )
    fake_llm.decide = decide
    src = remember(api, SOURCE)
    wait_idle(rt)

    job = job_of(rt, src)
    assert job["status"] == "completed" and job["attempts"] == 1
    result = json.loads(job["result"])
    assert result["facts"] == 3 and result["entities"] == 3 and len(result["writes"]["added"]) == 3
    # The decision LLM call ran where recall found candidates, and the candidates came from the
    # recall path (the existing memory), never the source memory itself.
    assert decisions and all(src not in ids for _, ids in decisions)
    assert any(existing in ids for _, ids in decisions)

    derived = rows(rt, "SELECT * FROM memories WHERE source_type = 'pipeline' ORDER BY content")
    assert sorted(d["content"] for d in derived) == sorted(f["content"] for f in FACTS)
    assert all(d["source_id"] == src and d["updated_by"] == "pipeline-v2" for d in derived)
    assert {d["type"] for d in derived} == {"fact", "preference", "decision"}
    assert rows(rt, "SELECT content FROM memories WHERE id = ?", src)[0][0] == SOURCE  # source untouched
    # Embedded before the write: the new facts have vectors at once and recall finds them.
    assert all(d["embedding_model"] for d in derived)
    hits = api.post("/api/memory/recall", json={"query": "Kubernetes deployment of billing"}).json()["results"]
    assert any(h["content"] == FACTS[2]["content"] for h in hits)

    # History: each derived memory's 'created' event carries the proposal.
    ev = history(api, derived[0]["id"])
    assert ev[0]["event"] == "created" and ev[0]["changed_by"] == "pipeline-v2"
    meta = ev[0]["metadata"]
    assert meta["proposedAction"] == "add" and meta["shadow"] is False and meta["jobId"] == job["id"]
    assert meta["fact"]["content"] == derived[0]["content"]

    # Graph: entities by canonical name, relations, mention links for source and facts.
    ents = {r["canonical_name"]: r for r in rows(rt, "SELECT * FROM entities")}
    assert {"alice moreau", "billing team", "postgresql", "acme"} <= set(ents)
    assert ents["alice moreau"]["mentions"] == 2
    rels = rows(
        rt,
        "SELECT s.canonical_name, r.relation_type, t.canonical_name, r.mentions FROM relations r"
        " JOIN entities s ON s.id = r.source_entity_id JOIN entities t ON t.id = r.target_entity_id",
    )
    assert ("alice moreau", "leads", "billing team", 1) in [tuple(r) for r in rels]
    linked = {
        r[0]
        for r in rows(
            rt, "SELECT memory_id FROM memory_entity_mentions WHERE entity_id = ?", ents["alice moreau"]["id"]
        )
    }
    assert src in linked and {d["id"] for d in derived if "Alice" in d["content"]} <= linked

    # Every call has an outcome record; the wire format is the provider's chat API.
    calls = rows(rt, "SELECT purpose, outcome, latency_ms FROM llm_calls")
    assert {c[0] for c in calls} >= {"extraction", "decision"} and all(c[1] == "success" for c in calls)
    req = fake_llm.requests[-1]
    if provider == "ollama":
        assert req["path"] == "/api/chat" and req["body"]["stream"] is False and req["body"]["format"] == "json"
        assert req["body"]["model"] == "qwen3:4b"
    else:
        assert req["path"] == "/v1/chat/completions" and req["body"]["model"] == "fake-model"
        assert req["headers"].get("Authorization") is None  # no key configured, none sent
    assert {r["protocol"] for r in fake_llm.requests} == {provider}

    # The inline linker: a new memory naming a known entity is linked at write time (no LLM).
    fake_llm.extract = lambda text: as_json({"facts": [], "entities": []})
    n_requests = len(fake_llm.requests)
    later = remember(api, "Acme renewed its contract today")
    assert (
        rows(
            rt,
            "SELECT COUNT(*) FROM memory_entity_mentions WHERE memory_id = ? AND entity_id = ?",
            later,
            ents["acme"]["id"],
        )[0][0]
        == 1
    )
    wait_idle(rt)
    assert len(fake_llm.requests) == n_requests + 1  # one extraction call, no decisions

    st = api.get("/api/pipeline/status").json()
    assert st["state"] == "running" and st["mode"] == "controlled" and st["provider"]["healthy"] is True
    assert st["queue"]["by_status"]["completed"] == 3 and st["provider"]["calls"]["outcomes"]["success"] >= 2


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_openai_and_anthropic_protocols(pipeline_rt: Make, fake_llm: FakeLLM, provider: str) -> None:
    rt, api = pipeline_rt(provider, embedding="none")
    fake_llm.extract = lambda text: as_json({"facts": [FACTS[1]], "entities": ENTITIES[1:2]})
    src = remember(api, SOURCE)
    wait_idle(rt)
    assert job_of(rt, src)["status"] == "completed"
    assert [r[0] for r in rows(rt, "SELECT content FROM memories WHERE source_type = 'pipeline'")] == [
        FACTS[1]["content"]
    ]
    req = fake_llm.requests[0]
    if provider == "openai":
        assert req["path"] == "/v1/chat/completions" and req["body"]["model"] == "fake-model"
    else:
        assert req["path"] == "/v1/messages" and req["headers"]["x-api-key"] == "test-key"
        assert req["body"]["max_tokens"] == 2048


def test_think_blocks_and_partially_valid_items(pipeline_rt: Make, fake_llm: FakeLLM) -> None:
    rt, api = pipeline_rt("ollama", embedding="none")
    payload = {
        "facts": [
            FACTS[0],
            {"content": "too short", "type": "fact", "confidence": 0.9},
            {"content": "The invoice exporter runs nightly at 02:00", "type": "gossip", "confidence": 0.9},
            {"content": "The invoice exporter writes CSV files", "type": "fact", "confidence": 7},
            "not an object",
            {"content": "The invoice exporter is owned by the billing team", "type": "semantic", "confidence": 0.8},
        ],
        "entities": [ENTITIES[0], {"source": "Acme", "relationship": "owns"}],
    }
    fake_llm.extract = lambda text: (
        '<think>The user wants JSON. {"facts": ["bait"]} Let me think.</think>\n'
        "Here you go:\n```json\n" + as_json(payload) + "\n```"
    )
    src = remember(api, SOURCE)
    wait_idle(rt)
    job = job_of(rt, src)
    result = json.loads(job["result"])
    assert job["status"] == "completed" and result["facts"] == 2 and result["entities"] == 1
    warnings = " | ".join(result["warnings"])
    for needle in (
        "facts[1] content length",
        "facts[2] has invalid type 'gossip'",
        "facts[3] confidence",
        "facts[4] is not an object",
        "entities[1] needs",
    ):
        assert needle in warnings, warnings
    assert len(rows(rt, "SELECT id FROM memories WHERE source_type = 'pipeline'")) == 2


def test_malformed_json_and_rejected_decisions(pipeline_rt: Make, fake_llm: FakeLLM) -> None:
    rt, api = pipeline_rt("ollama", embedding="none")
    fake_llm.extract = lambda text: "Sure! facts: alice likes postgres"
    src = remember(api, SOURCE)
    wait_idle(rt)
    job = job_of(rt, src)
    assert job["status"] == "completed"
    assert "no JSON object" in json.loads(job["result"])["warnings"][0]
    assert rows(rt, "SELECT COUNT(*) FROM memories WHERE source_type = 'pipeline'")[0][0] == 0

    # Decisions: not JSON, a non-candidate target, a missing reason -> rejected, recorded, nothing written.
    target = remember(api, "Alice Moreau leads the payments team at Acme")
    wait_idle(rt)
    replies = iter(
        [
            "{not json",
            as_json(
                {
                    "action": "update",
                    "targetId": "00000000-0000-0000-0000-000000000000",
                    "confidence": 0.9,
                    "reason": "x",
                }
            ),
            as_json({"action": "update", "targetId": target, "confidence": 0.9}),
        ]
    )
    fake_llm.extract = lambda text: as_json(
        {
            "facts": [
                {"content": f"Alice Moreau leads the billing team at Acme ({i})", "type": "fact", "confidence": 0.9}
                for i in range(3)
            ],
            "entities": [],
        }
    )
    fake_llm.decide = lambda fact, cands: next(replies)
    src2 = remember(api, "Alice Moreau moved from payments to lead the billing team at Acme")
    wait_idle(rt)
    result = json.loads(job_of(rt, src2)["result"])
    assert result["writes"]["rejected"] == 3 and result["writes"]["added"] == []
    joined = " | ".join(result["warnings"])
    assert "not valid JSON" in joined and "not one of the candidates" in joined and "'reason' is required" in joined
    notes = [e for e in history(api, src2) if e["event"] == "none"]
    assert len(notes) == 3 and all(e["metadata"]["skippedReason"] == "rejected decision" for e in notes)
    assert (
        rows(rt, "SELECT content FROM memories WHERE id = ?", target)[0][0]
        == "Alice Moreau leads the payments team at Acme"
    )


def test_timeout_is_recorded_and_the_job_retries(pipeline_rt: Make, fake_llm: FakeLLM) -> None:
    rt, api = pipeline_rt("ollama", embedding="none", extraction={"timeout": 0.3})
    attempts = {"n": 0}

    def extract(text: str) -> Reply | str:
        attempts["n"] += 1
        if attempts["n"] == 1:
            return Reply(text=as_json({"facts": [FACTS[0]], "entities": []}), delay=1.0)
        return as_json({"facts": [FACTS[0]], "entities": []})

    fake_llm.extract = extract
    src = remember(api, SOURCE)
    wait_idle(rt)
    job = job_of(rt, src)
    assert job["status"] == "completed" and job["attempts"] == 2
    outcomes = [r[0] for r in rows(rt, "SELECT outcome FROM llm_calls WHERE job_id = ? ORDER BY id", job["id"])]
    assert outcomes == ["timeout", "success", "success"]  # extraction timed out; extraction, knowledge
    assert len(rows(rt, "SELECT id FROM memories WHERE source_type = 'pipeline'")) == 1


def wait_status(rt: Runtime, mid: str, status: str, timeout: float = 30.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        job = job_of(rt, mid)
        if job["status"] == status:
            return job
        if time.monotonic() > deadline:
            raise AssertionError(f"job is {job['status']} ({job['error']}), not {status}")
        time.sleep(0.05)


def test_provider_down_jobs_wait_then_drain(pipeline_rt: Make, fake_llm: FakeLLM) -> None:
    """An unreachable provider is not a job failure: the job waits, no attempt is spent, and it
    runs when the provider answers again (the next probe, at most 15 s later)."""
    port = fake_llm.port
    fake_llm.stop()  # before the daemon's first probe: no kept-alive connection outlives the server
    rt, api = pipeline_rt("ollama", embedding="none")
    src = remember(api, SOURCE)
    job = wait_status(rt, src, "waiting_for_provider")
    assert job["attempts"] == 0 and rows(rt, "SELECT id FROM llm_calls") == []  # no call against a dead server
    st = api.get("/api/pipeline/status").json()
    assert st["state"] == "waiting" and st["waiting_for"] == "waiting_for_provider"
    assert "ollama is not reachable" in st["reason"] and st["provider"]["healthy"] is False
    assert st["queue"]["dead"] == 0 and st["queue"]["waiting"] == 1 and st["worker"]["failed"] == 0
    diag = api.get("/api/diagnostics").json()["domains"]["queue"]
    assert any("none will run" in f and "not reachable" in f for f in diag["findings"]) and diag["score"] < 1
    # Remember and recall keep working while the provider is down.
    hits = api.post("/api/memory/recall", json={"query": "PostgreSQL"}).json()["results"]
    assert [h["id"] for h in hits] == [src]

    fake_llm._port = port
    fake_llm.start()
    fake_llm.extract = lambda text: as_json({"facts": [FACTS[0]], "entities": []})
    job = wait_status(rt, src, "completed", timeout=40)
    assert job["attempts"] == 1
    st = api.get("/api/pipeline/status").json()
    assert st["state"] == "running" and st["provider"]["healthy"] is True and st["reason"] is None


def test_failing_provider_backoff_dead_then_requeue(pipeline_rt: Make, fake_llm: FakeLLM) -> None:
    """A provider that answers with errors fails the job's attempts, with backoff, into dead."""
    rt, api = pipeline_rt("ollama", embedding="none")
    fake_llm.extract = lambda text: Reply(status=500)
    src = remember(api, SOURCE)
    counts = wait_idle(rt)
    assert counts == {"dead": 1}
    job = job_of(rt, src)
    assert job["attempts"] == 3 and "HTTP 500" in job["error"]
    # Three failed calls, spaced by growing backoff (50 ms, 100 ms base steps + jitter).
    stamps = [r[0] for r in rows(rt, "SELECT created_at FROM llm_calls WHERE job_id = ? ORDER BY id", job["id"])]
    assert len(stamps) == 3
    from datetime import datetime

    gaps = [
        (datetime.fromisoformat(b) - datetime.fromisoformat(a)).total_seconds() for a, b in itertools.pairwise(stamps)
    ]
    assert gaps[0] >= 0.05 and gaps[1] >= 0.1
    outcomes = {r[0] for r in rows(rt, "SELECT outcome FROM llm_calls")}
    assert outcomes == {"failure"}
    st = api.get("/api/pipeline/status").json()
    assert st["queue"]["dead"] == 1 and "HTTP 500" in st["queue"]["last_error"]
    prov = api.get("/api/diagnostics/provider").json()
    assert prov["metrics"]["llm_recent_outcomes"] == {"failure": 3}
    assert any("LLM calls succeeded" in f for f in prov["findings"])

    # The provider is fixed; the operator requeues the dead job and it completes.
    fake_llm.extract = lambda text: as_json({"facts": [FACTS[0]], "entities": []})
    listed = api.get("/api/pipeline/jobs", params={"status": "dead"}).json()
    assert listed["total"] == 1 and listed["items"][0]["id"] == job["id"]
    r = api.post("/api/repair/requeue-dead", json={})
    assert r.status_code == 200 and r.json()["requeued"] == [job["id"]]
    assert wait_idle(rt) == {"completed": 1}
    assert api.get(f"/api/pipeline/jobs/{job['id']}").json()["status"] == "completed"
    st = api.get("/api/pipeline/status").json()
    assert st["state"] == "running" and st["provider"]["healthy"] is True and st["reason"] is None
    assert api.get("/api/pipeline/jobs/nope").status_code == 404
    assert api.post("/api/repair/requeue-dead", json={"limit": 0}).status_code in (400, 422)
    assert api.get("/api/pipeline/jobs", params={"status": "waiting_for_budget"}).json()["total"] == 0
    assert api.get("/api/pipeline/jobs", params={"status": "bogus"}).status_code == 422


def test_shadow_mode_writes_only_history(pipeline_rt: Make, fake_llm: FakeLLM) -> None:
    rt, api = pipeline_rt("ollama", embedding="none", shadowMode=True)
    target = remember(api, "Alice Moreau leads the payments team at Acme")
    wait_idle(rt)
    before = rows(rt, "SELECT COUNT(*) FROM memories")[0][0]
    fake_llm.extract = lambda text: (
        as_json({"facts": FACTS[:2], "entities": ENTITIES})
        if "billing" in text
        else as_json({"facts": [], "entities": []})
    )
    fake_llm.decide = lambda fact, cands: as_json(
        {"action": "update", "targetId": target, "confidence": 0.9, "reason": "team changed"}
    )
    src = remember(api, SOURCE)
    wait_idle(rt)
    assert rows(rt, "SELECT COUNT(*) FROM memories")[0][0] == before + 1  # only the remembered one
    assert rows(rt, "SELECT COUNT(*) FROM entities")[0][0] == 0
    shadow = rows(rt, "SELECT memory_id, metadata FROM memory_history WHERE changed_by = 'pipeline-shadow'")
    assert len(shadow) == 2
    metas = [json.loads(s[1]) for s in shadow]
    assert all(m["shadow"] is True for m in metas)
    assert {m["proposedAction"] for m in metas} <= {"add", "update"}
    upd = [(s[0], m) for s, m in zip(shadow, metas, strict=True) if m["proposedAction"] == "update"]
    assert upd and upd[0][0] == target and upd[0][1]["targetMemoryId"] == target
    assert rows(rt, "SELECT content, version FROM memories WHERE id = ?", target)[0][1] == 1
    events = [e["event"] for e in history(api, src)]
    assert events[0] == "created"
    assert api.get("/api/pipeline/status").json()["mode"] == "shadow"


def test_frozen_mutations_keep_jobs_waiting(pipeline_rt: Make, fake_llm: FakeLLM) -> None:
    rt, api = pipeline_rt("ollama", embedding="none", mutationsFrozen=True)
    src = remember(api, SOURCE)
    import time

    time.sleep(0.4)  # several poll intervals
    assert job_of(rt, src)["status"] == "pending" and fake_llm.requests == []
    st = api.get("/api/pipeline/status").json()
    assert st["state"] == "waiting" and st["mode"] == "frozen" and "frozen" in st["reason"]
    assert st["queue"]["by_status"]["pending"] == 1


def _seed_update_delete(api: TestClient, fake_llm: FakeLLM) -> tuple[str, str, str]:
    staging = remember(api, "The staging server runs on host alpha-7")
    deploys = remember(api, "Deploys of the billing service happen every Friday afternoon")
    pinned = remember(api, "critical: The billing service on-call rotation is weekly")
    facts = [
        {"content": "The staging server runs on host beta-3", "type": "fact", "confidence": 0.9},
        {"content": "Deploys of the billing service happen every Tuesday", "type": "fact", "confidence": 0.9},
        {"content": "The billing service on-call rotation is now fortnightly", "type": "fact", "confidence": 0.9},
    ]
    plan = {
        facts[0]["content"]: ("update", staging),
        facts[1]["content"]: ("delete", deploys),
        facts[2]["content"]: ("delete", pinned),
    }
    fake_llm.extract = lambda text: (
        as_json({"facts": facts, "entities": []}) if "moved" in text else as_json({"facts": [], "entities": []})
    )

    def decide(fact: str, cands: list[tuple[str, str]]) -> str:
        action, target = plan[fact]
        assert target in [c[0] for c in cands], (fact, cands)
        return as_json({"action": action, "targetId": target, "confidence": 0.9, "reason": "superseded"})

    fake_llm.decide = decide
    return staging, deploys, pinned


def test_update_and_delete_blocked_by_default(pipeline_rt: Make, fake_llm: FakeLLM) -> None:
    rt, api = pipeline_rt("ollama", embedding="none")
    staging, deploys, pinned = _seed_update_delete(api, fake_llm)
    wait_idle(rt)
    remember(api, "We moved staging to host beta-3 and deploys to Tuesdays; on-call is fortnightly")
    wait_idle(rt)
    for mid in (staging, deploys, pinned):
        row = rows(rt, "SELECT version, is_deleted FROM memories WHERE id = ?", mid)[0]
        assert tuple(row) == (1, 0)
        blocked = [e for e in history(api, mid) if e["event"] == "none"]
        assert len(blocked) == 1 and blocked[0]["metadata"]["blockedReason"] == "allowUpdateDelete is off"
        assert blocked[0]["changed_by"] == "pipeline-v2"


def test_update_and_delete_applied_when_allowed(pipeline_rt: Make, fake_llm: FakeLLM) -> None:
    rt, api = pipeline_rt("ollama", embedding="none", allowUpdateDelete=True)
    staging, deploys, pinned = _seed_update_delete(api, fake_llm)
    wait_idle(rt)
    remember(api, "We moved staging to host beta-3 and deploys to Tuesdays; on-call is fortnightly")
    wait_idle(rt)
    row = rows(rt, "SELECT content, version FROM memories WHERE id = ?", staging)[0]
    assert tuple(row) == ("The staging server runs on host beta-3", 2)
    mod = next(e for e in history(api, staging) if e["event"] == "modified")
    assert mod["old_content"] == "The staging server runs on host alpha-7" and mod["changed_by"] == "pipeline-v2"
    assert mod["metadata"]["proposedAction"] == "update" and mod["metadata"]["applied"] is True
    assert rows(rt, "SELECT is_deleted FROM memories WHERE id = ?", deploys)[0][0] == 1
    deleted = next(e for e in history(api, deploys) if e["event"] == "deleted")
    assert deleted["metadata"]["proposedAction"] == "delete" and deleted["metadata"]["hard"] is False
    # Pinned memories are never deleted by the pipeline.
    assert rows(rt, "SELECT is_deleted FROM memories WHERE id = ?", pinned)[0][0] == 0
    note = next(e for e in history(api, pinned) if e["event"] == "none")
    assert "pinned" in note["metadata"]["blockedReason"]


def test_contradictions_are_flagged_for_review(pipeline_rt: Make, fake_llm: FakeLLM) -> None:
    rt, api = pipeline_rt("ollama", embedding="none", allowUpdateDelete=True)
    dark = remember(api, "Dark mode is enabled in the billing dashboard")
    auth = remember(api, "The export API requires auth tokens for every call")
    wait_idle(rt)
    facts = [
        {"content": "Dark mode is disabled in the billing dashboard", "type": "fact", "confidence": 0.9},
        {"content": "The export API does not require auth tokens", "type": "fact", "confidence": 0.9},
    ]
    targets = {facts[0]["content"]: dark, facts[1]["content"]: auth}
    fake_llm.extract = lambda text: as_json({"facts": facts, "entities": []})
    fake_llm.decide = lambda fact, cands: as_json(
        {"action": "update", "targetId": targets[fact], "confidence": 0.9, "reason": "changed"}
    )
    remember(api, "Settings review: dark mode got switched off and the export API dropped its token check")
    wait_idle(rt)
    for mid, why in ((dark, "antonyms enabled/disabled"), (auth, "negation asymmetry")):
        assert rows(rt, "SELECT version FROM memories WHERE id = ?", mid)[0][0] == 1
        note = next(e for e in history(api, mid) if e["event"] == "none")["metadata"]
        assert note["contradictionRisk"] is True and note["reviewNeeded"] is True
        assert note["contradictionReason"] == why and note["blockedReason"] == "contradiction risk: needs review"


def test_confidence_threshold_and_dedup(pipeline_rt: Make, fake_llm: FakeLLM) -> None:
    rt, api = pipeline_rt("ollama", embedding="none", minFactConfidenceForWrite=0.8)
    existing = remember(api, "Alice Moreau prefers PostgreSQL over MySQL for new services.")
    wait_idle(rt)
    fake_llm.extract = lambda text: as_json(
        {
            "facts": [
                {
                    "content": "alice moreau prefers postgresql over mysql for new services",
                    "type": "preference",
                    "confidence": 0.95,
                },
                {"content": "Alice Moreau might enjoy hiking on weekends", "type": "fact", "confidence": 0.4},
            ],
            "entities": [],
        }
    )
    fake_llm.decide = lambda fact, cands: as_json(
        {"action": "add", "targetId": None, "confidence": 0.9, "reason": "looks new"}
    )
    src = remember(api, SOURCE)
    wait_idle(rt)
    result = json.loads(job_of(rt, src)["result"])["writes"]
    assert result["deduped"] == [existing] and result["added"] == [] and result["skipped"] == 1
    dedup = next(e for e in history(api, existing) if e["event"] == "none")["metadata"]
    assert dedup["dedupedExistingId"] == existing
    skipped = next(e for e in history(api, src) if e["event"] == "none")["metadata"]
    assert "below minFactConfidenceForWrite" in skipped["skippedReason"]


def test_provider_none_keeps_memory_working(make_workspace: Callable[..., Any]) -> None:
    from tests.conftest import start_runtime

    ws = make_workspace(embedding="none")  # the shared default: provider none
    rt = start_runtime(ws)
    try:
        from signet.daemon.app import create_app

        with TestClient(create_app(rt, manage_runtime=False)) as api:
            mid = remember(api, "The release train leaves every second Thursday")
            hits = api.post("/api/memory/recall", json={"query": "release train"}).json()["results"]
            assert [h["id"] for h in hits] == [mid]
            wait_status(rt, mid, "waiting_for_provider")
            st = api.get("/api/pipeline/status").json()
            assert st["state"] == "waiting" and "waiting for a provider" in st["reason"]
            assert st["provider"]["name"] == "none" and st["provider"]["healthy"] is False
            assert st["queue"]["by_status"]["waiting_for_provider"] == 1 and st["queue"]["by_status"]["pending"] == 0
    finally:
        rt.stop()


def test_transcript_jobs_and_llm_handoff(pipeline_rt: Make, fake_llm: FakeLLM) -> None:
    rt, api = pipeline_rt("ollama", embedding="none")
    seen: list[str] = []

    def extract(text: str) -> str:
        seen.append(text)
        return as_json(
            {
                "facts": [
                    {
                        "content": "The invoice exporter is the next task for billing",
                        "type": "decision",
                        "confidence": 0.9,
                    }
                ],
                "entities": [],
            }
        )

    fake_llm.extract = extract
    fake_llm.summarize = lambda prompt: "<think>hmm</think>- Next: the invoice exporter"
    turns = [
        {"role": "user", "content": "Next time, start with the invoice exporter."},
        {"role": "assistant", "content": "Noted: the invoice exporter is next."},
    ]
    r = api.post(
        "/api/hooks/session-end",
        json={"harness": "claude-code", "session_id": "s-9", "project": "billing", "turns": turns},
    )
    assert r.status_code == 200, r.text
    wait_idle(rt)
    assert seen and "user: Next time, start with the invoice exporter." in seen[0]
    derived = rows(rt, "SELECT source_id, project FROM memories WHERE source_type = 'pipeline'")
    assert [tuple(d) for d in derived] == [("claude-code:s-9", "billing")]
    import time

    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        h = rows(rt, "SELECT kind, content FROM session_handoffs WHERE session_key = 'claude-code:s-9'")
        if h and h[0][0] == "summary":
            break
        time.sleep(0.05)
    assert tuple(h[0]) == ("summary", "- Next: the invoice exporter")


def test_no_llm_call_runs_while_the_write_lock_is_held(pipeline_rt: Make, fake_llm: FakeLLM) -> None:
    """During every LLM call another connection can take the write lock at once: no write
    transaction is open around a model call."""
    # The runtime's own SQLite library: a second copy of SQLite in one process (the standard
    # library's) closing a connection drops the other's POSIX locks on the file and can truncate
    # the -shm file it has mapped (a SIGBUS was seen in CI from such a test).
    from signet.store.sqlite import sqlite3

    rt, api = pipeline_rt("ollama", embedding="none")
    remember(api, "Alice Moreau leads the payments team at Acme")
    wait_idle(rt)
    probes: list[str] = []

    def probe() -> None:
        # A few tries over half a second: a lock held around this call stays held for all of
        # them, while another thread's short write of its own (the keyword log's trim, a
        # history row) may hold it at one instant (CI dry run #18 saw one such instant).
        conn = sqlite3.connect(rt.db_path, timeout=0, isolation_level=None)
        try:
            for _ in range(10):
                try:
                    conn.execute("BEGIN IMMEDIATE")
                    conn.execute("ROLLBACK")
                    probes.append("free")
                    return
                except sqlite3.OperationalError as exc:
                    error = str(exc)
                time.sleep(0.05)
            probes.append(f"locked: {error}")
        finally:
            conn.close()

    def extract(text: str) -> str:
        probe()
        return as_json({"facts": FACTS, "entities": ENTITIES})

    def decide(fact: str, cands: list[tuple[str, str]]) -> str:
        probe()
        return as_json({"action": "add", "targetId": None, "confidence": 0.9, "reason": "new"})

    fake_llm.extract, fake_llm.decide = extract, decide
    remember(api, SOURCE)
    wait_idle(rt)
    assert len(probes) >= 2 and set(probes) == {"free"}, probes


def test_a_failing_embedder_still_writes_the_fact(make_workspace: Callable[..., Any], fake_llm: FakeLLM) -> None:
    from signet.daemon.app import create_app
    from tests.conftest import start_runtime, write_config
    from tests.core.fake_embedder import FakeEmbeddingServer
    from tests.pipeline.conftest import pipeline_config

    with FakeEmbeddingServer() as emb:
        ws = make_workspace(embedding="ollama", memory=pipeline_config(fake_llm))
        write_config(
            ws, embedding={"provider": "ollama", "model": "nomic-embed-text", "base_url": emb.url, "timeout": 1}
        )
        rt = start_runtime(ws)
        try:
            with TestClient(create_app(rt, manage_runtime=False)) as api:
                assert rt.embeddings.ready
                fact_embedded: list[bool] = []
                remember(api, "Alice Moreau leads the payments team at Acme")
                wait_idle(rt)
                rt.embeddings.wait_idle(30)
                fake_llm.extract = lambda text: as_json({"facts": [FACTS[0]], "entities": []})

                def decide(fact: str, cands: list[tuple[str, str]]) -> str:
                    emb.mode = "down500"  # the embedder breaks after the candidates, before the fact write
                    return as_json({"action": "add", "targetId": None, "confidence": 0.9, "reason": "new"})

                fake_llm.decide = decide
                src = remember(api, SOURCE)
                wait_idle(rt)
                job = job_of(rt, src)
                writes = json.loads(job["result"])["writes"]
                assert job["status"] == "completed" and len(writes["added"]) == 1
                assert writes["embedding_errors"] and "500" in writes["embedding_errors"][0]
                fact = rows(rt, "SELECT embedding_model FROM memories WHERE id = ?", writes["added"][0])[0]
                fact_embedded.append(fact[0] is not None)
                assert fact_embedded == [False]  # written without a vector; keyword search finds it
                # (keyword-only: with this embedder down, a hybrid /recall currently answers 500 - core issue)
                hits = api.post("/api/memory/recall", json={"query": "billing team Acme", "alpha": 0}).json()["results"]
                assert writes["added"][0] in [h["id"] for h in hits]
        finally:
            rt.stop()


def test_graph_failure_never_reverts_the_facts(pipeline_rt: Make, fake_llm: FakeLLM) -> None:
    rt, api = pipeline_rt("ollama", embedding="none")
    # A real failure in the graph transaction: its table is gone.
    rt.db.write(lambda c: c.execute("DROP TABLE relations"))
    fake_llm.extract = lambda text: as_json({"facts": FACTS[:2], "entities": ENTITIES})
    src = remember(api, SOURCE)
    wait_idle(rt)
    job = job_of(rt, src)
    result = json.loads(job["result"])
    # the error names the missing table (SQLite: "no such table: relations"; PostgreSQL:
    # 'relation "relations" does not exist')
    assert job["status"] == "completed" and "relations" in result["graph_error"]
    assert len(result["writes"]["added"]) == 2
    assert rows(rt, "SELECT COUNT(*) FROM memories WHERE source_type = 'pipeline'")[0][0] == 2
    assert rows(rt, "SELECT COUNT(*) FROM entities")[0][0] == 0  # the graph transaction rolled back whole


def test_a_run_whose_lease_was_taken_over_applies_no_graph(pipeline_rt: Make, fake_llm: FakeLLM) -> None:
    """Run A's lease expires and run B leases the job again: A's final transaction (graph,
    extraction status, completion) rolls back whole, B's applies once, and A cannot fail B's job."""
    rt, api = pipeline_rt("ollama", embedding="none", workers=0)  # no worker thread: the test drives the runs
    fake_llm.extract = lambda text: as_json({"facts": FACTS[:2], "entities": ENTITIES})
    fake_llm.decide = lambda fact, cands: as_json(
        {"action": "add", "targetId": None, "confidence": 0.9, "reason": "new"}
    )
    src = remember(api, SOURCE)
    run_a = rt.db.write(queue.lease)
    assert run_a is not None and run_a.attempts == 1
    rt.db.write(lambda c: c.execute("UPDATE memory_jobs SET leased_at = '2000-01-01T00:00:00+00:00'"))
    assert rt.db.write(lambda c: queue.reap_stale(c, 1000)) == 1
    run_b = rt.db.write(queue.lease)
    assert run_b is not None and run_b.id == run_a.id and run_b.attempts == 2
    processor = rt.pipeline.worker.processor
    assert processor is not None

    with pytest.raises(LeaseLost):
        processor.run(run_a)
    assert rows(rt, "SELECT COUNT(*) FROM entities")[0][0] == 0
    assert tuple(rows(rt, "SELECT status, attempts FROM memory_jobs")[0]) == ("leased", 2)
    assert rows(rt, "SELECT extraction_status FROM memories WHERE id = ?", src)[0][0] != "completed"
    assert rt.db.write(lambda c: queue.fail(c, run_a.id, "late failure of run A", attempt=1)) is None

    result = processor.run(run_b)
    assert result["graph"] == {"entities": 4, "relations": 3, "mentions": 9}  # source 4 + facts 3 and 2
    job = job_of(rt, src)
    assert job["status"] == "completed" and job["attempts"] == 2 and job["error"] is None
    ents = dict(rows(rt, "SELECT canonical_name, mentions FROM entities"))
    assert ents == {"alice moreau": 2, "billing team": 2, "postgresql": 1, "acme": 1}
    assert {r[0] for r in rows(rt, "SELECT mentions FROM relations")} == {1}
    # Run A's facts were written before its lease was lost: run B finds them stored and links them.
    facts = rows(rt, "SELECT id FROM memories WHERE source_type = 'pipeline'")
    assert len(facts) == 2 and len(result["writes"]["deduped"]) == 2
    linked = {r[0] for r in rows(rt, "SELECT memory_id FROM memory_entity_mentions")}
    assert {f[0] for f in facts} | {src} <= linked


def test_long_transcripts_are_extracted_chunk_by_chunk(pipeline_rt: Make, fake_llm: FakeLLM) -> None:
    rt, api = pipeline_rt("ollama", embedding="none")
    seen: list[str] = []

    def extract(text: str) -> str:
        seen.append(text)
        n = len(seen)
        return as_json(
            {
                "facts": [{"content": f"Chunk {n} decision about the exporter", "type": "decision", "confidence": 0.9}],
                "entities": [],
            }
        )

    fake_llm.extract = extract
    turns = [
        {"role": "user" if i % 2 == 0 else "assistant", "content": f"turn {i} " + "detail " * 150} for i in range(30)
    ]
    r = api.post("/api/hooks/session-end", json={"harness": "codex", "session_id": "long-1", "turns": turns})
    assert r.status_code == 200, r.text
    wait_idle(rt)
    assert len(seen) >= 2 and all(len(t) <= 12_000 and "[truncated]" not in t for t in seen)
    assert "turn 29" in seen[-1] and "turn 0 " in seen[0]
    assert rows(rt, "SELECT COUNT(*) FROM memories WHERE source_type = 'pipeline'")[0][0] == len(seen)


def test_diagnostics_name_the_llm_and_why_it_waits(pipeline_rt: Make) -> None:
    _rt, api = pipeline_rt("ollama", embedding="none", mutationsFrozen=True)
    llm = api.get("/api/diagnostics/provider").json()["metrics"]["llm"]
    assert llm["provider"] == "ollama" and llm["model"] == "qwen3:4b" and "frozen" in llm["waiting"]
