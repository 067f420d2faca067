"""Recall's life stage (signet.search.lifescore): recency, strength, freshness, currentness,
pinned protection, and ``search.default_limit``, through the real recall path."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from typer.testing import CliRunner

from signet.bench.harness import wait_vectors
from signet.cli.main import app
from signet.config import ScoringSettings
from signet.models import RecallRequest, RememberRequest
from signet.search import lifescore
from signet.workspace import Workspace
from tests.conftest import start_runtime

NOW = datetime(2026, 6, 1, tzinfo=UTC).timestamp()


def _row(**over: Any) -> dict[str, Any]:
    row = {
        "pinned": 0,
        "type": "fact",
        "created_at": "2026-05-31T00:00:00+00:00",
        "last_accessed": None,
        "access_count": 0,
        "importance": 0.5,
        "content": "",
        "who": None,
    }
    return row | over


def test_asks_now() -> None:
    assert lifescore.asks_now("Where does Maya work now?")
    assert lifescore.asks_now("Which editor is she currently using")
    assert lifescore.asks_now("Does Liam still drive the Volvo?")
    assert not lifescore.asks_now("Where did Maya work in 2024?")
    assert not lifescore.asks_now("Would Maya still work there if she had not moved?")  # hypothetical
    assert not lifescore.asks_now("What is known about Maya")  # 'now' inside a word does not count


def test_factors_by_expiry_class_importance_use_and_freshness() -> None:
    year_ago = datetime.fromtimestamp(NOW - 365 * 86_400, UTC).isoformat()
    default = ScoringSettings()
    assert lifescore.factors(_row(created_at=year_ago), default, anchor=NOW, now=NOW, superseded=False).recency == 1.0
    asked = lifescore.factors(_row(created_at=year_ago), default, anchor=NOW, now=NOW, superseded=False, asked=True)
    assert abs(asked.recency - (1 - default.now_recency_weight * 0.5)) < 1e-6  # asked about now: one half-life
    cfg = ScoringSettings(recency_weight=0.3)
    old = lifescore.factors(_row(created_at=year_ago), cfg, anchor=NOW, now=NOW, superseded=False)
    assert abs(old.recency - (1 - cfg.recency_weight * 0.5)) < 1e-6  # one permanent half-life
    episodic = lifescore.factors(_row(created_at=year_ago, type="episodic"), cfg, anchor=NOW, now=NOW, superseded=False)
    assert episodic.recency < old.recency  # temporary: 30-day half-life
    pinned = lifescore.factors(_row(created_at=year_ago, pinned=1), cfg, anchor=NOW, now=NOW, superseded=False)
    assert pinned.recency == 1.0  # core never decays
    # Anchored to the request's until: a year-old memory asked about as of then is not old.
    then = lifescore.factors(_row(created_at=year_ago), cfg, anchor=NOW - 365 * 86_400, now=NOW, superseded=False)
    assert then.recency == 1.0
    neutral = lifescore.factors(_row(), cfg, anchor=NOW, now=NOW, superseded=False)
    assert neutral.strength == 1.0
    important = lifescore.factors(_row(importance=1.0), cfg, anchor=NOW, now=NOW, superseded=False)
    assert important.strength > 1.0
    used = lifescore.factors(
        _row(importance=0.1, access_count=10, last_accessed="2026-05-31T12:00:00+00:00"),
        cfg,
        anchor=NOW,
        now=NOW,
        superseded=False,
    )
    assert used.strength > neutral.strength  # recalled often lately outweighs a low importance
    fresh = lifescore.factors(
        _row(created_at=datetime.fromtimestamp(NOW - 600, UTC).isoformat()), cfg, anchor=NOW, now=NOW, superseded=False
    )
    assert fresh.freshness == 1.5
    assert lifescore.factors(_row(), cfg, anchor=NOW, now=NOW, superseded=True).currentness == 1 - cfg.supersede_weight


def test_pinned_is_never_pulled_down_and_off_changes_nothing() -> None:
    cfg = ScoringSettings(recency_weight=1.0)
    decade = datetime.fromtimestamp(NOW - 3650 * 86_400, UTC).isoformat()
    rows = {"p": _row(created_at=decade, pinned=1, type="episodic"), "o": _row(created_at=decade, type="episodic")}
    scores = {"p": 0.5, "o": 0.5}
    lifescore.apply(scores, rows, cfg, query="x", until=None, vectors_for=None, now=NOW)
    assert scores["p"] >= 0.5 and scores["o"] < 0.01
    untouched = {"p": 0.5, "o": 0.5}
    assert (
        lifescore.apply(untouched, rows, ScoringSettings(enabled=False), query="x", until=None, vectors_for=None) == {}
    )
    assert untouched == {"p": 0.5, "o": 0.5}


def test_names_the_query_names_limit_who_can_restate() -> None:
    assert lifescore.named_in("Where does Maya work now?") == {"maya"}
    assert lifescore.named_in("What is Maya's car now?") == {"maya"}
    assert lifescore.named_in("where do I work now") == set()
    rows = {
        "maya": _row(content="Maya drives a Volvo.", who=None, created_at="2026-01-01T00:00:00+00:00"),
        "jonas": _row(content="Jonas drives a Fiat.", who=None, created_at="2026-04-01T00:00:00+00:00"),
        "said": _row(content="I drive a Tesla now.", who="Maya", created_at="2026-05-01T00:00:00+00:00"),
    }
    vectors = {"maya": [1.0, 0.0], "jonas": [1.0, 0.05], "said": [1.0, 0.1]}
    assert lifescore.superseded_ids(list(rows), rows, vectors, 0.9) == {"maya", "jonas"}
    # Asked about Maya, Jonas's car restates nothing; what Maya herself said later does.
    assert lifescore.superseded_ids(list(rows), rows, vectors, 0.9, {"maya"}) == {"maya"}


def test_superseded_needs_similarity_and_a_later_date() -> None:
    rows = {
        "a": _row(created_at="2026-01-01T00:00:00+00:00"),
        "b": _row(created_at="2026-03-01T00:00:00+00:00"),
        "c": _row(created_at="2026-03-01T06:00:00+00:00"),  # same subject, same day as b
        "d": _row(created_at="2026-04-01T00:00:00+00:00"),  # later but about something else
    }
    vectors = {"a": [1.0, 0.0], "b": [0.9, 0.1], "c": [0.9, 0.12], "d": [0.0, 1.0]}
    assert lifescore.superseded_ids(list(rows), rows, vectors, 0.8) == {"a"}


def test_current_fact_ranks_first_when_asked_about_now(make_workspace: Callable[..., Workspace]) -> None:
    ws = make_workspace()
    rt = start_runtime(ws)
    try:
        now = datetime.now(UTC)
        old, new = rt.service.remember_batch(
            [
                RememberRequest(
                    content="Maya works at Acme Robotics as an engineer.", created_at=now - timedelta(days=200)
                ),
                RememberRequest(content="Maya has a job at Globex.", created_at=now - timedelta(days=20)),
            ],
            changed_by="test",
        )
        wait_vectors(rt, timeout=60)
        asked = rt.service.recall(RecallRequest(query="Where does Maya work now?", track_access=False))
        assert [r.id for r in asked.results][:1] == [new.id]
        rt.settings.search.scoring.enabled = False
        plain = rt.service.recall(RecallRequest(query="Where does Maya work now?", track_access=False))
        assert [r.id for r in plain.results][:1] == [old.id]  # the longer, closer match wins without the stage
    finally:
        rt.stop()


def test_default_limit_is_honoured(make_workspace: Callable[..., Workspace]) -> None:
    ws = make_workspace(embedding="none", search={"default_limit": 2})
    rt = start_runtime(ws)
    try:
        rt.service.remember_batch(
            [RememberRequest(content=f"the deploy script step {i} uses rsync") for i in range(5)], changed_by="test"
        )
        assert rt.service.recall(RecallRequest(query="deploy rsync")).count == 2
        assert rt.service.recall(RecallRequest(query="deploy rsync", limit=4)).count == 4
    finally:
        rt.stop()


def test_timeline_bench_reports_every_variant() -> None:
    res = CliRunner().invoke(app, ["bench", "timeline", "--people", "2", "--json"])
    assert res.exit_code == 0, res.output
    rep = json.loads(res.output)
    assert rep["subjects"] == 12 and rep["memories"] >= 24
    assert set(rep["variants"]) == {"off", "on", "no_currentness", "no_recency", "no_strength"}
    for figures in rep["variants"].values():
        assert 0.0 <= figures["current_first"] <= 1.0
        assert figures["current_first"] + figures["stale_first"] == figures["subject_found"]
