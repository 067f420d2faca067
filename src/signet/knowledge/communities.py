"""Entity communities: the agent's entities clustered by Louvain (spec 001, community-detection).

Per agent, an undirected weighted graph of its entities (:func:`build_graph`):

- **co-mention**: two entities linked to the same live memory. A memory contributes a pair
  weight of ``1/(k-1)`` between each two of its ``k`` kept entities, so every entity gets at
  most 1 from one memory whatever the memory's length; and it keeps only its
  :data:`PER_MEMORY` most mentioned entities (a turn naming 40 entities makes 28 pairs, not
  780). Entities in fewer than :data:`MIN_MENTIONS` memories join only through explicit
  edges: one mention says nothing about where an entity belongs. "Mentioned" counts the
  memories linked to the entity (``memory_entity_links``).
- **relations** (the LLM's triples) add their ``mentions`` count, **dependencies** 1 each.
- **hubs** are left out: an entity in more than :data:`HUB_SHARE` of the agent's memories
  (at least :data:`HUB_FLOOR`), the speaker of half a conversation, ties everything to
  everything and would be one community's whole name.
- at most :data:`MAX_EDGES` edges, the heaviest (a bound on the clustering's time and memory).

``networkx.community.louvain_communities`` (seeded: the same graph gives the same
communities) splits it; communities of one entity are not kept. Each is stored with a name
(its :data:`NAME_MEMBERS` most mentioned members), its size, a quality (the share of its
members' edge weight that stays inside it: ``strong`` >= 0.7, ``moderate`` >= 0.4, else
``fragmented``) and the time it was computed; its id is derived from the agent and its
members, so an unchanged community keeps its id across runs. :func:`replace` swaps the
agent's previous communities for the new ones in one write transaction; the graph is read
and clustered before it, outside the writer (seconds on a large store, docs/benchmarks.md).
"""

from __future__ import annotations

import heapq
import itertools
import time
import uuid
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, Field

from signet.store.records import now_iso
from signet.store.sqlite import Connection

PER_MEMORY = 8
"""Entities of one memory paired with each other (its most mentioned ones)."""
MIN_MENTIONS = 2
"""Mentions an entity needs to be paired by co-mention."""
HUB_SHARE = 0.02
HUB_FLOOR = 50
"""An entity mentioned more often than ``max(HUB_FLOOR, HUB_SHARE x live memories)`` is a hub."""
MAX_EDGES = 300_000
"""The heaviest edges kept: Louvain took 10-12 s on 173,443 edges at 116,000 memories, as on 247,375 at a
million, on a loaded machine (docs/benchmarks.md)."""
SEED = 42
NAME_MEMBERS = 3
NAMESPACE = uuid.UUID("6f0c1a52-8d0e-4c36-9b1e-2f6d3c9a7e41")
"""Community ids: uuid5 of the agent and its sorted member ids under this namespace."""


@dataclass
class Node:
    id: str
    name: str
    mentions: int
    """The memories linked to it."""


@dataclass
class EntityGraph:
    agent_id: str
    nodes: dict[int, Node]
    """Every entity of the agent, by rowid (the links' key)."""
    weights: dict[tuple[int, int], float]
    """Edge weight by (smaller rowid, larger rowid)."""
    memories: int
    hubs: list[int] = field(default_factory=list)
    dropped_edges: int = 0


@dataclass
class Community:
    id: str
    name: str
    quality: str
    members: list[str]
    """Entity ids, most mentioned first."""


class RefreshResult(BaseModel):
    agent_id: str
    computed_at: str
    communities: int
    members: int = Field(description="entities placed in a community")
    entities: int = Field(description="the agent's entities")
    edges: int = Field(description="edges of the graph clustered (after the cap)")
    hubs: list[str] = Field(description="entities left out as hubs (names; the first 20, most linked first)")
    hub_count: int = Field(0, description="entities left out as hubs")
    modularity: float | None = Field(description="Louvain's modularity of the split (None without edges)")
    took_ms: float


def _add(weights: dict[tuple[int, int], float], a: int, b: int, w: float) -> None:
    if a != b:
        key = (a, b) if a < b else (b, a)
        weights[key] = weights.get(key, 0.0) + w


