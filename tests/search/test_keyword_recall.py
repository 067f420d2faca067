"""Recall answers the same with the in-memory keyword index as with FTS5 alone, through the service."""

from __future__ import annotations

import random
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest

from signet.models import RecallRequest, RememberRequest
from signet.runtime import Runtime
from signet.workspace import Workspace
from tests.conftest import start_runtime

TOPICS = [
    "road trip to Woodhaven",
    "climbing at the gym",
    "PostgreSQL 16 upgrade",
    "deploys on Thursday",
    "café in Straße 5",
    "the naïve Bayes model",
    "shipping the release",
    "code review of the merge",
]
PEOPLE = ["Caroline", "Melanie", "Jon", "Gina"]


def seed(rt: Runtime, n: int = 300) -> None:
    rng = random.Random(11)
    start = datetime(2024, 1, 1, tzinfo=UTC)
    reqs = []
    for i in range(n):
        who = rng.choice(PEOPLE)
        text = f"{who}: {rng.choice(TOPICS)} and {rng.choice(TOPICS).split()[-1]} ({i})"
        reqs.append(
            RememberRequest(
                content=text,
                who=who,
                project=f"p{i % 3}",
                type=rng.choice(["fact", "episodic"]),
                source_type="chat",
                source_id=f"session-{i // 12}",
                created_at=start + timedelta(days=i),
            )
        )
    rt.service.remember_batch(reqs, changed_by="test")


QUERIES = [
    {"query": "where did they go on the road trip?"},
    {"query": "climbing gym", "project": "p1"},
    {"query": "which postgresql upgrade?", "type": "episodic"},
    {"query": "who went climbing in March 2024?"},
    {"query": "cafe strasse"},
    {"query": "Caroline shipping", "who": "Caroline"},
    {"query": "review merge", "since": "2024-05-01T00:00:00Z", "until": "2024-08-01T00:00:00Z"},
    {"query": "foo_bar thursday"},  # FTS5 reads foo_bar as a phrase: left to FTS5
]


@pytest.mark.sqlite_only(
    "the mirror against FTS5's own bm25(); with the mirror off PostgreSQL ranks by ts_rank (docs/team.md)"
)
@pytest.mark.parametrize("n", [300])
def test_recall_is_the_same_with_and_without_the_mirror(make_workspace: Callable[..., Workspace], n: int) -> None:
    on = start_runtime(make_workspace(embedding="none"))
    off = start_runtime(make_workspace(embedding="none", search={"keyword_index": False}))
    try:
        assert off.keywords is None and on.keywords is not None
        seed(on, n)
        seed(off, n)
        assert on.keywords.wait_ready(30)
        on.db.read(lambda c: on.keywords.catch_up(c, 10**6))  # type: ignore[union-attr]
        before = on.keywords.index.stats()
        for q in QUERIES:
            a = on.service.recall(RecallRequest(**q, track_access=False))  # type: ignore[arg-type]
            b = off.service.recall(RecallRequest(**q, track_access=False))  # type: ignore[arg-type]
            assert a.count > 0, q
            assert [(r.content, r.score, r.fts_score) for r in a.results] == [
                (r.content, r.score, r.fts_score) for r in b.results
            ], q
        assert on.keywords.index.stats() == before
        # Every keyword search was the mirror's but the phrase query's (two pools each: the
        # plain one and, for the dated question, that month's).
        assert (on.keywords.answered, on.keywords.fallbacks) == (len(QUERIES), 1)
        assert on.service.status("w", "d").keyword_index.state == "ready"
        assert off.service.status("w", "d").keyword_index.state == "off"
    finally:
        on.stop()
        off.stop()


def test_a_remember_is_found_by_the_next_recall(make_workspace: Callable[..., Workspace]) -> None:
    rt = start_runtime(make_workspace(embedding="none"))
    try:
        assert rt.keywords is not None and rt.keywords.wait_ready(30)
        rows = len(rt.keywords.index)
        rt.service.remember(RememberRequest(content="we moved the build to Woodhaven runners"), changed_by="t")
        res = rt.service.recall(RecallRequest(query="woodhaven runners"))
        assert [r.content for r in res.results] == ["we moved the build to Woodhaven runners"]
        assert len(rt.keywords.index) == rows + 1  # answered by the mirror, which caught up first
    finally:
        rt.stop()
