"""Conversation context for the vector leg: a turn is also judged with the turns around it.

The keyword leg already indexes each memory with its thread's neighbouring text
(signet.store.thread_context). The vector leg gets the same idea without a second embedding per
memory: at query time, for each candidate, the vectors of the memory just before it and just
after it in the same thread are read from the index and combined,

    x = v + v_prev + NEXT_WEIGHT * v_next          (each v unit length)
    context_cosine = q . x / |x|
    cosine' = (1 - VECTOR_CONTEXT_WEIGHT) * q . v + VECTOR_CONTEXT_WEIGHT * context_cosine

so "Woodhaven, a small town in the Midwest" is found for "where did they go on the road
trip?" when the turn before it asked about the road trip. A memory without a thread
(``source_id`` unset: hand-written facts) or whose neighbours have no vector yet keeps its own
cosine. Only the candidates of one recall are rescored (at most a few hundred small dot
products and one indexed query), so the cost does not grow with the store. Measured on LoCoMo:
docs/benchmarks.md (it also gains when the candidates, not only their scores, come from the
combined vectors; rescoring gets the same figure at a fraction of the cost).
"""

from __future__ import annotations

import numpy as np

from signet.embedding.base import Vectors
from signet.search.vectors import VectorIndex
from signet.store.sqlite import Connection
from signet.store.thread_context import same_thread

VECTOR_CONTEXT_WEIGHT = 0.6
"""Share of the context cosine in a candidate's vector score."""

NEXT_WEIGHT = 0.5
"""Weight of the following memory's vector in the context (the previous one weighs 1)."""

_NEIGHBOURS_SQL = f"""
SELECT m.id,
  (SELECT p.id FROM memories p WHERE {same_thread("p", "m")} AND p.is_deleted = 0 AND p.seq < m.seq
    ORDER BY p.seq DESC LIMIT 1),
  (SELECT n.id FROM memories n WHERE {same_thread("n", "m")} AND n.is_deleted = 0 AND n.seq > m.seq
    ORDER BY n.seq ASC LIMIT 1)
FROM memories m WHERE m.source_id IS NOT NULL AND m.id IN ({{marks}})
"""


def thread_neighbours(conn: Connection, ids: list[str]) -> dict[str, tuple[str | None, str | None]]:
    """For each memory with a thread: the live memory just before and just after it.

    Uses ``idx_memories_thread`` (source_id, seq): two index seeks per memory.
    """
    out: dict[str, tuple[str | None, str | None]] = {}
    for i in range(0, len(ids), 500):
        chunk = ids[i : i + 500]
        sql = _NEIGHBOURS_SQL.format(marks=",".join("?" for _ in chunk))
        for mid, prev_id, next_id in conn.execute(sql, chunk):
            if prev_id is not None or next_id is not None:
                out[mid] = (prev_id, next_id)
    return out


def context_cosines(
    query: Vectors,
    cosines: dict[str, float],
    neighbours: dict[str, tuple[str | None, str | None]],
    index: VectorIndex,
) -> dict[str, float]:
    """``cosines`` with each memory's thread context blended in (see the module docstring).

    Memories without neighbours, or whose own vector is missing, keep their cosine.
    """
    out = dict(cosines)
    wanted = {mid for mid in cosines if mid in neighbours}
    if not wanted:
        return out
    ids = set(wanted)
    for mid in wanted:
        ids.update(n for n in neighbours[mid] if n is not None)
    vectors = index.vectors_for(list(ids))
    order = [mid for mid in wanted if mid in vectors]
    if not order:
        return out
    # One matrix for the candidates, one each for their previous and next turns (zeros where
    # there is none), so the blend is three array operations instead of a loop of small ones.
    own = np.stack([vectors[mid] for mid in order]).astype(np.float32)
    prev = np.zeros_like(own)
    nxt = np.zeros_like(own)
    added = np.zeros(len(order), dtype=bool)
    for i, mid in enumerate(order):
        prev_id, next_id = neighbours[mid]
        if prev_id is not None and prev_id in vectors:
            prev[i] = vectors[prev_id]
            added[i] = True
        if next_id is not None and next_id in vectors:
            nxt[i] = vectors[next_id]
            added[i] = True
    x = own + prev + np.float32(NEXT_WEIGHT) * nxt
    norms = np.linalg.norm(x, axis=1)
    dots = x @ query
    for i, mid in enumerate(order):
        if not added[i] or norms[i] == 0.0:
            continue
        ctx = float(dots[i]) / float(norms[i])
        out[mid] = (1.0 - VECTOR_CONTEXT_WEIGHT) * cosines[mid] + VECTOR_CONTEXT_WEIGHT * ctx
    return out
