"""Signals (docs/lifecycle.md): a memory at or above ``memory.signals.min_importance`` is shown
once to every consumer (a harness session, or any name a client picks) at its next prompt.

Each consumer has a watermark, the ``seq`` of the last memory it was given (migration 22).
:meth:`SignalBoard.deliver` reads what is above it and advances it in one write transaction, so
a signal is delivered once per consumer, across daemon restarts. :meth:`peek` and :meth:`ack`
split the two for clients that acknowledge after they showed the signals (at least once).
Memories older than ``max_age_s`` never signal: a new consumer is not flooded with the past.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from signet.config import SignalsSettings
from signet.models import Signal, SignalAckResponse, SignalsResponse
from signet.store import lifecycle
from signet.store.database import Database
from signet.store.records import to_iso
from signet.store.scope import UNSCOPED, ReadScope
from signet.store.sqlite import Connection


class SignalBoard:
    def __init__(self, db: Database, settings: SignalsSettings) -> None:
        self.db = db
        self.settings = settings

    def _pending(
        self, conn: Connection, consumer: str, scope: ReadScope, limit: int, own_session: str | None = None
    ) -> tuple[int | None, list[Any]]:
        mark = lifecycle.watermark(conn, consumer)
        since = to_iso(datetime.now(UTC) - timedelta(seconds=self.settings.max_age_s))
        where, params = scope.sql("m")
        if own_session is not None:  # what a session saved itself is no news to it
            where += " AND NOT (m.source_type = 'hook' AND m.source_id IS ?)"
            params = [*params, own_session]
        rows = lifecycle.pending_signals(
            conn,
            after_seq=mark or 0,
            min_importance=self.settings.min_importance,
            created_since=since,
            limit=limit,
            where=where,
            params=params,
        )
        return mark, rows

    def peek(self, consumer: str, *, scope: ReadScope = UNSCOPED, limit: int = 20) -> SignalsResponse:
        """The consumer's pending signals; the watermark stays until :meth:`ack`."""
        mark, rows = self.db.read(lambda c: self._pending(c, consumer, scope, limit))
        return _response(consumer, mark, rows)

    def ack(self, consumer: str, cursor: int) -> SignalAckResponse:
        """Advance the consumer's watermark to ``cursor`` (never back)."""

        def write(conn: Connection) -> int:
            lifecycle.advance(conn, consumer, cursor, 0)
            return lifecycle.watermark(conn, consumer) or 0

        return SignalAckResponse(consumer=consumer, watermark=self.db.write(write))

    def deliver(
        self,
        consumer: str,
        *,
        scope: ReadScope = UNSCOPED,
        limit: int | None = None,
        own_session: str | None = None,
    ) -> SignalsResponse:
        """The pending signals, with the watermark advanced past them in the same transaction;
        ``own_session``: a harness session id whose own hook saves are not signalled to it."""
        n = limit if limit is not None else self.settings.max_per_prompt

        def write(conn: Connection) -> SignalsResponse:
            mark, rows = self._pending(conn, consumer, scope, n, own_session)
            out = _response(consumer, mark, rows)
            if rows:
                lifecycle.advance(conn, consumer, out.cursor, len(rows))
            return out

        return self.db.write(write)


def _response(consumer: str, mark: int | None, rows: list[Any]) -> SignalsResponse:
    signals = [
        Signal(
            id=r["id"],
            seq=int(r["seq"]),
            content=r["content"],
            type=r["type"],
            importance=float(r["importance"]),
            project=r["project"],
            agent_id=r["agent_id"],
            created_at=r["created_at"],
        )
        for r in rows
    ]
    cursor = signals[-1].seq if signals else (mark or 0)
    return SignalsResponse(consumer=consumer, signals=signals, cursor=cursor, watermark=mark)
