"""The prospective-hint channel of recall (spec 001: "exact prospective hints can rescue
memories whose stored text uses a specific instance rather than the user's query class").

A memory's hints are the questions it would answer (signet.knowledge.hints, migration 38).
:func:`hint_matches` finds the memories whose hints match the recall's keyword query, under the
same filter as the flat keyword leg (scope, agent, project, time, deleted memories never), and
:func:`shape` merges them into the candidates as a separate evidence channel:

- a memory found **only** through its hints scores at most ``cap`` (0.75) of the best flat
  candidate's score: a guess about a future question never outranks what the words and the
  vector found directly;
- a memory found both ways gets at most ``1 + boost`` (x1.05) times its score.

Nothing else of the scoring changes, and with ``memory.pipelineV2.hints.enabled`` off the
channel is not read at all (signet.search.recall).
"""

from __future__ import annotations

from typing import Any

from signet.store.sqlite import Connection

OVERFETCH = 4
"""Hint rows read per memory wanted (a memory has up to ten hints; several may match)."""


def hint_matches(conn: Connection, match: str, where: str, params: list[Any], limit: int) -> list[tuple[str, float]]:
    """(memory id, raw BM25 of its best matching hint) of up to ``limit`` memories, best first.

    ``match`` is the recall's FTS5 expression (signet.search.fts: every term quoted, never user
    syntax); ``where`` / ``params`` the flat legs' filter over ``memories m``. BM25 is FTS5's
    (negative, lower is better), ``-ts_rank`` on PostgreSQL (signet.store.pg_dialect); equal
    scores in store order, so a recall's answer does not depend on the run."""
    if not match or limit <= 0:
        return []
    # CROSS JOIN pins the FTS table as the outer loop (signet.search.ftspool says why).
    sql = (
        "SELECT m.id, bm25(memory_hints_fts) AS r FROM memory_hints_fts"
        " CROSS JOIN memories m ON m.seq = memory_hints_fts.memory_seq"
        f" WHERE memory_hints_fts MATCH ? AND {where} ORDER BY r, m.seq LIMIT ?"
    )
    best: dict[str, float] = {}
    for row in conn.execute(sql, (match, *params, limit * OVERFETCH)):
        mid = str(row[0])
        if mid not in best:
            best[mid] = float(row[1])
            if len(best) >= limit:
                break
    return list(best.items())


def normalised(matches: list[tuple[str, float]]) -> dict[str, float]:
    """Each memory's hint BM25 over the best one's (1.0 for the best match), as the flat legs do."""
    top = max((abs(s) for _, s in matches), default=0.0)
    return {mid: (abs(s) / top if top > 0 else 0.0) for mid, s in matches}


def shape(
    scores: dict[str, float], flat: set[str], hinted: dict[str, float], *, cap: float, boost: float
) -> dict[str, float]:
    """The scores after the hint channel: ``hinted`` maps the memories whose hints matched to
    their normalised hint score (0..1). A flat candidate among them is multiplied by
    ``1 + boost x hint score``; a hint-only candidate is capped at ``cap`` x the best flat score
    (0 when there is no flat candidate: a hint alone then still ranks, by its own score)."""
    best_flat = max((scores[m] for m in flat if m in scores), default=0.0)
    out = dict(scores)
    for mid, h in hinted.items():
        if mid not in out:
            continue
        if mid in flat:
            out[mid] = out[mid] * (1.0 + boost * h)
        elif best_flat > 0:
            out[mid] = min(out[mid], cap * best_flat)
    return out
