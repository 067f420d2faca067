"""Migration 23: the knowledge graph recall reads (spec 001, knowledge architecture).

``entities`` (migration 1, per agent since 11) gain aliases, aspects (an entity's thematic
domains), attributes (facts and constraints under an aspect, with a claim key so a newer fact
can supersede an older one: ``status`` active | superseded, ``superseded_by``), dependencies
(structural edges distinct from ``relations``), pinning (a user's pin or suppress) and
communities (their members in a table of their own rather than the spec's
``entities.community_id``: the entity row stays as the export format knows it). Every row carries its ``agent_id`` so one agent's reads never touch another's.
``source_memory_id`` has no foreign key, like ``memory_entity_mentions.memory_id``: a deleted
memory's rows are removed by the delete path, and every read joins the live memory anyway.
"""

from __future__ import annotations

KNOWLEDGE_SCHEMA = """
CREATE TABLE IF NOT EXISTS entity_aliases (
    entity_id TEXT NOT NULL REFERENCES entities(id) ON DELETE CASCADE,
    agent_id TEXT NOT NULL,
    alias TEXT NOT NULL,
    canonical_alias TEXT NOT NULL,
    created_at TEXT NOT NULL,
    PRIMARY KEY (agent_id, canonical_alias, entity_id)
);
CREATE INDEX IF NOT EXISTS idx_entity_aliases_entity ON entity_aliases(entity_id);

CREATE TABLE IF NOT EXISTS entity_aspects (
    id TEXT PRIMARY KEY,
    entity_id TEXT NOT NULL REFERENCES entities(id) ON DELETE CASCADE,
    agent_id TEXT NOT NULL,
    aspect_name TEXT NOT NULL,
    canonical_name TEXT NOT NULL,
    description TEXT,
    confidence REAL NOT NULL DEFAULT 0.5,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    UNIQUE (entity_id, canonical_name)
);
CREATE INDEX IF NOT EXISTS idx_entity_aspects_agent ON entity_aspects(agent_id);

CREATE TABLE IF NOT EXISTS entity_attributes (
    id TEXT PRIMARY KEY,
    aspect_id TEXT NOT NULL REFERENCES entity_aspects(id) ON DELETE CASCADE,
    entity_id TEXT NOT NULL REFERENCES entities(id) ON DELETE CASCADE,
    agent_id TEXT NOT NULL,
    attribute_key TEXT NOT NULL,
    attribute_value TEXT NOT NULL,
    claim_key TEXT,
    group_key TEXT,
    kind TEXT NOT NULL DEFAULT 'fact' CHECK (kind IN ('fact', 'constraint')),
    status TEXT NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'superseded')),
    superseded_by TEXT REFERENCES entity_attributes(id) ON DELETE SET NULL,
    confidence REAL NOT NULL DEFAULT 0.5,
    source_memory_id TEXT,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS idx_entity_attributes_entity ON entity_attributes(entity_id, status);
CREATE INDEX IF NOT EXISTS idx_entity_attributes_aspect ON entity_attributes(aspect_id);
CREATE INDEX IF NOT EXISTS idx_entity_attributes_claim ON entity_attributes(agent_id, claim_key);
CREATE INDEX IF NOT EXISTS idx_entity_attributes_memory ON entity_attributes(source_memory_id);

CREATE TABLE IF NOT EXISTS entity_dependencies (
    id TEXT PRIMARY KEY,
    source_entity_id TEXT NOT NULL REFERENCES entities(id) ON DELETE CASCADE,
    target_entity_id TEXT NOT NULL REFERENCES entities(id) ON DELETE CASCADE,
    agent_id TEXT NOT NULL,
    dependency_type TEXT NOT NULL,
    strength REAL NOT NULL DEFAULT 0.5,
    metadata TEXT,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    UNIQUE (source_entity_id, target_entity_id, dependency_type)
);
CREATE INDEX IF NOT EXISTS idx_entity_dependencies_target ON entity_dependencies(target_entity_id);

CREATE TABLE IF NOT EXISTS entity_pinning (
    entity_id TEXT PRIMARY KEY REFERENCES entities(id) ON DELETE CASCADE,
    agent_id TEXT NOT NULL,
    pin_type TEXT NOT NULL CHECK (pin_type IN ('pin', 'suppress')),
    weight_override REAL,
    reason TEXT,
    created_at TEXT NOT NULL
);

CREATE TABLE IF NOT EXISTS entity_communities (
    id TEXT PRIMARY KEY,
    agent_id TEXT NOT NULL,
    label TEXT,
    size INTEGER NOT NULL DEFAULT 0,
    quality TEXT,
    created_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS entity_community_members (
    community_id TEXT NOT NULL REFERENCES entity_communities(id) ON DELETE CASCADE,
    entity_id TEXT NOT NULL REFERENCES entities(id) ON DELETE CASCADE,
    PRIMARY KEY (community_id, entity_id)
);
CREATE INDEX IF NOT EXISTS idx_entity_community_members_entity ON entity_community_members(entity_id);
"""
