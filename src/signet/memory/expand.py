"""Recall's ``expand``: transcript excerpts joined back onto the best results, after ranking.

A memory extracted from a session keeps the session's key as its ``source_id``; the turns
around where it was said are often what makes it usable ("we decided X" -- why, instead of
what?). Recall ranks memories only; this module runs after the ranking is final and attaches
an excerpt (signet.store.excerpts) to each of the top ``expand_limit`` results that has one, so
transcript text never takes a memory's place or changes an order (spec 001: "capped below real
memories"). Its size is bounded: at most ``MAX_EXPAND_RESULTS`` results, ``2 x window + 1``
turns each, every turn cut to ``EXCERPT_TURN_CHARS``.

The excerpts are read in one read-only ``db.read``, keyed by each result's own id, under the
caller's scope: a scoped caller gets turns of its own agent's (and project's) sessions only.
"""

from __future__ import annotations

import logging

from signet.models import EXCERPT_TURN_CHARS, ExcerptTurn, RecallExcerpt, RecallRequest, RecallResult
from signet.store.database import Database
from signet.store.excerpts import Excerpt, memory_excerpts
from signet.store.scope import ReadScope
from signet.store.sqlite import Connection, sqlite3

log = logging.getLogger(__name__)


def _turn(turn: dict[str, object]) -> ExcerptTurn:
    text = str(turn["content"])
    cut = len(text) > EXCERPT_TURN_CHARS
    return ExcerptTurn(
        index=int(str(turn["index"])),
        role=str(turn["role"]),
        content=text[: EXCERPT_TURN_CHARS - 1] + "…" if cut else text,
        timestamp=str(turn["timestamp"]) if turn.get("timestamp") else None,
        truncated=cut,
    )


def as_model(ex: Excerpt) -> RecallExcerpt:
    """The API's form of an excerpt, each turn's text capped."""
    return RecallExcerpt(
        session_key=ex.session_key,
        turn_index=ex.turn_index,
        turns=[_turn(t) for t in ex.turns],
        score=round(ex.score, 6),
    )


def _read(conn: Connection, ids: list[str], window: int, scope: ReadScope) -> dict[str, RecallExcerpt]:
    found: dict[str, RecallExcerpt] = {}
    for mid in ids:
        excerpts = memory_excerpts(conn, mid, around=window, limit=1, scope=scope)
        if excerpts:
            found[mid] = as_model(excerpts[0])
    return found


def attach(db: Database, results: list[RecallResult], req: RecallRequest, scope: ReadScope) -> list[RecallResult]:
    """``results`` (already ranked) with an excerpt on each of the top ``req.expand_limit`` that
    was extracted from a session ``scope`` may read; the order and the rest unchanged.

    A failing transcript read (a damaged ``transcript_turns_fts``) costs the excerpts, never the
    recall: the memories are the answer, the excerpts only evidence for them."""
    ids = [r.id for r in results[: req.expand_limit] if r.source_id]
    if not ids:
        return results
    try:
        found = db.read(lambda c: _read(c, ids, req.expand_window, scope))
    except sqlite3.Error as exc:
        log.warning("recall expand: reading transcript excerpts failed, results without them: %s", exc)
        return results
    return [r.model_copy(update={"excerpt": found[r.id]}) if r.id in found else r for r in results]
