"""Knowledge-graph writes of the deterministic builder, inside the remember transaction.

A memory's mentions (signet.knowledge.extract) become entities of its agent (created on first
sight, their mention count raised after), each with one aspect named for its kind ("person",
"place or name", "code", ...) the first time it is seen, and a ``memory_entity_mentions`` link.
At most three short statements per mention (1.5 mentions per conversation turn on LoCoMo, at
most 24 per memory): the writer thread is the one serial step of remember, so the extractor's
regular expressions run before it, on the caller's thread (signet.pipeline.runtime).
"""

from __future__ import annotations

import uuid

from signet.knowledge.extract import Mention
from signet.store import entity_links
from signet.store.records import now_iso
from signet.store.sqlite import Connection

ASPECTS = {
    "person": "person",
    "name": "named thing",
    "project": "project",
    "code": "code",
    "path": "file",
    "url": "link",
    "email": "contact",
    "date": "date",
}
"""The one aspect the deterministic builder gives an entity, by the kind of its first mention."""

DETERMINISTIC_CONFIDENCE = 0.6
"""Confidence of a link or aspect the extractor made (an LLM's own confidence replaces it)."""


def record(conn: Connection, memory_id: str, agent_id: str, mentions: list[Mention]) -> int:
    """Upsert the agent's entities for ``mentions``, give new ones their aspect, and link the
    memory to all of them; returns the number of links written.

    Plain per-mention statements (cached by the driver): one JSON array expanded by
    ``json_each`` was measured slower (the planner walked the agent's entities for each row).
    The links are written by their integer keys (signet.store.entity_links): the memory's
    ``seq`` is read once, each entity's ``rowid`` comes back from its upsert."""
    if not mentions:
        return 0
    row = conn.execute("SELECT seq FROM memories WHERE id = ?", (memory_id,)).fetchone()
    if row is None:
        return 0
    seq = int(row[0])
    now = now_iso()
    links = 0
    for m in mentions:
        rowid, eid, count, name = conn.execute(
            "INSERT INTO entities(id, name, entity_type, canonical_name, mentions, agent_id, created_at, updated_at)"
            " VALUES (?, ?, ?, ?, 1, ?, ?, ?) ON CONFLICT(agent_id, canonical_name) DO UPDATE"
            " SET mentions = mentions + 1, entity_type = COALESCE(entities.entity_type, excluded.entity_type),"
            " updated_at = excluded.updated_at RETURNING rowid, id, mentions, name",
            (str(uuid.uuid4()), m.text, m.kind, m.canonical, agent_id, now, now),
        ).fetchone()
        if count == 1:
            aspect = ASPECTS.get(m.kind, m.kind)
            conn.execute(
                "INSERT OR IGNORE INTO entity_aspects(id, entity_id, agent_id, aspect_name, canonical_name, confidence,"
                " created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (str(uuid.uuid4()), eid, agent_id, aspect, aspect, DETERMINISTIC_CONFIDENCE, now, now),
            )
        text = None if m.text == name else m.text
        links += entity_links.link_keys(conn, seq, int(rowid), text, DETERMINISTIC_CONFIDENCE)
    return links


def forget_memory(conn: Connection, memory_id: str) -> None:
    """A hard-deleted memory's knowledge: its mention links and the attributes it was the source of."""
    entity_links.unlink(conn, [memory_id])
    conn.execute("DELETE FROM entity_attributes WHERE source_memory_id = ?", (memory_id,))
