"""Semantic near-duplicates: live memories whose stored vectors are closer than a threshold.

Identical text is already one memory (the content hash, per agent and project); this finds
the rest: the same fact said twice in other words. Only memories of the same agent and project
are compared (merging across them would hand one agent's memory to another, or empty a
project). Vectors are the stored ones of the current embedding model; a memory without one is
not compared.

Clusters are the connected groups of pairs at or above the threshold. Each keeps one survivor:
pinned first, then the most important, the most used, the oldest (the original). Merging
soft-deletes the others, each with a history row naming the survivor and the similarity, so
``POST /api/memory/{id}/recover`` undoes it; a member is merged only when it is itself close
enough to the survivor (a chain A~B~C does not merge C into A), and a pinned memory is never
merged away. Cost: one pass of block matrix products over the scanned memories, about
``n^2 x dims`` multiply-adds per group; ``limit`` caps ``n``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from signet.store import vector_blob
from signet.store.scope import UNSCOPED, ReadScope
from signet.store.sqlite import Connection

BLOCK = 256
"""Rows per block of the pairwise product (BLOCK x n floats at a time)."""

PREVIEW = 120


@dataclass
class Member:
    id: str
    similarity: float
    """Cosine with the survivor."""
    pinned: bool
    preview: str


@dataclass
class Cluster:
    survivor: str
    survivor_preview: str
    agent_id: str
    project: str | None
    members: list[Member] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "survivor": {"id": self.survivor, "preview": self.survivor_preview},
            "agent_id": self.agent_id,
            "project": self.project,
            "duplicates": [
                {"id": m.id, "similarity": round(m.similarity, 4), "pinned": m.pinned, "preview": m.preview}
                for m in self.members
            ],
        }


@dataclass
class Scan:
    threshold: float
    scanned: int
    truncated: bool
    clusters: list[Cluster]

    @property
    def duplicates(self) -> int:
        return sum(len(c.members) for c in self.clusters)


def _preview(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= PREVIEW else text[: PREVIEW - 1] + "…"


class _Union:
    def __init__(self, n: int) -> None:
        self.parent = list(range(n))

    def find(self, i: int) -> int:
        while self.parent[i] != i:
            self.parent[i] = self.parent[self.parent[i]]
            i = self.parent[i]
        return i

    def join(self, a: int, b: int) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[max(ra, rb)] = min(ra, rb)


def scan(conn: Connection, model: str, threshold: float, *, limit: int = 5000, scope: ReadScope = UNSCOPED) -> Scan:
    """Near-duplicate clusters among the newest ``limit`` live memories the scope may change."""
    where, params = scope.writable().sql("m")
    rows = conn.execute(
        "SELECT m.id, m.agent_id, m.project, m.pinned, m.importance, m.access_count, m.created_at, m.seq,"
        " m.content, e.vector, e.dimensions FROM memories m JOIN embeddings e ON e.content_hash = m.content_hash"
        f" WHERE m.is_deleted = 0 AND e.model = ? AND {where} ORDER BY m.seq DESC LIMIT ?",
        (model, *params, limit + 1),
    ).fetchall()
    truncated = len(rows) > limit
    rows = rows[:limit]
    groups: dict[tuple[str, str | None], list[Any]] = {}
    for r in rows:
        groups.setdefault((r["agent_id"], r["project"]), []).append(r)
    clusters: list[Cluster] = []
    for (agent, project), members in groups.items():
        if len(members) > 1:
            clusters.extend(cluster(members, threshold, agent, project))
    clusters.sort(key=lambda c: (-len(c.members), c.survivor))
    return Scan(threshold, len(rows), truncated, clusters)


def rank(r: Any) -> tuple[int, float, int, str, int]:
    """Survivor order: pinned, important, used, old."""
    return (-int(r["pinned"]), -float(r["importance"]), -int(r["access_count"]), str(r["created_at"]), int(r["seq"]))


def cluster(rows: list[Any], threshold: float, agent: str, project: str | None) -> list[Cluster]:
    """The near-duplicate clusters of one owner's rows (``id``, ``pinned``, ``importance``,
    ``access_count``, ``created_at``, ``seq``, ``content``, ``vector``, ``dimensions``); also used
    by consolidation. Vectors of mixed sizes (a model change mid-way): the common size only."""
    if len(rows) < 2:
        return []
    mat, kept = vector_blob.decode_many([r["vector"] for r in rows], [int(r["dimensions"]) for r in rows])
    rows = [rows[i] for i in kept]
    n = len(rows)
    if n < 2:
        return []
    norms = np.linalg.norm(mat, axis=1)
    norms[norms == 0] = 1.0
    mat /= norms[:, None]
    union = _Union(n)
    for start in range(0, n, BLOCK):
        sims = mat[start : start + BLOCK] @ mat.T
        for i, j in zip(*np.nonzero(sims >= threshold), strict=True):
            a, b = start + int(i), int(j)
            if a < b:
                union.join(a, b)
    by_root: dict[int, list[int]] = {}
    for i in range(n):
        by_root.setdefault(union.find(i), []).append(i)
    out = []
    for idx in by_root.values():
        if len(idx) < 2:
            continue
        idx.sort(key=lambda i: rank(rows[i]))
        head = idx[0]
        sims = mat[idx[1:]] @ mat[head]
        found = Cluster(rows[head]["id"], _preview(rows[head]["content"]), agent, project)
        for i, s in zip(idx[1:], sims, strict=True):
            found.members.append(Member(rows[i]["id"], float(s), bool(rows[i]["pinned"]), _preview(rows[i]["content"])))
        found.members.sort(key=lambda m: -m.similarity)
        out.append(found)
    return out
