"""Traversal-primary candidates: the knowledge graph's answer to a query (spec 001).

Flat recall (keyword + vector) finds memories whose *words* match the query. A question about
an entity ("What are Kate's hobbies?") is answered by memories that name the entity but share
few words with the question, spread over many sessions; the graph links them. So recall also

1. resolves the query's **focal entities**: the 1..4-word runs of the query (the same canonical
   form the write path stores, signet.knowledge.extract) matched against the agent's entity
   names and aliases; a suppressed entity (``entity_pinning``) is never focal;
2. **walks** entity → aspects → attributes → source memories, and entity → mentions → memories,
   then one hop along ``entity_dependencies`` (within ``traversal.max_hops`` and
   ``traversal.max_branching``), keeping only memories the request's filter allows (the same SQL
   as the flat legs, so scope, agent and project isolation hold);
3. **scores** each memory ``0.7·cos + 0.3·importance`` (cosine to the query embedding).

:func:`shape` then merges: a flat candidate the graph also reached gets a small boost
(``traversal.boost``: it is anchored *and* on topic); a traversal-only candidate is capped
below the best directly anchored one (``traversal.cap``) and at most 60 % of the result slots
go to traversal-only candidates (≥ 40 % stay flat). When no focal entity resolves, the legacy
**graph boost** applies: entities whose name contains a query word, one hop along ``relations``,
and the flat candidates that mention them get the boost.

Everything has a time budget (``traversal.timeout_ms``): past it the walk stops, recall goes on
with the flat candidates and :class:`Outcome` says so (``degraded``). A graph read that fails
(e.g. a store from before migration 23) degrades the same way; it never fails a recall.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from signet.config import TraversalSettings
from signet.models import GraphState
from signet.search.names import candidate_names
from signet.store.sqlite import Connection, sqlite3

log = logging.getLogger(__name__)

COS_WEIGHT = 0.7
IMPORTANCE_WEIGHT = 0.3
FLAT_SHARE = 0.4
"""Share of the result slots kept for flat (keyword/vector) candidates."""


@dataclass
class Outcome:
    """What the graph contributed to one recall."""

    focal: list[str] = field(default_factory=list)
    """Names of the focal entities resolved from the query."""
    reached: dict[str, float] = field(default_factory=dict)
    """memory id -> traversal score (``0.7·cos + 0.3·importance``), every memory the walk reached."""
    boosted: set[str] = field(default_factory=set)
    """Flat candidates the graph-boost fallback marked (no focal entity resolved)."""
    mode: str = "off"
    """``traversal``, ``graph_boost``, ``none`` (nothing resolved) or ``off``."""
    degraded: str | None = None
    """Why the graph was skipped or cut short (time budget, read error); flat results stand."""
    took_ms: float = 0.0


class _OutOfTime(Exception):
    pass


def traverse(
    conn: Connection,
    query: str,
    *,
    agent_id: str | None,
    where: str,
    params: list[Any],
    settings: TraversalSettings,
    cosines: Callable[[list[str]], dict[str, float]] | None,
) -> Outcome:
    """Resolve the query's focal entities and walk the graph to the memories ``where`` allows.
    ``cosines`` gives the query's cosine to given memories (None: no vectors, importance only)."""
    started = time.perf_counter()
    out = Outcome(mode="none")
    deadline = started + settings.timeout_ms / 1000.0

    def check() -> None:
        if time.perf_counter() > deadline:
            raise _OutOfTime

    try:
        names = candidate_names(query)
        focal = _focal(conn, names, agent_id, settings.max_focal)
        check()
        if focal:
            out.mode = "traversal"
            out.focal = [name for _, name in focal]
            ids = [eid for eid, _ in focal]
            ids += _hops(conn, ids, settings.max_hops, settings.max_branching)
            check()
            found = _memories(conn, ids, where, params, settings.max_branching)
            check()
            sims = cosines(list(found)) if cosines is not None and found else {}
            out.reached = {
                mid: COS_WEIGHT * max(sims.get(mid, 0.0), 0.0) + IMPORTANCE_WEIGHT * importance
                for mid, importance in found.items()
            }
        elif settings.graph_boost:
            boosted = _graph_boost(conn, names, agent_id, where, params)
            if boosted:
                out.mode = "graph_boost"
                out.boosted = boosted
        check()
    except _OutOfTime:
        out.degraded = f"graph traversal passed its {settings.timeout_ms} ms budget; flat results only"
        out.reached, out.boosted = {}, set()
    except sqlite3.Error as exc:
        log.warning("graph traversal failed, flat results only: %s", exc)
        out.degraded = f"graph traversal failed ({exc}); flat results only"
        out.reached, out.boosted = {}, set()
    out.took_ms = (time.perf_counter() - started) * 1000
    return out