MEMORY_PAGE = 50_000
"""Memories' links read per statement: PostgreSQL's driver holds a statement's whole answer in memory."""


def _memories(conn: Connection) -> Iterator[tuple[int, list[str]]]:
    """Every memory's linked entity rowids (as text), by memory, in pages (keyset on the seq).

    The links table's own index alone, grouped by SQL: joining the memories (to skip forgotten
    ones) and the entities (to keep the agent's) read the whole memories table, 70 s of the 77 s
    a run took at a million memories, and fetching the 14.6 million links one row each took
    another 20 s; one row per memory with its links as text takes 8 s. Forgotten memories and
    other agents' entities are then sets looked up in Python."""
    last = -1
    while True:
        page = conn.execute(
            "SELECT memory_seq, GROUP_CONCAT(CAST(entity_rowid AS TEXT)) FROM memory_entity_links WHERE memory_seq > ?"
            " GROUP BY memory_seq ORDER BY memory_seq LIMIT ?",
            (last, MEMORY_PAGE),
        ).fetchall()
        for seq, rowids in page:
            yield int(seq), str(rowids).split(",")
        if len(page) < MEMORY_PAGE:
            return
        last = int(page[-1][0])


def build_graph(conn: Connection, agent: str) -> EntityGraph:
    """The agent's weighted entity graph (see the module's docstring), read in one snapshot."""
    # An entity's weight here is its number of linked memories, not ``entities.mentions``: the
    # inline linker links a memory to an entity it names without counting a mention.
    nodes = {
        int(r[0]): Node(str(r[1]), str(r[2]), int(r[3]))
        for r in conn.execute(
            "SELECT e.rowid, e.id, e.name, (SELECT COUNT(*) FROM memory_entity_links l WHERE l.entity_rowid = e.rowid)"
            " FROM entities e WHERE e.agent_id = ?",
            (agent,),
        )
    }
    memories = int(
        conn.execute("SELECT COUNT(*) FROM memories WHERE agent_id = ? AND is_deleted = 0", (agent,)).fetchone()[0]
    )
    cap = max(HUB_FLOOR, HUB_SHARE * memories)
    hubs = {k for k, n in nodes.items() if n.mentions > cap}
    by_id = {n.id: k for k, n in nodes.items() if k not in hubs}
    weights: dict[tuple[int, int], float] = defaultdict(float)
    deleted = {int(r[0]) for r in conn.execute("SELECT seq FROM memories WHERE is_deleted = 1")}
    rank = {str(k): (-n.mentions, k) for k, n in nodes.items() if k not in hubs and n.mentions >= MIN_MENTIONS}
    for seq, rowids in _memories(conn):
        if seq in deleted:
            continue
        kept = [rank[r] for r in rowids if r in rank]
        if len(kept) < 2:
            continue
        kept.sort()  # most linked first
        chosen = sorted(k for _, k in kept[:PER_MEMORY])
        w = 1.0 / (len(chosen) - 1)
        for pair in itertools.combinations(chosen, 2):
            weights[pair] += w
    explicit = conn.execute(
        "SELECT r.source_entity_id, r.target_entity_id, CASE WHEN r.mentions > 1 THEN r.mentions ELSE 1 END"
        " FROM relations r"
        " JOIN entities e ON e.id = r.source_entity_id WHERE e.agent_id = ?"
        " UNION ALL SELECT source_entity_id, target_entity_id, 1 FROM entity_dependencies WHERE agent_id = ?",
        (agent, agent),
    )
    for src, dst, w in explicit:
        ends = by_id.get(str(src)), by_id.get(str(dst))
        if ends[0] is not None and ends[1] is not None:
            _add(weights, ends[0], ends[1], float(w))
    dropped = 0
    if len(weights) > MAX_EDGES:
        dropped = len(weights) - MAX_EDGES
        weights = defaultdict(float, heapq.nlargest(MAX_EDGES, weights.items(), key=lambda kv: (kv[1], kv[0])))
    return EntityGraph(agent, nodes, dict(weights), memories, sorted(hubs), dropped)


