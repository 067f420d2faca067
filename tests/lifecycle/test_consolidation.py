"""Consolidation on a seeded store (docs/lifecycle.md): the real app, the real embedding model,
a fake Ollama on 127.0.0.1 for tier 2. A dry-run's plan is exactly what applying it changes;
every merged memory links its sources; undo restores them; isolation and pins hold."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from fastapi.testclient import TestClient

from signet.runtime import Runtime
from signet.workspace import Workspace
from tests.auth.conftest import bearer, configure, token_for
from tests.conftest import DaemonProcess, free_port, wait_embedder
from tests.lifecycle.test_surfaces import cli
from tests.pipeline.conftest import pipeline_config
from tests.pipeline.fake_llm import FakeLLM, Reply, as_json

OLD = (datetime.now(UTC) - timedelta(days=200)).isoformat()

DEPLOYS = [
    "Production deploys happen on Tuesday afternoons",
    "We deploy to production every Tuesday afternoon",
    "Deploys to production go out on Tuesday afternoons after lunch",
]
MERGED = "Production deploys go out every Tuesday afternoon, after lunch"


@pytest.fixture
def fake_llm() -> Iterator[FakeLLM]:
    f = FakeLLM().start()
    yield f
    f.stop()


def consolidation(**over: Any) -> dict[str, Any]:
    return {"duplicate_threshold": 0.95, "merge_threshold": 0.7, **over}


@pytest.fixture
def app(
    make_workspace: Callable[..., Workspace],
    fake_llm: FakeLLM,
    open_app: Callable[[Workspace], tuple[Runtime, TestClient]],
) -> tuple[Runtime, TestClient]:
    memory = {**pipeline_config(fake_llm, enabled=False), "consolidation": consolidation()}
    rt, client = open_app(make_workspace(memory=memory))
    wait_embedder(rt)
    return rt, client


def remember(c: TestClient, content: str, **kw: Any) -> str:
    r = c.post("/api/memory/remember", json={"content": content, **kw})
    assert r.status_code == 200, r.text
    return str(r.json()["id"])


def seed(c: TestClient) -> dict[str, Any]:
    """A store with one of everything consolidation acts on, and everything it must leave alone."""
    ids: dict[str, Any] = {}
    ids["kept"] = remember(c, "The staging database runs on port 5432", type="fact")
    ids["dup"] = remember(c, "The staging database runs on port 5432.  Yes", type="fact")
    # the same text for another agent and as a private memory: other owners, never compared
    ids["other_agent"] = remember(c, "The staging database runs on port 5432 too", type="fact", agent_id="bob")
    ids["private"] = remember(c, "The staging database runs on port 5432 !", type="fact", visibility="private")
    ids["pinned"] = remember(c, "Never force-push to the main branch", type="rule", pinned=True)
    ids["pinned_dup"] = remember(c, "Never force push to the main branch", type="rule")
    ids["expired"] = remember(c, "Debugged a flaky login test this morning", type="episodic", created_at=OLD)
    ids["old_pinned_episode"] = remember(
        c, "The day we shipped version one", type="episodic", created_at=OLD, pinned=True
    )
    ids["todo"] = remember(c, "Rotate the API keys", tags=["todo"], type="fact", created_at=OLD)
    ids["deploys"] = [remember(c, d, type="decision") for d in DEPLOYS]
    ids["unrelated"] = remember(c, "The office plant needs water on Fridays", type="decision")
    return ids


def embedded(rt: Runtime, timeout: float = 60.0) -> None:
    """Wait until the background embedder has a vector for every live memory."""
    deadline = time.monotonic() + timeout
    sql = "SELECT COUNT(*) FROM memories WHERE is_deleted = 0 AND embedding_model IS NULL"
    while rt.db.read(lambda c: c.execute(sql).fetchone()[0]):
        assert time.monotonic() < deadline, "memories still without a vector"
        time.sleep(0.05)


def live(rt: Runtime) -> set[str]:
    return {r[0] for r in rt.db.read(lambda c: c.execute("SELECT id FROM memories WHERE is_deleted = 0").fetchall())}


def history(rt: Runtime, mid: str) -> list[tuple[str, dict[str, Any]]]:
    rows = rt.db.read(
        lambda c: c.execute(
            "SELECT event, metadata FROM memory_history WHERE memory_id = ? ORDER BY created_at, rowid", (mid,)
        ).fetchall()
    )
    return [(r[0], json.loads(r[1] or "{}")) for r in rows]


def script_merge(fake: FakeLLM, text: str = MERGED) -> list[list[str]]:
    asked: list[list[str]] = []

    def answer(mems: list[tuple[str, str]]) -> str:
        asked.append([i for i, _ in mems])
        return as_json({"merge": True, "content": text, "reason": "the same deploy day"})

    fake.consolidate = answer
    return asked


def test_dry_run_plan_is_what_apply_changes_and_undo_restores(
    app: tuple[Runtime, TestClient], fake_llm: FakeLLM
) -> None:
    rt, c = app
    ids = seed(c)
    embedded(rt)
    asked = script_merge(fake_llm)
    before = live(rt)

    dry = c.post("/api/memory/consolidate", json={"dry_run": True})
    assert dry.status_code == 200, dry.text
    planned = dry.json()
    assert planned["status"] == "planned" and live(rt) == before  # a dry-run changes nothing
    assert planned["plan"]["tier2"] == "ran"
    kinds = {(a["kind"], tuple(a["retire"])) for a in planned["plan"]["actions"]}
    assert ("duplicate", (ids["dup"],)) in kinds
    assert ("expired", (ids["expired"],)) in kinds and ("stale_todo", (ids["todo"],)) in kinds
    merge = next(a for a in planned["plan"]["actions"] if a["kind"] == "merge")
    assert sorted(merge["retire"]) == sorted(ids["deploys"]) and merge["content"] == MERGED
    assert asked == [merge["retire"]]  # the model saw exactly the cluster it merged
    retired = {i for a in planned["plan"]["actions"] for i in a["retire"]}
    # isolation and pins: never retired, never compared across owners
    for keep in ("kept", "other_agent", "private", "pinned", "old_pinned_episode", "unrelated"):
        assert ids[keep] not in retired, keep
    pinned_action = next(a for a in planned["plan"]["actions"] if ids["pinned_dup"] in a["retire"])
    assert pinned_action["keep"] == ids["pinned"]

    applied = c.post("/api/memory/consolidate", json={"plan_id": planned["id"]})
    assert applied.status_code == 200, applied.text
    done = applied.json()
    assert done["status"] == "applied" and done["id"] == planned["id"]
    assert done["plan"] == planned["plan"]  # the plan applied is the plan shown, as data
    after = live(rt)
    created = set(done["created"].values())
    assert before - after == retired  # exactly the planned retirements ...
    assert after - before == created and len(created) == 1  # ... and exactly the planned merge
    merged_id = created.pop()
    merged = c.get(f"/api/memory/{merged_id}").json()
    assert merged["content"] == MERGED and merged["type"] == "decision" and merged["source_type"] == "consolidation"
    sources = c.get(f"/api/memory/{merged_id}/sources").json()["sources"]
    assert sorted(s["source_id"] for s in sources) == sorted(ids["deploys"])
    assert all(s["is_deleted"] for s in sources)
    embedded(rt)  # the merged memory gets its vector in the background, and is found by meaning
    found = c.post("/api/memory/recall", json={"query": "what day are production deploys", "limit": 3}).json()
    assert found["results"][0]["id"] == merged_id
    for mid in retired:
        events = history(rt, mid)
        assert any(e == "deleted" and m.get("consolidation_run") == planned["id"] for e, m in events), mid
    assert any(e == "consolidated" for e, _ in history(rt, ids["kept"]))
    # a duplicate's text is in the ledger: saying it again does not bring it back
    again = c.post("/api/memory/remember", json={"content": "The staging database runs on port 5432.  Yes"})
    assert again.json()["retired"] is True
    assert c.post("/api/memory/consolidate", json={"plan_id": planned["id"]}).status_code == 409

    undone = c.post(f"/api/consolidations/{planned['id']}/undo", json={"reason": "too eager"})
    assert undone.status_code == 200, undone.text
    assert undone.json()["status"] == "undone"
    assert live(rt) == before  # the sources are back, the merged memory gone
    for mid in retired:
        assert any(e == "recovered" and m.get("consolidation_run") == planned["id"] for e, m in history(rt, mid))
    assert rt.db.read(lambda c: c.execute("SELECT COUNT(*) FROM memory_retirements").fetchone()[0]) == 0
    hits = c.post("/api/memory/recall", json={"query": "which day do we deploy to production", "limit": 10}).json()
    assert set(ids["deploys"]) <= {h["id"] for h in hits["results"]}  # back in the vector index and FTS
    assert c.post(f"/api/consolidations/{planned['id']}/undo").status_code == 409
    listed = c.get("/api/consolidations").json()["items"]
    assert listed[0]["id"] == planned["id"] and listed[0]["status"] == "undone"


def test_a_stale_plan_is_refused_whole(app: tuple[Runtime, TestClient], fake_llm: FakeLLM) -> None:
    rt, c = app
    ids = seed(c)
    embedded(rt)
    script_merge(fake_llm)
    planned = c.post("/api/memory/consolidate", json={"dry_run": True}).json()
    before = live(rt)
    r = c.patch(f"/api/memory/{ids['deploys'][0]}", json={"content": "Deploys moved to Wednesdays", "reason": "news"})
    assert r.status_code == 200, r.text
    refused = c.post("/api/memory/consolidate", json={"plan_id": planned["id"]})
    assert refused.status_code == 409 and refused.json()["code"] == "plan_stale"
    assert live(rt) == before and c.get(f"/api/consolidations/{planned['id']}").json()["status"] == "planned"


def test_a_model_that_answers_nonsense_merges_nothing(app: tuple[Runtime, TestClient], fake_llm: FakeLLM) -> None:
    rt, c = app
    ids = seed(c)
    remember(c, "The office VPN config lives in ~/vpn/office.ovpn", type="procedural")  # a second cluster
    remember(c, "Office VPN configuration file: ~/vpn/office.ovpn", type="procedural")
    embedded(rt)
    fake_llm.consolidate = lambda mems: Reply(raw=b"{not json", status=200)
    run = c.post("/api/memory/consolidate", json={}).json()
    assert run["status"] == "applied" and not run["created"]
    assert any("not merged" in n for n in run["plan"]["notes"])
    assert set(ids["deploys"]) <= live(rt)  # tier 1 still ran; the cluster stays as it was
    assert ids["dup"] not in live(rt)


def test_a_model_that_times_out_merges_nothing(app: tuple[Runtime, TestClient], fake_llm: FakeLLM) -> None:
    rt, c = app
    ids = seed(c)
    remember(c, "The office VPN config lives in ~/vpn/office.ovpn", type="procedural")  # a second cluster
    remember(c, "Office VPN configuration file: ~/vpn/office.ovpn", type="procedural")
    embedded(rt)
    fake_llm.consolidate = lambda mems: Reply(text=as_json({"merge": True, "content": MERGED}), delay=6.0)
    run = c.post("/api/memory/consolidate", json={"dry_run": True}).json()  # the call timeout is 5 s
    assert run["plan"]["tier2"] == "ran" and not any(a["kind"] == "merge" for a in run["plan"]["actions"])
    assert any("not merged" in n and "did not answer within 5s" in n for n in run["plan"]["notes"]), run["plan"][
        "notes"
    ]
    assert set(ids["deploys"]) <= live(rt)
    assert "1 more cluster(s) not asked: the model is not answering" in run["plan"]["notes"]
    with fake_llm.lock:
        asked = sum(1 for r in fake_llm.requests if "You consolidate memories" in str(r["body"]))
    assert asked == 1  # a model that does not answer is not asked again in the same run


def test_a_model_that_is_down_merges_nothing(
    make_workspace: Callable[..., Workspace], open_app: Callable[[Workspace], tuple[Runtime, TestClient]]
) -> None:
    dead = FakeLLM(port=free_port())  # never started: nothing listens on its port
    memory = {**pipeline_config(dead, enabled=False), "consolidation": consolidation()}
    rt, c = open_app(make_workspace(memory=memory))
    wait_embedder(rt)
    ids = seed(c)
    embedded(rt)
    down = c.post("/api/memory/consolidate", json={}).json()
    assert down["status"] == "applied" and not any(a["kind"] == "merge" for a in down["plan"]["actions"])
    assert down["plan"]["tier2"].startswith("skipped: ollama is not reachable"), down["plan"]["tier2"]
    assert set(ids["deploys"]) <= live(rt) and ids["dup"] not in live(rt)


def test_without_a_provider_tier2_is_skipped_and_says_so(
    make_workspace: Callable[..., Workspace], open_app: Callable[[Workspace], tuple[Runtime, TestClient]]
) -> None:
    rt, c = open_app(make_workspace(memory={"consolidation": consolidation()}))
    wait_embedder(rt)
    ids = seed(c)
    embedded(rt)
    run = c.post("/api/memory/consolidate", json={"dry_run": True}).json()
    assert run["plan"]["tier2"].startswith("skipped: no LLM provider is configured"), run["plan"]["tier2"]
    assert {a["kind"] for a in run["plan"]["actions"]} == {"duplicate", "expired", "stale_todo"}
    assert ids["dup"] in live(rt)


def test_hostile_requests(app: tuple[Runtime, TestClient]) -> None:
    _, c = app
    assert c.post("/api/consolidations/no-such-run/undo").status_code == 404
    assert c.get("/api/consolidations/no-such-run").status_code == 404
    assert c.post("/api/memory/consolidate", json={"plan_id": "nope"}).status_code == 404
    bad = c.post("/api/memory/consolidate", json={"dry_run": True, "plan_id": "x"})
    assert bad.status_code == 400 and "plan_id" in bad.json()["error"]
    assert c.post("/api/memory/consolidate", json={"dry_run": "maybe"}).status_code == 422
    assert c.post("/api/memory/consolidate", json={"surprise": 1}).status_code == 422
    assert (
        c.post("/api/memory/consolidate", content=b"{", headers={"content-type": "application/json"}).status_code == 422
    )
    assert c.post(f"/api/consolidations/{'x' * 300}/undo").status_code == 422


def test_readonly_token_is_refused_and_agent_tokens_stay_in_their_lane(
    make_workspace: Callable[..., Workspace], open_app: Callable[[Workspace], tuple[Runtime, TestClient]]
) -> None:
    ws = configure(make_workspace(memory={"consolidation": consolidation()}), "team")
    rt, c = open_app(ws)
    wait_embedder(rt)
    admin = bearer(token_for(ws, "admin"))
    ro = bearer(token_for(ws, "readonly"))
    r = c.post("/api/memory/consolidate", json={"dry_run": True}, headers=ro)
    assert r.status_code == 403 and r.json()["code"]
    planned = c.post("/api/memory/consolidate", json={"dry_run": True}, headers=admin).json()
    assert c.post(f"/api/consolidations/{planned['id']}/undo", headers=ro).status_code == 403
    bob = bearer(token_for(ws, "agent", sub="bob", agent="bob"))
    # another agent's token does not see (or undo) a run it did not make
    assert c.get(f"/api/consolidations/{planned['id']}", headers=bob).status_code == 404


def test_the_scheduled_run(
    make_workspace: Callable[..., Workspace], open_app: Callable[[Workspace], tuple[Runtime, TestClient]]
) -> None:
    rt, c = open_app(make_workspace(memory={"consolidation": consolidation(schedule="every 1s")}))
    wait_embedder(rt)
    dup = [
        remember(c, "The build cache lives in /var/cache/build"),
        remember(c, "The build cache lives in /var/cache/build.  Yes"),
    ]
    assert len(set(dup)) == 2
    embedded(rt)
    deadline = time.monotonic() + 30
    while not any(r["trigger"] == "scheduled" and r["retired"] for r in c.get("/api/consolidations").json()["items"]):
        assert time.monotonic() < deadline, "no scheduled consolidation ran"
        time.sleep(0.2)
    run = next(r for r in c.get("/api/consolidations").json()["items"] if r["retired"])
    assert run["status"] == "applied" and run["actor"] == "system"
    assert len(set(dup) & live(rt)) == 1
    bad = make_workspace(memory={"consolidation": {"schedule": "whenever"}})
    with pytest.raises(Exception, match="invalid schedule"):
        open_app(bad)


@pytest.mark.slow
def test_the_cli(
    make_workspace: Callable[..., Workspace], start_daemon: Callable[..., DaemonProcess], fake_llm: FakeLLM
) -> None:
    memory = {**pipeline_config(fake_llm, enabled=False), "consolidation": consolidation()}
    d = start_daemon(make_workspace(memory=memory))
    d.wait_embedder()
    with d.client() as api:
        for text in DEPLOYS:
            assert api.post("/api/memory/remember", json={"content": text, "type": "decision"}).status_code == 200
    d.wait_embedder()
    script_merge(fake_llm)
    shown = cli(d, "consolidate", "--dry-run")
    run_id = shown.split("signet consolidate --apply ")[1].split()[0]
    assert "merge" in shown and MERGED[:40] in shown and "tier 2 (LLM merge): ran" in shown
    applied = cli(d, "consolidate", "--apply", run_id)
    assert f"signet consolidate --undo {run_id}" in applied and "3 memories retired" in applied
    assert run_id in cli(d, "consolidate", "--list")
    runs = json.loads(cli(d, "consolidate", "--list", "--json"))["items"]
    assert runs[0]["status"] == "applied"
    assert "3 memories restored" in cli(d, "consolidate", "--undo", run_id, "--reason", "check")
    said = cli(d, "consolidate", "--undo", "no-such-run", ok=False)
    assert said.startswith("error: ") and "not found" in said and said.count("\n") == 1
    assert "choose one of" in cli(d, "consolidate", "--dry-run", "--list", ok=False)
    tier1 = cli(d, "consolidate", "--dry-run", "--no-llm")
    assert "tier 2 (LLM merge): skipped: not asked for" in tier1
