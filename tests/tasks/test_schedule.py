"""Schedules: cron expressions (UTC) and intervals, and counting missed fire times."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from signet.errors import InvalidRequest
from signet.schedule import MAX_MISSED_COUNTED, parse

NOON = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("every 3s", NOON + timedelta(seconds=3)),
        ("EVERY 5m", NOON + timedelta(minutes=5)),
        ("every 2h", NOON + timedelta(hours=2)),
        ("@every 1d", NOON + timedelta(days=1)),
        ("*/5 * * * *", NOON + timedelta(minutes=5)),
        ("@hourly", NOON + timedelta(hours=1)),
        ("0 9 * * 1-5", datetime(2026, 1, 2, 9, 0, tzinfo=UTC)),  # 2026-01-01 is a Thursday
    ],
)
def test_next_fire_time(text: str, expected: datetime) -> None:
    assert parse(text).next_after(NOON) == expected


@pytest.mark.parametrize("text", ["", "never", "every 0s", "every 367d", "* * *", "99 * * * *", "every -1m"])
def test_invalid_schedules_are_refused(text: str) -> None:
    with pytest.raises(InvalidRequest, match=r"invalid schedule|interval is between"):
        parse(text)


def test_missed_fire_times_are_counted() -> None:
    minutely = parse("* * * * *")
    count, last = minutely.missed(NOON - timedelta(minutes=10), NOON)
    assert count == 10 and last == NOON - timedelta(minutes=1)
    assert parse("every 1s").missed(NOON - timedelta(days=30), NOON)[0] == MAX_MISSED_COUNTED
    assert parse("@daily").missed(NOON + timedelta(hours=1), NOON) == (0, NOON + timedelta(hours=1))
