"""Currentness from the knowledge graph: recall puts the current fact first and marks the
superseded one (issue 18; spec 001 "currentness shaping dampens grouped claim-key superseded
structured facts").

When an LLM builds the graph (signet.pipeline.knowledge), a memory is the source of attribute
claims ("Alice | home | city = Berlin"), and a later memory stating another value of the same
claim supersedes them (signet.knowledge.attributes). Recall reads that here, after fusion, the
nudges, the life stage and the traversal merge, just before the final sort:

- a claim counts as superseded while the memory stating its newer value is live: forgetting
  that memory (the newer "fact" was wrong) makes the old value current again;
- a candidate whose claims are **all** superseded is marked ``superseded`` with
  ``superseded_by``, the memory stating the current value (the claim's active value), and its score is multiplied by :data:`ALL_SUPERSEDED` (0.65); one with only some of
  its claims superseded by :data:`SOME_SUPERSEDED` (0.85); a candidate stating a value that
  superseded another gets :data:`CURRENT` (1.03);
- the current memory then ranks **above** the superseded one: raised to just above it when its
  own score is lower, and brought in as a candidate when flat search did not find it (it answers
  the same question: it is the newer value of the same claim). It must pass the request's filter
  (scope, agent, project, type...) like every candidate; when it does not, the old memory is still
  marked, without an id.

When the query names a past period ("where did she live in 2020?", signet.search.timeframe) the
old value may be the answer: the marks stay, the order is left alone.

A fact the pipeline wrote from a memory (``source_type`` ``pipeline``) carries that memory's
claims whose value it states, so "Alice lives in Berlin" (extracted from "I helped Alice move in
Berlin") is marked with its source.

Claims are read for the **reader's agent** only (the request's agent, or a scoped caller's own
agent): another agent's knowledge never shapes or marks a recall, even over memories it may read
(a shared agent's global memory). An unscoped local caller reads each memory's owner's claims.
Without an LLM the deterministic builder writes no attributes, so none of this changes a ranking.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from signet.search.names import canonical
from signet.store.sqlite import Connection

ALL_SUPERSEDED = 0.65
"""Score factor of a memory whose every claim has a newer value."""
SOME_SUPERSEDED = 0.85
"""Score factor of a memory some of whose claims have a newer value."""
CURRENT = 1.03
"""Score factor of a memory stating a value that superseded another: the current fact."""
ABOVE = 1.001
"""The current memory is placed at least this factor above the superseded one it replaces."""


@dataclass(frozen=True)
class Mark:
    """What the graph says about one recall result."""

    superseded: bool
    """Every claim this memory states has a newer value (an event it states is never superseded)."""
    superseded_by: str | None
    """The memory stating the current value (None: not superseded, or not readable by the caller)."""
    current: bool
    """This memory states a value that superseded an older one."""


@dataclass
class _Claim:
    id: str
    memory: str
    status: str
    key: str
    value: str
    agent: str
    replaced_other: bool


def _claims(conn: Connection, sources: list[str], reader: str | None) -> list[_Claim]:
    agent_sql, agent_params = (" AND t.agent_id = ?", [reader]) if reader is not None else ("", [])
    rows = conn.execute(
        "SELECT t.id, t.source_memory_id, t.status, t.claim_key, t.attribute_value, t.agent_id,"
        " EXISTS (SELECT 1 FROM entity_attributes o WHERE o.superseded_by = t.id) FROM entity_attributes t"
        " WHERE t.source_memory_id IN (SELECT value FROM json_each(?)) AND t.claim_key IS NOT NULL" + agent_sql,
        (json.dumps(sources), *agent_params),
    ).fetchall()
    return [_Claim(str(r[0]), str(r[1]), str(r[2]), str(r[3]), str(r[4]), str(r[5]), bool(r[6])) for r in rows]


def _current(conn: Connection, keys: set[tuple[str, str]]) -> dict[tuple[str, str], str]:
    """(agent, claim key) -> the live memory stating the claim's current value: its newest active
    value whose memory is not deleted. One indexed read, however long the claim's history (the
    ``superseded_by`` chain is history; the active row is the present). A newer value whose
    memory was forgotten supersedes nothing: with no live active value the claim has no
    current memory, and its older values count as current again."""
    if not keys:
        return {}
    # One index lookup per key, in this order (CROSS JOIN): with the statistics the daemon's
    # ANALYZE leaves, a plain join scanned every live memory first (19 ms at 10k; 0.2 ms so).
    rows = conn.execute(
        "SELECT t.agent_id, t.claim_key, t.source_memory_id FROM json_each(?) k"
        " CROSS JOIN entity_attributes t ON t.agent_id = json_extract(k.value, '$[0]')"
        " AND t.claim_key = json_extract(k.value, '$[1]') AND t.status = 'active'"
        " CROSS JOIN memories m ON m.id = t.source_memory_id"
        " WHERE t.claim_type = 'state' AND m.is_deleted = 0 ORDER BY m.created_at",
        (json.dumps(sorted(keys)),),
    ).fetchall()
    return {(str(r[0]), str(r[1])): str(r[2]) for r in rows}  # the newest wins


def _allowed(conn: Connection, ids: set[str], where: str, params: list[Any]) -> set[str]:
    if not ids:
        return set()
    return {
        str(r[0])
        for r in conn.execute(
            f"SELECT m.id FROM json_each(?) k CROSS JOIN memories m ON m.id = k.value WHERE {where}",
            (json.dumps(sorted(ids)), *params),
        )
    }


def marks(
    conn: Connection,
    rows: Mapping[str, Mapping[str, Any]],
    *,
    reader: str | None,
    where: str,
    params: list[Any],
) -> dict[str, Mark]:
    """The marks of the candidates whose ``rows`` (``memories`` rows) state claims; only
    candidates the graph says something about appear."""
    sources: dict[str, list[str]] = {}  # claim source memory -> candidates that carry its claims
    for mid, row in rows.items():
        sources.setdefault(mid, []).append(mid)
        if row["source_type"] == "pipeline" and row["source_id"]:
            sources.setdefault(str(row["source_id"]), []).append(mid)
    claims = _claims(conn, sorted(sources), reader)
    if not claims:
        return {}
    per: dict[str, list[_Claim]] = {}
    for cl in claims:
        for mid in sources.get(cl.memory, []):
            row = rows[mid]
            if cl.agent != row["agent_id"]:
                continue  # another agent's knowledge about this memory is not the reader's
            if mid != cl.memory and canonical(cl.value) not in canonical(str(row["content"])):
                continue  # a derived fact carries only the claims it states
            per.setdefault(mid, []).append(cl)
    stale_keys = {(cl.agent, cl.key) for cls in per.values() for cl in cls if cl.status == "superseded"}
    current = _current(conn, stale_keys)
    readable = _allowed(conn, set(current.values()), where, params)
    out: dict[str, Mark] = {}
    for mid, cls in per.items():
        # superseded by a value a live memory still states (see _current)
        stale = [cl for cl in cls if cl.status == "superseded" and current.get((cl.agent, cl.key), mid) != mid]
        newer = [current[(cl.agent, cl.key)] for cl in stale]
        by = next((m for m in newer if m in readable), None)
        out[mid] = Mark(
            superseded=bool(stale) and len(stale) == len(cls),  # only some stale: the link, not the mark
            superseded_by=by,
            current=any(cl.status == "active" and cl.replaced_other for cl in cls),
        )
    return out


def shape(
    scores: dict[str, float], matches: dict[str, float], found: Mapping[str, Mark], *, reorder: bool
) -> dict[str, tuple[float, float]]:
    """Apply ``found`` to ``scores`` (memory id -> score, in place) and ``matches`` (the pre-life
    match scores ``min_score`` applies to): the factors, then each current memory above the
    superseded one it replaces. Returns the current memories not among the candidates yet, with
    the (score, match) they join at. ``reorder`` False (the query names a past period): nothing
    moves."""
    if not reorder:
        return {}
    before = dict(scores)
    for mid, mark in found.items():
        if mid not in scores:
            continue
        stale = mark.superseded_by is not None or mark.superseded
        if mark.superseded:
            scores[mid] *= ALL_SUPERSEDED
        elif stale:
            scores[mid] *= SOME_SUPERSEDED
        if mark.current:
            scores[mid] *= CURRENT
    joining: dict[str, tuple[float, float]] = {}
    for mid, mark in found.items():
        new = mark.superseded_by
        if not mark.superseded or new is None or mid not in before:
            continue
        floor = max(before[mid], scores[mid]) * ABOVE
        if new in scores:
            if scores[new] < floor:
                scores[new] = floor
                matches[new] = max(matches.get(new, 0.0), matches.get(mid, 0.0))
        else:
            score, match = joining.get(new, (0.0, 0.0))
            joining[new] = (max(score, floor), max(match, matches.get(mid, 0.0)))
    return joining
