"""Post-fusion dampening (spec 001, ``dampening.ts``): three corrections of the fused score,
run after the nudges and the graph's merge and before currentness and the final sort.

- **gravity**: a candidate the vector leg pulled in (cosine at least ``gravity_min_cosine``)
  whose own text shares no word with the query is x ``gravity_factor``: embeddings place
  "what does Alice think of Rust?" near every opinion about any language, and a memory that
  names none of the query's words is more often such a neighbour than the answer;
- **hub**: a candidate every one of whose entities is a hub (in the top ``1 - hub_percentile``
  of its agent's entities by mentions) is x ``hub_factor``: linked only to what half the store
  is linked to (a speaker, the project), it carries no evidence of its own;
- **resolution**: a decision or rule, or a memory anchored to a date, is x
  ``resolution_factor``: the memories that settle a question rather than discuss it.

Each stage has its own switch (``search.dampening``); all are off by default because none gained
on both yardsticks (docs/benchmarks.md, "Post-fusion dampening"). Pure functions over plain data
but for :func:`entity_links` and :class:`HubThresholds`, which read (``db.read``).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Collection, Iterable, Mapping

from signet.search.rank import anchors_time
from signet.search.tokens import tokens
from signet.store.sqlite import Connection

RESOLVING_TYPES = frozenset({"decision", "rule"})
"""Memory types that settle something (spec: "constraints, decisions"; a rule is our constraint)."""


def shares_terms(content: str, terms: Collection[tuple[str, bool]]) -> bool:
    """Whether ``content`` contains any of recall's (stem, prefix) terms as FTS5 would match them."""
    if not terms:
        return True
    words = set(tokens(content))
    return any(stem in words or (prefix and any(w.startswith(stem) for w in words)) for stem, prefix in terms)


def gravity(
    scores: Mapping[str, float],
    contents: Mapping[str, str],
    cosines: Mapping[str, float | None],
    terms: Collection[tuple[str, bool]],
    *,
    factor: float,
    min_cosine: float,
) -> dict[str, float]:
    """Scores with vector-found candidates that share no query word multiplied by ``factor``."""
    out = dict(scores)
    if not terms:
        return out
    for mid, score in scores.items():
        cos = cosines.get(mid)
        text = contents.get(mid)
        if cos is None or cos < min_cosine or text is None:
            continue
        if not shares_terms(text, terms):
            out[mid] = score * factor
    return out


def hub(
    scores: Mapping[str, float],
    links: Mapping[str, Collection[str]],
    hubs: Collection[str],
    *,
    factor: float,
) -> dict[str, float]:
    """Scores with candidates linked only to hub entities multiplied by ``factor``; a candidate
    with no entity at all is left alone (nothing says it is generic)."""
    out = dict(scores)
    for mid, ents in links.items():
        if mid in out and ents and all(e in hubs for e in ents):
            out[mid] = out[mid] * factor
    return out


def resolution(
    scores: Mapping[str, float],
    types: Mapping[str, str | None],
    contents: Mapping[str, str],
    *,
    factor: float,
) -> dict[str, float]:
    """Scores with decisions, rules and date-anchored memories multiplied by ``factor``."""
    out = dict(scores)
    for mid, score in scores.items():
        kind = types.get(mid)
        text = contents.get(mid, "")
        if (kind is not None and kind in RESOLVING_TYPES) or anchors_time(text):
            out[mid] = score * factor
    return out


def entity_links(conn: Connection, ids: Iterable[str]) -> dict[str, set[str]]:
    """memory id -> ids of the entities it is linked to."""
    wanted = list(ids)
    out: dict[str, set[str]] = {m: set() for m in wanted}
    if not wanted:
        return out
    rows = conn.execute(
        "SELECT memory_id, entity_id FROM memory_entity_mentions WHERE memory_id IN (SELECT value FROM json_each(?))",
        (json.dumps(wanted),),
    ).fetchall()
    for mid, eid in rows:
        out[str(mid)].add(str(eid))
    return out


class HubThresholds:
    """Each agent's hub threshold (the mentions count at ``percentile`` of its entities),
    remembered for ``ttl_s``: finding it sorts all of an agent's entities, which a store of a
    million memories has by the hundred thousand, and it moves slowly."""

    def __init__(self, ttl_s: float = 60.0) -> None:
        self.ttl_s = ttl_s
        self._known: dict[tuple[str, float], tuple[float, float]] = {}
        self._lock = threading.Lock()

    def hubs(self, conn: Connection, entity_ids: Collection[str], percentile: float) -> set[str]:
        """Those of ``entity_ids`` mentioned more often than their agent's ``percentile`` of
        mentions (strictly: where most entities are mentioned once, those are not hubs)."""
        if not entity_ids:
            return set()
        rows = conn.execute(
            "SELECT id, agent_id, mentions FROM entities WHERE id IN (SELECT value FROM json_each(?))",
            (json.dumps(list(entity_ids)),),
        ).fetchall()
        return {str(eid) for eid, agent, mentions in rows if mentions > self.threshold(conn, str(agent), percentile)}

    def threshold(self, conn: Connection, agent: str, percentile: float) -> float:
        key = (agent, percentile)
        now = time.monotonic()
        with self._lock:
            known = self._known.get(key)
        if known is not None and now - known[0] < self.ttl_s:
            return known[1]
        value = _threshold(conn, agent, percentile)
        with self._lock:
            self._known[key] = (now, value)
        return value


def _threshold(conn: Connection, agent: str, percentile: float) -> float:
    """The mentions count at ``percentile`` of the agent's entities (an entity above it is a hub)."""
    (count,) = conn.execute("SELECT COUNT(*) FROM entities WHERE agent_id = ?", (agent,)).fetchone()
    if not count:
        return float("inf")
    offset = min(int(count) - 1, int(count * (1.0 - percentile)))
    row = conn.execute(
        "SELECT mentions FROM entities WHERE agent_id = ? ORDER BY mentions DESC LIMIT 1 OFFSET ?", (agent, offset)
    ).fetchone()
    return float(row[0]) if row is not None else float("inf")
