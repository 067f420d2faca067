"""The time a query is about, read from its own words ("in March 2023", "last week").

A question that names a date ("What was Jolene working on as of 1 February, 2023?", "what
did we decide last week?") is about what was said around that time, not about the newest or
the oldest memory. Recall therefore reads a window from the query and multiplies the score of
memories created inside it by ``1 + DATE_BOOST`` (:func:`signet.search.rank.boost_window`). It is a
nudge, not a filter: the ``since``/``until`` filters are there for a hard cut.

A memory usually tells of an event after it happened ("I went to the parade *last week*"),
sometimes before ("the show is next month"), so the window is widened by
:data:`SLACK_BEFORE` before the named time and :data:`SLACK_AFTER` after it.

Read forms (English, case-insensitive): ``13 March 2023``, ``13th of March, 2023``,
``March 13, 2023``, ``March 2023``; and, relative to the reference time (the request's
``until`` or now): today, yesterday, this/last week, this/last month, this/last year,
``N days/weeks/months ago``. A date that does not exist (31 February) is ignored. Measured on
LoCoMo (179 of 1,536 questions name a date): docs/benchmarks.md.
"""

from __future__ import annotations

import calendar
import re
from datetime import UTC, datetime, timedelta

SLACK_BEFORE = timedelta(days=7)
"""How far before the named time a memory still counts as "from then"."""

SLACK_AFTER = timedelta(days=30)
"""How far after the named time a memory still counts (it tells of the event later)."""

_MONTHS: dict[str, int] = {}
for _i in range(1, 13):
    _MONTHS[calendar.month_name[_i].lower()] = _i
    _MONTHS[calendar.month_abbr[_i].lower()] = _i
_MONTHS["sept"] = 9

_MON = "(" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + ")"  # longest first: "sept" before "sep"
_DAY_MONTH_YEAR = re.compile(rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?{_MON}\.?,?\s+(\d{{4}})\b", re.IGNORECASE)
_MONTH_DAY_YEAR = re.compile(rf"\b{_MON}\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?,?\s+(\d{{4}})\b", re.IGNORECASE)
_MONTH_YEAR = re.compile(rf"\b{_MON}\.?,?\s+(?:of\s+)?(\d{{4}})\b", re.IGNORECASE)
_RELATIVE = re.compile(r"\b(today|yesterday|(this|last|past) (week|month|year))\b", re.IGNORECASE)
_AGO = re.compile(r"\b(\d{1,3}|a|one|two|three|four|five|six) (day|week|month)s? ago\b", re.IGNORECASE)
_SMALL = {"a": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6}


def _day(year: int, month: int, day: int) -> tuple[datetime, datetime] | None:
    try:
        start = datetime(year, month, day, tzinfo=UTC)
    except ValueError:  # 31 February, day 0: not a date, so no window
        return None
    return start, start + timedelta(days=1)


def _month(year: int, month: int) -> tuple[datetime, datetime] | None:
    if not 1 <= year <= 9998:
        return None
    start = datetime(year, month, 1, tzinfo=UTC)
    end = datetime(year + 1, 1, 1, tzinfo=UTC) if month == 12 else datetime(year, month + 1, 1, tzinfo=UTC)
    return start, end


def _relative(text: str, now: datetime) -> tuple[datetime, datetime] | None:
    today = now.astimezone(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    m = _RELATIVE.search(text)
    if m:
        word = m.group(1).lower()
        if word == "today":
            return today, today + timedelta(days=1)
        if word == "yesterday":
            return today - timedelta(days=1), today
        which, unit = m.group(2).lower(), m.group(3).lower()
        if unit == "week":
            monday = today - timedelta(days=today.weekday())
            return (monday, today + timedelta(days=1)) if which == "this" else (monday - timedelta(days=7), monday)
        if unit == "month":
            first = today.replace(day=1)
            if which == "this":
                return first, today + timedelta(days=1)
            prev = (first - timedelta(days=1)).replace(day=1)
            return prev, first
        first = today.replace(month=1, day=1)
        return (first, today + timedelta(days=1)) if which == "this" else (first.replace(year=first.year - 1), first)
    m = _AGO.search(text)
    if m:
        raw = m.group(1).lower()
        n = _SMALL[raw] if raw in _SMALL else int(raw)
        days = n * {"day": 1, "week": 7, "month": 30}[m.group(2).lower()]
        center = today - timedelta(days=days)
        half = timedelta(days=max(1, days // 7))
        return center - half, center + half + timedelta(days=1)
    return None


def query_window(text: str, now: datetime | None = None) -> tuple[datetime, datetime] | None:
    """The [start, end) time the query names, before slack; None when it names none.

    Absolute dates win over relative phrases; the first date in the text is used.
    """
    try:
        m = _DAY_MONTH_YEAR.search(text)
        if m:
            return _day(int(m.group(3)), _MONTHS[m.group(2).lower()], int(m.group(1)))
        m = _MONTH_DAY_YEAR.search(text)
        if m:
            return _day(int(m.group(3)), _MONTHS[m.group(1).lower()], int(m.group(2)))
        m = _MONTH_YEAR.search(text)
        if m:
            return _month(int(m.group(2)), _MONTHS[m.group(1).lower()])
        return _relative(text, now or datetime.now(UTC))
    except (OverflowError, ValueError):  # a window reaching past year 1 or 9999
        return None


def widened(window: tuple[datetime, datetime]) -> tuple[datetime, datetime]:
    """The window with :data:`SLACK_BEFORE` / :data:`SLACK_AFTER` added (clamped to valid dates)."""
    start, end = window
    try:
        start = start - SLACK_BEFORE
    except OverflowError:
        start = datetime.min.replace(tzinfo=UTC)
    try:
        end = end + SLACK_AFTER
    except OverflowError:
        end = datetime.max.replace(tzinfo=UTC)
    return start, end
