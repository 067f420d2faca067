"""Query-side nudges (question lines, "when" questions) and the speaker-name cache."""

from __future__ import annotations

from typing import Any

from signet.search.fts import recall_match_expression
from signet.search.rank import QUESTION_PENALTY, WHEN_BOOST, adjust_for_query, anchors_time, asks_when, is_question
from signet.search.speakers import SpeakerNames
from signet.store.migrations import migrate
from signet.store.sqlite import sqlite3


def test_when_questions_and_time_anchors() -> None:
    assert asks_when("When did Caroline go to the support group?")
    assert asks_when("what year did they move?")
    assert not asks_when("What did Caroline research?")
    assert anchors_time("I went to a support group yesterday")
    assert anchors_time("We moved in 2019")
    assert not anchors_time("I love the support group")


def test_adjust_penalises_questions_and_boosts_anchors_only_for_when() -> None:
    contents = {"q": "Seen any good movies lately?", "a": "I watched Little Women last week.", "p": "Plain fact."}
    scores = {"q": 0.5, "a": 0.5, "p": 0.5}
    out = adjust_for_query(scores, contents, "What movies has Joanna seen?")
    assert out == {"q": 0.5 * (1 - QUESTION_PENALTY), "a": 0.5, "p": 0.5}
    out = adjust_for_query(scores, contents, "When did Joanna watch Little Women?")
    assert out["a"] == 0.5 * (1 + WHEN_BOOST) and out["p"] == 0.5
    assert adjust_for_query({"a": 0.95}, contents, "When did she?")["a"] == 1.0  # capped
    assert is_question("why?  ") and not is_question("a statement")


def test_names_are_dropped_from_the_keyword_query_unless_nothing_remains() -> None:
    assert recall_match_expression("What did Caroline research?", drop={"caroline"}) == '"research"*'
    assert recall_match_expression("Caroline?", drop={"caroline"}) == '"caroline"*'


def _conn() -> Any:
    conn = sqlite3.connect(":memory:", isolation_level=None)
    migrate(conn)
    return conn


def _add(conn: Any, n: int, who: str | None, project: str | None) -> None:
    conn.execute(
        "INSERT INTO memories(id, content, normalized_content, content_hash, created_at, updated_at, who, project)"
        " VALUES (?, 'x', 'x', ?, 't', 't', ?, ?)",
        (f"m{n}", f"h{n}", who, project),
    )


def test_speaker_names_are_read_incrementally_per_project() -> None:
    conn = _conn()
    names = SpeakerNames()
    names.refresh(conn)
    assert names.keys() == set()
    _add(conn, 1, "Caroline Smith", "a")
    _add(conn, 2, None, "a")
    _add(conn, 3, "Melanie", "b")
    names.refresh(conn)
    assert names.keys("a") == {"caroline", "smith"}
    assert names.keys("b") == {"melanie"}
    assert names.keys() == {"caroline", "smith", "melanie"}
    _add(conn, 4, "Jon", "a")
    names.refresh(conn)
    assert names.keys("a") == {"caroline", "smith", "jon"}
    assert names.keys("nope") == set()
