"""Query-side nudges (question lines, "when" questions) and the speaker-name cache."""

from __future__ import annotations

from typing import Any

from signet.search.fts import recall_match_expression
from signet.search.rank import (
    LENGTH_REF,
    QUESTION_PENALTY,
    WHEN_BOOST,
    adjust_for_query,
    anchors_time,
    asks_when,
    is_question,
    length_prior,
    weigh_length,
)
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


def test_length_prior_lowers_short_lines_and_never_raises_a_score() -> None:
    long_line = " ".join(["word"] * (LENGTH_REF + 10))
    assert length_prior(long_line) == 1.0
    assert length_prior("Thanks!") < length_prior("I went hiking with my family last weekend") < 1.0
    assert length_prior("") == length_prior("!!!") == length_prior("one")  # no words counts as one
    contents = {"short": "Thanks!", "long": long_line}
    out = weigh_length({"short": 0.8, "long": 0.8, "unknown": 0.5}, contents)
    assert out["long"] == 0.8 and out["short"] < out["long"] and 0.0 < out["unknown"] <= 0.5


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


def test_only_names_said_by_a_large_share_of_the_scope_are_dominant() -> None:
    conn = _conn()
    names = SpeakerNames()
    names.refresh(conn)
    assert names.dominant() == set()
    n = 0
    for who, project, count in (
        ("Caroline Smith", "a", 5),
        ("Melanie", "a", 5),
        (None, "a", 2),
        ("Priya", "b", 1),
        ("Jon", "b", 9),
    ):
        for _ in range(count):
            n += 1
            _add(conn, n, who, project)
    names.refresh(conn)
    assert names.dominant("a") == {"caroline", "smith", "melanie"}  # 5/12 each
    assert names.dominant("b") == {"jon"}  # Priya said 1 of 10: her name stays a keyword
    assert names.dominant() == {"caroline", "smith", "melanie", "jon"}  # 5/22, 5/22, 9/22; Priya 1/22
    assert names.dominant("nope") == set()
    for _ in range(40):  # incremental: only the new rows are read, and shares move
        n += 1
        _add(conn, n, "Zed", "a")
    names.refresh(conn)
    assert names.dominant("a") == {"zed"}