def cluster(graph: EntityGraph) -> tuple[list[Community], float | None]:
    """Louvain over the graph: its communities of two or more entities (largest first) and the
    split's modularity."""
    if not graph.weights:
        return [], None
    import networkx as nx  # ~0.3 s to import: only when there is something to cluster

    g: Any = nx.Graph()
    g.add_weighted_edges_from((a, b, w) for (a, b), w in sorted(graph.weights.items()))
    parts = [p for p in nx.community.louvain_communities(g, weight="weight", seed=SEED) if len(p) > 1]
    modularity = float(nx.community.modularity(g, parts, weight="weight")) if parts else None
    strength = dict(g.degree(weight="weight"))
    out: list[Community] = []
    for part in parts:
        members = sorted(part, key=lambda k: (-graph.nodes[k].mentions, graph.nodes[k].name, k))
        inside = sum(w for a, b, w in g.subgraph(part).edges(data="weight"))
        total = sum(strength[k] for k in part)
        share = 2 * inside / total if total else 0.0
        quality = "strong" if share >= 0.7 else "moderate" if share >= 0.4 else "fragmented"
        ids = [graph.nodes[k].id for k in members]
        out.append(
            Community(
                id=str(uuid.uuid5(NAMESPACE, graph.agent_id + "\n" + "\n".join(sorted(ids)))),
                name=", ".join(graph.nodes[k].name for k in members[:NAME_MEMBERS]),
                quality=quality,
                members=ids,
            )
        )
    out.sort(key=lambda c: (-len(c.members), c.name))
    return out, modularity


def replace(conn: Connection, agent: str, communities: list[Community], computed_at: str) -> int:
    """Swap the agent's stored communities for ``communities`` (call inside one write). A member
    whose entity went away since the graph was read is skipped. Returns the members written."""
    conn.execute(
        "DELETE FROM entity_community_members WHERE community_id IN"
        " (SELECT id FROM entity_communities WHERE agent_id = ?)",
        (agent,),
    )
    conn.execute("DELETE FROM entity_communities WHERE agent_id = ?", (agent,))
    for c in communities:
        conn.execute(
            "INSERT INTO entity_communities(id, agent_id, label, size, quality, created_at) VALUES (?, ?, ?, ?, ?, ?)"
            " ON CONFLICT(id) DO UPDATE SET label = excluded.label, size = excluded.size,"
            " quality = excluded.quality, created_at = excluded.created_at",
            (c.id, agent, c.name, len(c.members), c.quality, computed_at),
        )
        conn.executemany(
            "INSERT INTO entity_community_members(community_id, entity_id)"
            " SELECT ?, id FROM entities WHERE id = ? AND agent_id = ? ON CONFLICT DO NOTHING",
            [(c.id, m, agent) for m in c.members],
        )
    if communities:  # the sizes of what was written (a member's entity may have gone meanwhile)
        conn.execute(
            "UPDATE entity_communities SET size = (SELECT COUNT(*) FROM entity_community_members m"
            " WHERE m.community_id = entity_communities.id) WHERE agent_id = ?",
            (agent,),
        )
    row = conn.execute("SELECT COALESCE(SUM(size), 0) FROM entity_communities WHERE agent_id = ?", (agent,)).fetchone()
    return int(row[0])


def compute(read: Any, write: Any, agent: str) -> RefreshResult:
    """Read the agent's graph (``read(fn)``), cluster it, and replace its communities in one
    write (``write(fn)``): a store's ``read`` and ``write``."""
    started = time.perf_counter()
    graph: EntityGraph = read(lambda c: build_graph(c, agent))
    found, modularity = cluster(graph)
    at = now_iso()
    members = write(lambda c: replace(c, agent, found, at))
    return RefreshResult(
        agent_id=agent,
        computed_at=at,
        communities=len(found),
        members=members,
        entities=len(graph.nodes),
        edges=len(graph.weights),
        hubs=[graph.nodes[k].name for k in sorted(graph.hubs, key=lambda k: -graph.nodes[k].mentions)[:20]],
        hub_count=len(graph.hubs),
        modularity=None if modularity is None else round(modularity, 4),
        took_ms=round((time.perf_counter() - started) * 1000, 1),
    )
