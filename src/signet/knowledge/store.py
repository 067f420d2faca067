"""Knowledge-graph writes of the deterministic builder, inside the remember transaction.

A memory's mentions (signet.knowledge.extract) become entities of its agent (created on first
sight, their mention count raised after) and a link from the memory to each
(signet.store.entity_links). An entity's one simple aspect, named for its kind ("person",
"place or name", "code", ...), is read from its ``entity_type`` (:func:`kind_aspect`) and not
stored: a row per entity saying only what the entity row says was 7 % of a store of
conversation turns (migration 37 removes the rows earlier versions wrote).
At most two short statements per mention (1.5 mentions per conversation turn on LoCoMo, at
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
"""The one aspect an entity has by its kind (the kind of its first mention)."""


def kind_aspect(entity_type: str | None) -> str | None:
    """The name of the aspect an entity of ``entity_type`` has by its kind (None without a kind)."""
    return ASPECTS.get(entity_type, entity_type) if entity_type else None


DETERMINISTIC_CONFIDENCE = 0.6
"""Confidence of a link or aspect the extractor made (an LLM's own confidence replaces it)."""


def record(conn: Connection, memory_seq: int, agent_id: str, mentions: list[Mention]) -> int:
    """Upsert the agent's entities for ``mentions`` and link the memory (its ``seq``) to all of
    them; returns the number of links written.

    Plain per-mention statements (cached by the driver): one JSON array expanded by
    ``json_each`` was measured slower (the planner walked the agent's entities for each row).
    The links are written by their integer keys (signet.store.entity_links): the memory's
    ``seq`` comes with the stored row, each entity's ``rowid`` back from its upsert."""
    now = now_iso()
    links = 0
    for m in mentions:
        rowid, name = conn.execute(
            "INSERT INTO entities(id, name, entity_type, canonical_name, mentions, agent_id, created_at, updated_at)"
            " VALUES (?, ?, ?, ?, 1, ?, ?, ?) ON CONFLICT(agent_id, canonical_name) DO UPDATE"
            " SET mentions = mentions + 1, entity_type = COALESCE(entities.entity_type, excluded.entity_type),"
            " updated_at = excluded.updated_at RETURNING rowid, name",
            (str(uuid.uuid4()), m.text, m.kind, m.canonical, agent_id, now, now),
        ).fetchone()
        text = None if m.text == name else m.text
        links += entity_links.link_keys(conn, memory_seq, int(rowid), text, DETERMINISTIC_CONFIDENCE)
    return links


def forget_memory(conn: Connection, memory_id: str) -> None:
    """A hard-deleted memory's knowledge: its mention links and the attributes it was the source of."""
    entity_links.unlink(conn, [memory_id])
    conn.execute("DELETE FROM entity_attributes WHERE source_memory_id = ?", (memory_id,))
