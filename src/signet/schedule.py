"""When a task runs: a cron expression (``*/5 * * * *``, ``@hourly``; croniter, in UTC) or an
interval (``every 30s``, ``every 5m``, ``every 2h``, ``every 1d``)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta

from croniter import croniter

from signet.errors import InvalidRequest

_INTERVAL = re.compile(r"^(?:@?every)\s+(\d{1,9})\s*(s|sec|m|min|h|d)$", re.IGNORECASE)
_UNIT_S = {"s": 1, "sec": 1, "m": 60, "min": 60, "h": 3600, "d": 86_400}
MIN_INTERVAL_S = 1
MAX_INTERVAL_S = 366 * 86_400
MAX_MISSED_COUNTED = 10_000
"""Missed fire times counted one by one at most (a minutely task down for a month is "10000+")."""


@dataclass(frozen=True)
class Schedule:
    text: str
    every_s: int | None = None
    cron: str | None = None

    def next_after(self, t: datetime) -> datetime:
        """The first fire time strictly after ``t`` (aware, UTC)."""
        if self.every_s is not None:
            return t + timedelta(seconds=self.every_s)
        nxt: datetime = croniter(self.cron, t).get_next(datetime)
        return nxt

    def missed(self, due: datetime, now: datetime) -> tuple[int, datetime]:
        """How many fire times fell in ``[due, now)``, and the last of them."""
        count, last, t = 0, due, due
        while t < now and count < MAX_MISSED_COUNTED:
            count, last = count + 1, t
            t = self.next_after(t)
        return count, last


def parse(text: str) -> Schedule:
    """A :class:`Schedule`, or :class:`InvalidRequest` saying what is accepted."""
    text = text.strip()
    m = _INTERVAL.match(text)
    if m:
        every = int(m.group(1)) * _UNIT_S[m.group(2).lower()]
        if not MIN_INTERVAL_S <= every <= MAX_INTERVAL_S:
            raise InvalidRequest(f"an interval is between {MIN_INTERVAL_S} s and 366 days", code="invalid_schedule")
        return Schedule(text, every_s=every)
    if text and croniter.is_valid(text):
        return Schedule(text, cron=text)
    raise InvalidRequest(
        f"invalid schedule {text[:80]!r}: give a cron expression ('*/5 * * * *', '@hourly') or an interval "
        "('every 30s', 'every 5m', 'every 2h', 'every 1d')",
        code="invalid_schedule",
    )
