"""Migration 11: entities belong to one agent.

Migration 1 made ``entities.canonical_name`` unique across the whole store, so agent B's
"Alice" incremented agent A's row and B's linker (which looks up its own agent's entities)
then found nothing. The table is rebuilt with ``UNIQUE(agent_id, canonical_name)`` (SQLite
cannot drop a column constraint in place; the migration runs with foreign keys off so the
drop does not cascade to relations and mentions, and checks them before it commits).

Rows already shared are split: every agent whose memories mention a shared entity gets its
own entity with the same name, its mentions move there, and the mention counts are divided
accordingly. Relations carry no agent, so they stay with the entity's first owner.
"""

from __future__ import annotations

_NEW_ID = (
    "lower(hex(randomblob(4)) || '-' || hex(randomblob(2)) || '-4' || substr(hex(randomblob(2)), 2) || '-'"
    " || substr('89ab', 1 + (abs(random()) % 4), 1) || substr(hex(randomblob(2)), 2) || '-' || hex(randomblob(6)))"
)
"""A random UUID-4 string, as ``uuid.uuid4()`` makes in Python."""

ENTITIES_PER_AGENT_SCHEMA = f"""
CREATE TABLE entities_v11 (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    entity_type TEXT,
    description TEXT,
    canonical_name TEXT NOT NULL,
    mentions INTEGER NOT NULL DEFAULT 0,
    embedding BLOB,
    agent_id TEXT NOT NULL DEFAULT 'default',
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    UNIQUE(agent_id, canonical_name)
);
INSERT INTO entities_v11(id, name, entity_type, description, canonical_name, mentions, embedding, agent_id,
                         created_at, updated_at)
    SELECT id, name, entity_type, description, canonical_name, mentions, embedding, agent_id, created_at, updated_at
    FROM entities;
CREATE TEMP TABLE moved_mentions AS
    SELECT mm.memory_id, mm.entity_id AS old_id, m.agent_id AS agent_id, e.canonical_name AS canonical_name
    FROM memory_entity_mentions mm
    JOIN memories m ON m.id = mm.memory_id
    JOIN entities e ON e.id = mm.entity_id
    WHERE m.agent_id != e.agent_id;
INSERT OR IGNORE INTO entities_v11(id, name, entity_type, description, canonical_name, mentions, agent_id,
                                   created_at, updated_at)
    SELECT {_NEW_ID}, e.name, e.entity_type, e.description, e.canonical_name, COUNT(*), mv.agent_id,
           e.created_at, e.updated_at
    FROM moved_mentions mv JOIN entities e ON e.id = mv.old_id
    GROUP BY mv.old_id, mv.agent_id;
UPDATE memory_entity_mentions SET entity_id = (
        SELECT n.id FROM moved_mentions mv JOIN entities_v11 n
            ON n.agent_id = mv.agent_id AND n.canonical_name = mv.canonical_name
        WHERE mv.memory_id = memory_entity_mentions.memory_id AND mv.old_id = memory_entity_mentions.entity_id)
    WHERE EXISTS (SELECT 1 FROM moved_mentions mv
                  WHERE mv.memory_id = memory_entity_mentions.memory_id
                    AND mv.old_id = memory_entity_mentions.entity_id);
UPDATE entities_v11 SET mentions = MAX(mentions - (SELECT COUNT(*) FROM moved_mentions mv WHERE mv.old_id = entities_v11.id), 0)
    WHERE id IN (SELECT old_id FROM moved_mentions);
DROP TABLE moved_mentions;
DROP TABLE entities;
ALTER TABLE entities_v11 RENAME TO entities;
"""
