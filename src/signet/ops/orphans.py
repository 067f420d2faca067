"""Rows that point at a memory that no longer exists (no row at all, not a tombstone).

The retention sweep removes a purged memory's graph links, vector and queued jobs with it; a
hard delete (``force``) removes its graph links and vector. What is left behind by older
versions, crashes between steps, or hard deletes (their injection log, ratings and jobs):

- ``embeddings`` whose ``content_hash`` no memory has (vectors are shared by content hash);
- ``memory_entity_links`` of missing memories (the entity's ``mentions`` count still
  includes them: it is decremented, and an entity left with none is removed, as the sweep does;
  the ``memory_entity_mentions`` view no longer shows them);
- ``memory_jobs`` of missing memories, except one leased right now (its worker completes it
  as "source memory is gone");
- ``hook_injections`` (the per-session "already injected" log) and ``agent_feedback``
  (ratings) of missing memories.

History is not an orphan: ``memory_history`` outlives a purged memory on purpose (what was
purged, when and why) until ``retention.history_days``.

A memory that is soft-deleted still exists (it can be recovered): nothing of it is touched.
"""

from __future__ import annotations

from signet.store.sqlite import Connection

_MISSING_ID = "NOT EXISTS (SELECT 1 FROM memories m WHERE m.id = {t}.memory_id)"

KINDS: dict[str, str] = {
    "embeddings": "FROM embeddings t WHERE NOT EXISTS (SELECT 1 FROM memories m WHERE m.content_hash = t.content_hash)",
    "graph_mentions": "FROM memory_entity_links t WHERE NOT EXISTS (SELECT 1 FROM memories m WHERE m.seq = t.memory_seq)",
    "jobs": "FROM memory_jobs t WHERE t.memory_id IS NOT NULL AND t.status != 'leased' AND "
    + _MISSING_ID.format(t="t"),
    "hook_injections": "FROM hook_injections t WHERE " + _MISSING_ID.format(t="t"),
    "feedback": "FROM agent_feedback t WHERE " + _MISSING_ID.format(t="t"),
}
"""Orphan kind -> the FROM/WHERE clause that finds its rows (aliased ``t``)."""

BATCH = 5000
"""Rows removed per kind per call: one bounded write; what is left goes at the next call."""


def count(conn: Connection) -> dict[str, int]:
    """Orphaned rows by kind (a read)."""
    return {kind: int(conn.execute(f"SELECT COUNT(*) {where}").fetchone()[0]) for kind, where in KINDS.items()}


def clean(conn: Connection, batch: int = BATCH) -> dict[str, int]:
    """Remove up to ``batch`` orphaned rows of each kind (inside one write transaction);
    returns what was removed by kind, plus ``entities``: entities left with no mention."""
    removed: dict[str, int] = {}
    # Graph links first: the entity counts they hold are given back, as the retention sweep does.
    links = conn.execute(f"SELECT t.memory_seq, t.entity_rowid {KINDS['graph_mentions']} LIMIT ?", (batch,)).fetchall()
    per_entity: dict[int, int] = {}
    for memory_seq, entity_rowid in links:
        conn.execute(
            "DELETE FROM memory_entity_links WHERE memory_seq = ? AND entity_rowid = ?", (memory_seq, entity_rowid)
        )
        per_entity[entity_rowid] = per_entity.get(entity_rowid, 0) + 1
    entities = 0
    for entity_rowid, n in per_entity.items():
        conn.execute("UPDATE entities SET mentions = MAX(mentions - ?, 0) WHERE rowid = ?", (n, entity_rowid))
        entities += conn.execute(
            "DELETE FROM entities WHERE rowid = ? AND mentions <= 0 AND NOT EXISTS "
            "(SELECT 1 FROM memory_entity_links WHERE entity_rowid = ?)",
            (entity_rowid, entity_rowid),
        ).rowcount
    removed["graph_mentions"] = len(links)
    for kind, table in (
        ("embeddings", "embeddings"),
        ("jobs", "memory_jobs"),
        ("hook_injections", "hook_injections"),
        ("feedback", "agent_feedback"),
    ):
        removed[kind] = int(
            conn.execute(
                f"DELETE FROM {table} WHERE rowid IN (SELECT t.rowid {KINDS[kind]} LIMIT ?)", (batch,)
            ).rowcount
        )
    removed["entities"] = entities
    return removed
