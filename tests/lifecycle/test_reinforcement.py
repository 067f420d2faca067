"""Store-time reinforcement (docs/lifecycle.md) with the bundled embedding model: a restated
fact adds a confirmation to the memory instead of a near duplicate, and can be split back out."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest
from fastapi.testclient import TestClient

from signet.models import RememberRequest
from signet.runtime import Runtime
from signet.workspace import Workspace
from tests.conftest import start_runtime
from tests.lifecycle.paraphrases import FACTS

Open = Callable[[Workspace], tuple[Runtime, TestClient]]
MakeWs = Callable[..., Workspace]

THRESHOLD = 0.75
"""The bundled model (all-MiniLM-L6-v2) scores these paraphrases 0.78-0.99 against the first
wording and different facts at most 0.44 (measured in test_the_threshold_separates_the_set)."""


@pytest.fixture
def reinforcing(make_workspace: MakeWs) -> Iterator[Runtime]:
    rt = start_runtime(make_workspace(memory={"reinforce": {"enabled": True, "threshold": THRESHOLD}}))
    try:
        yield rt
    finally:
        rt.stop()


def live(rt: Runtime, sql: str = "", *params: Any) -> list[Any]:
    return rt.db.read(
        lambda c: c.execute(f"SELECT * FROM memories WHERE is_deleted = 0 {sql} ORDER BY seq", params).fetchall()
    )


def reinforced_texts(rt: Runtime, memory_id: str) -> list[str]:
    return [e.new_content or "" for e in rt.service.history(memory_id).events if e.event == "reinforced"]


def test_the_threshold_separates_the_set(runtime: Runtime) -> None:
    """The premise of the next test, measured: every wording is at or above the threshold
    against its fact's first wording, every other fact's wordings far below it."""
    first = runtime.embeddings.embed_texts([f[0] for f in FACTS])
    assert first is not None
    for i, phrasings in enumerate(FACTS):
        vecs = runtime.embeddings.embed_texts(phrasings)
        assert vecs is not None
        sims = first @ vecs.T  # unit vectors: cosine
        assert sims[i].min() >= THRESHOLD + 0.02, (i, sims[i].min())
        others = np.delete(sims, i, axis=0)
        assert others.max() < THRESHOLD - 0.2, (i, others.max())


def test_200_paraphrases_of_20_facts_give_20_memories(reinforcing: Runtime) -> None:
    rt = reinforcing
    first_ids: dict[int, str] = {}
    # Interleaved, as restatements arrive over many sessions: every fact's n-th wording in turn.
    for n in range(10):
        for i, phrasings in enumerate(FACTS):
            out = rt.service.remember(RememberRequest(content=phrasings[n], type="fact"), changed_by="test")
            assert out.reinforcement == "checked"
            if n == 0:
                assert out.reinforced is None and not out.deduped
                first_ids[i] = out.id
            else:
                assert out.reinforced == first_ids[i], (i, n, phrasings[n])
                assert out.id == first_ids[i] and out.confirmations == n
    mems = live(rt)
    assert len(mems) == 20
    assert sum(int(m["confirmations"]) for m in mems) == 180
    for i, phrasings in enumerate(FACTS):
        mem = next(m for m in mems if m["id"] == first_ids[i])
        assert mem["content"] == phrasings[0] and mem["confirmations"] == 9 and mem["last_reinforced_at"]
        # None lost: every other wording is in the memory's history, in the order it was said.
        assert reinforced_texts(rt, mem["id"]) == phrasings[1:]
        meta = [e.metadata or {} for e in rt.service.history(mem["id"]).events if e.event == "reinforced"]
        assert all(THRESHOLD <= m["similarity"] <= 1.0 for m in meta)
        assert rt.service.get(mem["id"]).confirmations == 9


def test_below_the_threshold_nothing_merges(make_workspace: MakeWs) -> None:
    # The first fact's least similar wording, measured, sets a threshold just above it and just below it.
    probe = start_runtime(make_workspace())
    try:
        vecs = probe.embeddings.embed_texts(FACTS[0])
        assert vecs is not None
        sims = vecs[1:] @ vecs[0]
        k = int(np.argmin(sims)) + 1
        edge = float(sims[k - 1])
        everything_max = float(
            max(float((v[1:] @ v[0]).max()) for v in (probe.embeddings.embed_texts(f) for f in FACTS) if v is not None)
        )
    finally:
        probe.stop()

    above = start_runtime(make_workspace(memory={"reinforce": {"enabled": True, "threshold": edge + 0.002}}))
    try:
        a = above.service.remember(RememberRequest(content=FACTS[0][0], type="fact"))
        b = above.service.remember(RememberRequest(content=FACTS[0][k], type="fact"))
        assert b.reinforced is None and b.id != a.id and b.confirmations == 0  # just below: stored apart
    finally:
        above.stop()
    at = start_runtime(make_workspace(memory={"reinforce": {"enabled": True, "threshold": edge - 0.002}}))
    try:
        a = at.service.remember(RememberRequest(content=FACTS[0][0], type="fact"))
        b = at.service.remember(RememberRequest(content=FACTS[0][k], type="fact"))
        assert b.reinforced == a.id  # just above: reinforced
    finally:
        at.stop()

    # A threshold above every pair of the set: all 200 wordings are memories, none confirmed.
    strict = start_runtime(
        make_workspace(memory={"reinforce": {"enabled": True, "threshold": min(everything_max + 0.002, 1.0)}})
    )
    try:
        for phrasings in FACTS:
            for p in phrasings:
                assert strict.service.remember(RememberRequest(content=p, type="fact")).reinforced is None
        mems = live(strict)
        assert len(mems) == 200 and sum(int(m["confirmations"]) for m in mems) == 0
    finally:
        strict.stop()


def test_pinned_other_owners_and_other_types_never_merge(reinforcing: Runtime) -> None:
    svc = reinforcing.service
    text, again = FACTS[4][0], FACTS[4][1]  # Bob's peanut allergy
    pinned = svc.remember(RememberRequest(content=text, type="fact", pinned=True))
    # A paraphrase of a pinned memory is stored apart: pinned memories are never reinforced.
    other = svc.remember(RememberRequest(content=again, type="fact"))
    assert other.reinforced is None and other.id != pinned.id
    # A pinned new text is not checked at all.
    p2 = svc.remember(RememberRequest(content=FACTS[4][2], type="fact", pinned=True))
    assert p2.reinforcement == "skipped_pinned" and p2.reinforced is None
    # Another project, another agent, another type: each its own memory.
    base = svc.remember(RememberRequest(content=FACTS[5][0], type="fact", project="webshop"))
    for req in (
        RememberRequest(content=FACTS[5][1], type="fact", project="billing"),
        RememberRequest(content=FACTS[5][2], type="fact"),
        RememberRequest(content=FACTS[5][3], type="fact", project="webshop", agent_id="other-agent"),
        RememberRequest(content=FACTS[5][4], type="decision", project="webshop"),
    ):
        out = svc.remember(req)
        assert out.reinforced is None and out.id != base.id, req
    same = svc.remember(RememberRequest(content=FACTS[5][5], type="fact", project="webshop"))
    assert same.reinforced == base.id  # the control: same owner and type does reinforce
    assert svc.get(pinned.id).confirmations == 0


def test_off_by_default_and_said_in_the_response(runtime: Runtime) -> None:
    a = runtime.service.remember(RememberRequest(content=FACTS[0][0]))
    b = runtime.service.remember(RememberRequest(content=FACTS[0][1]))
    assert a.reinforcement == b.reinforcement == "off"
    assert b.reinforced is None and a.id != b.id


def test_split_undoes_a_reinforcement_over_http(make_workspace: MakeWs, open_app: Open) -> None:
    rt, api = open_app(make_workspace(memory={"reinforce": {"enabled": True, "threshold": THRESHOLD}}))
    assert rt.embeddings.ready  # open_app waits for the model: the check runs on the first remember
    first = api.post("/api/memory/remember", json={"content": FACTS[1][0], "type": "preference"}).json()
    said = api.post(
        "/api/memory/remember",
        json={"content": FACTS[1][3], "type": "preference", "tags": ["style"], "importance": 0.6, "who": "codex"},
    )
    assert said.status_code == 200, said.text
    body = said.json()
    assert body["reinforced"] == first["id"] == body["id"] and body["confirmations"] == 1
    assert body["reinforcement"] == "checked" and body["content"] == FACTS[1][0]
    events = api.get(f"/api/memory/{first['id']}/history").json()["events"]
    ev = next(e for e in events if e["event"] == "reinforced")
    assert ev["new_content"] == FACTS[1][3] and ev["metadata"]["tags"] == ["style"]

    r = api.post(f"/api/memory/{first['id'][:8]}/split", json={"event_id": ev["id"], "reason": "a different fact"})
    assert r.status_code == 200, r.text
    out = r.json()
    assert out["confirmations"] == 0 and out["content"] == FACTS[1][3]
    new = api.get(f"/api/memory/{out['new_id']}").json()
    assert new["content"] == FACTS[1][3] and new["tags"] == ["style"] and new["importance"] == 0.6
    assert new["type"] == "preference" and new["who"] == "codex"
    assert api.get(f"/api/memory/{first['id']}").json()["confirmations"] == 0
    created = api.get(f"/api/memory/{out['new_id']}/history").json()["events"][0]
    assert created["metadata"]["split_from"] == first["id"] and created["metadata"]["event_id"] == ev["id"]
    split_ev = api.get(f"/api/memory/{first['id']}/history").json()["events"][-1]
    assert split_ev["event"] == "split" and split_ev["metadata"]["new_memory_id"] == out["new_id"]
    # Once only; an unknown event is a 404, a body with an unknown field a 422.
    again = api.post(f"/api/memory/{first['id']}/split", json={"event_id": ev["id"], "reason": "again"})
    assert again.status_code == 409 and again.json()["code"] == "already_split"
    missing = api.post(f"/api/memory/{first['id']}/split", json={"event_id": "nope", "reason": "x"})
    assert missing.status_code == 404
    extra = api.post(f"/api/memory/{first['id']}/split", json={"event_id": ev["id"], "reason": "x", "zzz": 1})
    assert extra.status_code == 422


def test_the_pipeline_path_reinforces_with_its_own_vector(reinforcing: Runtime) -> None:
    """``remember_in`` (the pipeline's writes, inside its transaction) checks with the vector the
    pipeline computed before it; document chunks are never reinforced."""
    svc = reinforcing.service
    first = svc.remember(RememberRequest(content=FACTS[6][0], type="fact"))
    vec = svc.embed_for_write("x", FACTS[6][1])
    row, deduped = reinforcing.db.write(
        lambda c: svc.remember_in(
            c, RememberRequest(content=FACTS[6][1], type="fact"), changed_by="pipeline-v2", vector=vec
        )
    )
    assert deduped and row["id"] == first.id and row["confirmations"] == 1
    assert reinforced_texts(reinforcing, first.id) == [FACTS[6][1]]

    chunk = svc.remember(RememberRequest(content=FACTS[7][0], type="document_chunk"))
    assert chunk.reinforcement == "off"
    deadline = time.monotonic() + 30
    while chunk.id not in reinforcing.index and time.monotonic() < deadline:  # the background embedder
        time.sleep(0.05)
    assert chunk.id in reinforcing.index  # so the check below could find it
    vec2 = svc.embed_for_write("y", FACTS[7][1])
    row2, deduped2 = reinforcing.db.write(
        lambda c: svc.remember_in(
            c, RememberRequest(content=FACTS[7][1], type="document_chunk"), changed_by="documents", vector=vec2
        )
    )
    assert not deduped2 and row2["id"] != chunk.id
