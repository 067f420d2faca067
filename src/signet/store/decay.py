"""Importance decay: ``importance x decay_rate ^ days_since_access`` for non-pinned memories.

Computed when read, never written back, so the stored importance stays what the user or
the pipeline set, and changing ``decay_rate`` takes effect at once.
"""

from __future__ import annotations

from datetime import UTC, datetime


def parse_ts(value: str | None) -> datetime | None:
    if not value:
        return None
    try:
        dt = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return dt if dt.tzinfo else dt.replace(tzinfo=UTC)


def effective_importance(
    importance: float, pinned: bool, last_access: str | None, rate: float, now: datetime | None = None
) -> float:
    if pinned:
        return 1.0
    when = parse_ts(last_access)
    if when is None:
        return importance
    days = max(0.0, ((now or datetime.now(UTC)) - when).total_seconds() / 86400.0)
    return float(importance * rate**days)


def sql_decay(importance: float | None, pinned: int | None, last_access: str | None, rate: float | None) -> float:
    """The same rule as a SQLite function (``signet_decay``) for ``importance_min`` filters."""
    return effective_importance(float(importance or 0.0), bool(pinned), last_access, float(rate or 1.0))
