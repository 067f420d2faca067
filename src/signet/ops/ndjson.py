"""Exports as NDJSON, read a page at a time: a large export never sits in memory, and each page
is its own short read (no reader held open while a slow client consumes the stream)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from signet.store.database import Database


def keyset_lines(
    db: Database,
    sql: str,
    params: Sequence[Any],
    *,
    key: str,
    limit: int,
    page: int,
    item: Callable[[Any], dict[str, Any]],
) -> Iterator[str]:
    """One JSON line per row of ``sql``, at most ``limit``, oldest first.

    ``sql`` ends with ``… AND <key> > ? ORDER BY <key> LIMIT ?`` (keyset paging: ``key`` is an
    indexed, increasing column, so each page starts where the last one ended even while rows
    are added); ``params`` are its other parameters, in order."""
    after, left = 0, limit
    while left > 0:
        n = min(page, left)
        args = (*params, after, n)
        rows: list[Any] = db.read(lambda c: list(c.execute(sql, args)))  # noqa: B023 - read at once
        for r in rows:
            yield json.dumps(item(r), separators=(",", ":")) + "\n"
        if len(rows) < n:
            return
        after, left = int(rows[-1][key]), left - len(rows)