def focal_entities(conn: Connection, text: str, agent_id: str, limit: int) -> list[tuple[str, str]]:
    """The entities (id, name) of ``agent_id`` that ``text`` names, by name or alias, longest
    first, suppressed ones left out: recall's focal-entity resolver, for other readers (the
    prompt-submit hook's current attributes) so the two never disagree on what a text names."""
    return _focal(conn, candidate_names(text), agent_id, limit)


def _focal(conn: Connection, names: list[str], agent_id: str | None, limit: int) -> list[tuple[str, str]]:
    """Entities (id, name) the query names, by canonical name or alias; longest names first so
    "new york city" wins over "york"; suppressed entities left out."""
    if not names:
        return []
    agent_sql, agent_params = ("AND e.agent_id = ?", [agent_id]) if agent_id is not None else ("", [])
    rows = conn.execute(
        "SELECT e.id, e.name, e.canonical_name FROM entities e"
        " WHERE e.canonical_name IN (SELECT value FROM json_each(?)) " + agent_sql + " UNION"
        " SELECT e.id, e.name, a.canonical_alias FROM entity_aliases a JOIN entities e ON e.id = a.entity_id"
        " WHERE a.canonical_alias IN (SELECT value FROM json_each(?)) " + agent_sql.replace("e.agent_id", "a.agent_id"),
        (json.dumps(names), *agent_params, json.dumps(names), *agent_params),
    ).fetchall()
    if not rows:
        return []
    suppressed = {
        r[0]
        for r in conn.execute(
            "SELECT entity_id FROM entity_pinning WHERE pin_type = 'suppress' AND entity_id IN"
            " (SELECT value FROM json_each(?))",
            (json.dumps([r[0] for r in rows]),),
        )
    }
    ranked = sorted(rows, key=lambda r: -len(str(r[2])))
    out: list[tuple[str, str]] = []
    covered: list[str] = []
    for eid, name, canon in ranked:
        if eid in suppressed or any(f" {canon} " in f" {c} " for c in covered) or eid in {e for e, _ in out}:
            continue  # "york" inside an already focal "new york city"
        out.append((str(eid), str(name)))
        covered.append(str(canon))
        if len(out) >= limit:
            break
    return out


def _hops(conn: Connection, entity_ids: list[str], max_hops: int, branching: int) -> list[str]:
    """Entities reached along ``entity_dependencies`` (both directions), strongest edges first."""
    seen = set(entity_ids)
    frontier = list(entity_ids)
    reached: list[str] = []
    for _ in range(max_hops):
        if not frontier:
            break
        rows = conn.execute(
            "SELECT target_entity_id, strength FROM entity_dependencies WHERE source_entity_id IN"
            " (SELECT value FROM json_each(?)) UNION ALL SELECT source_entity_id, strength FROM entity_dependencies"
            " WHERE target_entity_id IN (SELECT value FROM json_each(?)) ORDER BY 2 DESC LIMIT ?",
            (json.dumps(frontier), json.dumps(frontier), branching),
        ).fetchall()
        frontier = [str(r[0]) for r in rows if r[0] not in seen]
        seen.update(frontier)
        reached.extend(frontier)
    return reached


