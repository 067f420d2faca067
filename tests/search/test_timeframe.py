"""The time a query names (signet.search.timeframe) and the recall nudge that uses it."""

from __future__ import annotations

from datetime import UTC, datetime

from hypothesis import given
from hypothesis import strategies as st

from signet.search.rank import DATE_BOOST, boost_window
from signet.search.timeframe import SLACK_AFTER, SLACK_BEFORE, query_window, widened

NOW = datetime(2024, 3, 20, 15, 30, tzinfo=UTC)  # a Wednesday


def d(y: int, m: int, day: int) -> datetime:
    return datetime(y, m, day, tzinfo=UTC)


def test_absolute_dates_in_the_forms_people_write() -> None:
    assert query_window("What was Jolene working on as of 1 February, 2023?") == (d(2023, 2, 1), d(2023, 2, 2))
    assert query_window("what happened on the 13th of March 2023") == (d(2023, 3, 13), d(2023, 3, 14))
    assert query_window("Meeting on March 13, 2023?") == (d(2023, 3, 13), d(2023, 3, 14))
    assert query_window("Which places did Evan visit in July 2023?") == (d(2023, 7, 1), d(2023, 8, 1))
    assert query_window("plans for Dec. 2022") == (d(2022, 12, 1), d(2023, 1, 1))
    assert query_window("in the beginning of November, 2022") == (d(2022, 11, 1), d(2022, 12, 1))


def test_relative_phrases_are_read_against_the_reference_time() -> None:
    assert query_window("what did we decide yesterday", NOW) == (d(2024, 3, 19), d(2024, 3, 20))
    assert query_window("anything today?", NOW) == (d(2024, 3, 20), d(2024, 3, 21))
    assert query_window("the bug from last week", NOW) == (d(2024, 3, 11), d(2024, 3, 18))
    assert query_window("this week's deploys", NOW) == (d(2024, 3, 18), d(2024, 3, 21))
    assert query_window("what shipped last month", NOW) == (d(2024, 2, 1), d(2024, 3, 1))
    assert query_window("goals for this year", NOW) == (d(2024, 1, 1), d(2024, 3, 21))
    assert query_window("last year", NOW) == (d(2023, 1, 1), d(2024, 1, 1))
    start, end = query_window("the outage two weeks ago", NOW) or (None, None)
    assert start is not None and end is not None and start < d(2024, 3, 6) < end


def test_no_date_no_window_and_impossible_dates_are_ignored() -> None:
    assert query_window("What does Caroline like to paint?", NOW) is None
    assert query_window("May I ask about the march?", NOW) is None  # month words without a year
    assert query_window("on 31 February 2023", NOW) is None
    assert query_window("in December 9999", NOW) is None
    assert query_window("yesterday", datetime(1, 1, 1, tzinfo=UTC)) is None  # before year 1


@given(st.text(max_size=200), st.datetimes(timezones=st.just(UTC)))
def test_never_raises_and_windows_are_ordered(text: str, now: datetime) -> None:
    w = query_window(text, now)
    if w is not None:
        assert w[0] < w[1]
        lo, hi = widened(w)
        assert lo <= w[0] and w[1] <= hi


def test_widened_adds_the_slack_and_survives_the_calendar_edges() -> None:
    w = (d(2023, 3, 13), d(2023, 3, 14))
    assert widened(w) == (w[0] - SLACK_BEFORE, w[1] + SLACK_AFTER)
    lo, hi = widened((datetime(1, 1, 2, tzinfo=UTC), datetime(9999, 12, 30, tzinfo=UTC)))
    assert lo.year == 1 and hi.year == 9999


def test_boost_window_raises_only_memories_inside_and_caps() -> None:
    created = {
        "in": "2023-03-15T10:00:00.000000+00:00",
        "out": "2024-01-01T00:00:00.000000+00:00",
        "hi": "2023-03-20T00:00:00.000000+00:00",
    }
    window = ("2023-03-01T00:00:00.000000+00:00", "2023-04-01T00:00:00.000000+00:00")
    out = boost_window({"in": 0.4, "out": 0.4, "hi": 0.9, "unknown": 0.4}, created, window)
    assert out == {"in": 0.4 * (1 + DATE_BOOST), "out": 0.4, "hi": 1.0, "unknown": 0.4}
    assert boost_window({"in": 0.4}, created, None) == {"in": 0.4}
