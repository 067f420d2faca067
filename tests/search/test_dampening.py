"""Post-fusion dampening (signet.search.dampening): the three stages as pure functions, and each
through the real recall path on a real store, switched on and off on the same runtime."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from signet.models import RecallRequest, RememberRequest
from signet.runtime import Runtime
from signet.search import dampening
from signet.workspace import Workspace
from tests.conftest import start_runtime, wait_embedder


def test_gravity_demotes_only_vector_neighbours_sharing_no_query_word() -> None:
    scores = {"far": 0.8, "shares": 0.8, "prefix": 0.8, "weak": 0.8, "keyword": 0.8}
    contents = {
        "far": "An opinion about Go's error handling",
        "shares": "Alice thinks Rust is great",
        "prefix": "Rusty nails everywhere",
        "weak": "Nothing in common",
        "keyword": "Nothing in common either",
    }
    cosines: dict[str, float | None] = {"far": 0.6, "shares": 0.6, "prefix": 0.6, "weak": 0.1, "keyword": None}
    out = dampening.gravity(scores, contents, cosines, [("rust", True)], factor=0.5, min_cosine=0.3)
    assert out == {"far": 0.4, "shares": 0.8, "prefix": 0.8, "weak": 0.8, "keyword": 0.8}
    exact = dampening.gravity(scores, contents, cosines, [("rust", False)], factor=0.5, min_cosine=0.3)
    assert exact["prefix"] == 0.4 and exact["shares"] == 0.8
    assert dampening.gravity(scores, contents, cosines, [], factor=0.5, min_cosine=0.3) == scores


def test_hub_demotes_only_memories_linked_to_nothing_but_hubs() -> None:
    scores = {"only-hub": 1.0, "mixed": 1.0, "none": 1.0}
    links = {"only-hub": {"melanie"}, "mixed": {"melanie", "sweden"}, "none": set[str]()}
    out = dampening.hub(scores, links, {"melanie"}, factor=0.7)
    assert out == {"only-hub": 0.7, "mixed": 1.0, "none": 1.0}


def test_resolution_lifts_decisions_rules_and_dated_memories() -> None:
    scores = {"decision": 1.0, "rule": 1.0, "dated": 1.0, "plain": 1.0}
    types: dict[str, str | None] = {"decision": "decision", "rule": "rule", "dated": "fact", "plain": "fact"}
    contents = {"decision": "we use X", "rule": "never Y", "dated": "We met in May 2023", "plain": "we met"}
    out = dampening.resolution(scores, types, contents, factor=1.2)
    assert out == {"decision": 1.2, "rule": 1.2, "dated": 1.2, "plain": 1.0}


def _scores(rt: Runtime, query: str) -> dict[str, float]:
    res = rt.service.recall(RecallRequest(query=query, limit=50, min_score=0.0, track_access=False))
    return {r.id: r.score for r in res.results}


def test_every_stage_is_off_by_default(make_workspace: Callable[..., Workspace]) -> None:
    rt = start_runtime(make_workspace(embedding="none"))
    try:
        cfg = rt.settings.search.dampening
        assert not (cfg.gravity or cfg.hub or cfg.resolution)
    finally:
        rt.stop()


def test_gravity_through_recall(make_workspace: Callable[..., Workspace]) -> None:
    rt = start_runtime(make_workspace())
    try:
        wait_embedder(rt)
        say = rt.service.remember(RememberRequest(content="Alice loves programming in Rust")).id
        near = rt.service.remember(RememberRequest(content="She enjoys writing code in Haskell")).id
        assert rt.embeddings.wait_idle(60)
        before = _scores(rt, "Which programming language does Alice like?")
        rt.settings.search.dampening.gravity = True
        rt.settings.search.dampening.gravity_min_cosine = 0.0
        after = _scores(rt, "Which programming language does Alice like?")
        assert after[say] == pytest.approx(before[say], abs=1e-6)
        assert after[near] == pytest.approx(before[near] * 0.5, abs=1e-5)
    finally:
        rt.stop()


def test_hub_and_resolution_through_recall(make_workspace: Callable[..., Workspace]) -> None:
    rt = start_runtime(make_workspace(embedding="none"))
    try:
        # Melanie speaks on every memory (a hub); the places are each named once.
        ids = [
            rt.service.remember(RememberRequest(content=f"Melanie talked about the garden, part {i}", who="Melanie")).id
            for i in range(12)
        ]
        places = ["Sweden", "Norway", "Finland", "Denmark", "Iceland", "Estonia", "Latvia", "Poland", "Spain"]
        named = [
            rt.service.remember(RememberRequest(content=f"Melanie talked about the garden in {p}", who="Melanie")).id
            for p in places
        ]
        dated = rt.service.remember(
            RememberRequest(content="Melanie talked about the garden on 3 May 2023", who="Melanie")
        ).id
        before = _scores(rt, "garden talk")
        assert ids[0] in before and named[0] in before and dated in before
        rt.settings.search.dampening.hub = True
        after = _scores(rt, "garden talk")
        assert after[ids[0]] == pytest.approx(before[ids[0]] * 0.7, abs=1e-5)
        assert after[named[0]] == pytest.approx(before[named[0]], abs=1e-6)
        rt.settings.search.dampening.hub = False
        rt.settings.search.dampening.resolution = True
        lifted = _scores(rt, "garden talk")
        assert lifted[dated] == pytest.approx(before[dated] * 1.2, abs=1e-5)
        assert lifted[ids[0]] == pytest.approx(before[ids[0]], abs=1e-6)
    finally:
        rt.stop()