def _memories(conn: Connection, entity_ids: list[str], where: str, params: list[Any], limit: int) -> dict[str, float]:
    """memory id -> importance of the live memories the entities lead to: their current
    attributes' source memories (entity → aspect → attribute) and their mentions, newest first,
    at most ``limit`` per entity."""
    found: dict[str, float] = {}
    for eid in entity_ids:
        rows = conn.execute(
            "SELECT m.id, m.importance FROM memories m WHERE m.id IN ("
            " SELECT t.source_memory_id FROM entity_aspects s JOIN entity_attributes t ON t.aspect_id = s.id"
            " WHERE s.entity_id = ? AND t.status = 'active' AND t.source_memory_id IS NOT NULL"
            " UNION SELECT mm.memory_id FROM memory_entity_mentions mm WHERE mm.entity_id = ?)"
            f" AND {where} LIMIT ?",
            (eid, eid, *params, limit + 1),
        ).fetchall()
        if len(rows) > limit:
            continue  # a hub (a speaker of every other turn): walking it is no narrower than flat search
        for mid, importance in rows:
            found[str(mid)] = float(importance)
    return found


def _graph_boost(conn: Connection, names: list[str], agent_id: str | None, where: str, params: list[Any]) -> set[str]:
    """The spec's legacy graph boost: entities whose name contains a query word (most mentioned
    first, 20), one hop along ``relations`` (50), and the memories that mention any of them (200)."""
    words = [n for n in names if " " not in n and len(n) >= 4]
    if not words:
        return set()
    agent_sql, agent_params = ("AND agent_id = ?", [agent_id]) if agent_id is not None else ("", [])
    like = " OR ".join("canonical_name LIKE ? ESCAPE '\\'" for _ in words[:8])
    pats = ["%" + w.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%" for w in words[:8]]
    seeds = [
        str(r[0])
        for r in conn.execute(
            f"SELECT id FROM entities WHERE ({like}) {agent_sql} ORDER BY mentions DESC LIMIT 20",
            (*pats, *agent_params),
        )
    ]
    if not seeds:
        return set()
    hop = [
        str(r[0])
        for r in conn.execute(
            "SELECT target_entity_id FROM relations WHERE source_entity_id IN (SELECT value FROM json_each(?))"
            " UNION SELECT source_entity_id FROM relations WHERE target_entity_id IN (SELECT value FROM json_each(?))"
            " LIMIT 50",
            (json.dumps(seeds), json.dumps(seeds)),
        )
    ]
    rows = conn.execute(
        "SELECT m.id FROM memories m WHERE m.id IN (SELECT memory_id FROM memory_entity_mentions"
        f" WHERE entity_id IN (SELECT value FROM json_each(?)) LIMIT 200) AND {where}",
        (json.dumps(seeds + hop), *params),
    ).fetchall()
    return {str(r[0]) for r in rows}


def shape(
    scores: dict[str, float], flat: set[str], outcome: Outcome, settings: TraversalSettings, limit: int
) -> dict[str, float]:
    """Merge the graph's evidence into the fused ``scores`` (memory id -> score; ``flat`` holds
    the ids the keyword/vector legs found): boost anchored candidates the graph reached (or the
    fallback marked), cap traversal-only ones below the best anchored candidate, and keep at
    least 40 % of the top ``limit`` for flat candidates."""
    out = dict(scores)
    marked = set(outcome.reached) | outcome.boosted
    for mid in flat & marked:
        out[mid] = out[mid] * (1.0 + settings.boost)
    only = [mid for mid in out if mid not in flat]
    if not only:
        return out
    top_flat = max((out[m] for m in flat if m in out), default=0.0)
    ceiling = top_flat * settings.cap
    for mid in only:
        out[mid] = min(out[mid], ceiling)
    max_only = int(limit * (1.0 - FLAT_SHARE))
    ranked = sorted(out, key=lambda m: out[m], reverse=True)[:limit]
    excess = [m for m in ranked if m not in flat][max_only:]
    if excess:
        floor = min((out[m] for m in ranked if m in flat), default=0.0)
        for mid in excess:
            out[mid] = min(out[mid], floor * 0.999)
    return out


def graph_state(outcome: Outcome | None) -> GraphState | None:
    """The response's ``graph`` field: what the graph did, or None when its reads are off."""
    if outcome is None:
        return None
    mode = outcome.mode if outcome.mode in ("traversal", "graph_boost") else "none"
    return GraphState(
        mode=mode,
        focal_entities=outcome.focal,
        reached=len(outcome.reached) or len(outcome.boosted),
        degraded=outcome.degraded,
        took_ms=round(outcome.took_ms, 3),
    )
