"""Migration 37: the deterministic builder's aspect rows go; an entity's kind is its aspect.

Versions before this gave every entity the extractor made one ``entity_aspects`` row named for
its kind ("person", "named thing", "code", ...), with no description and no attribute: a copy
of ``entities.entity_type`` with a UUID, two timestamps and three indexes, about 300 bytes an
entity (7 % of a store of conversation turns, growing with every new name). The knowledge
reads now give that aspect from the entity's kind (signet.knowledge.store.kind_aspect), so the
rows are removed: only a row that is exactly what the extractor wrote (its name the kind's,
its confidence the extractor's 0.6, no description, no attribute under it). An aspect an LLM
proposed or gave attributes stays.
"""

from __future__ import annotations

_KIND = (
    "CASE e.entity_type WHEN 'name' THEN 'named thing' WHEN 'path' THEN 'file' WHEN 'url' THEN 'link'"
    " WHEN 'email' THEN 'contact' ELSE e.entity_type END"
)
"""signet.knowledge.store.ASPECTS when this migration was written (frozen here, as migrations are)."""

KIND_ASPECTS_SCHEMA = f"""
DELETE FROM entity_aspects
WHERE confidence = 0.6 AND description IS NULL
  AND aspect_name = canonical_name
  AND canonical_name = (SELECT {_KIND} FROM entities e WHERE e.id = entity_aspects.entity_id)
  AND NOT EXISTS (SELECT 1 FROM entity_attributes t WHERE t.aspect_id = entity_aspects.id);
"""

PG_KIND_ASPECTS_SCHEMA = KIND_ASPECTS_SCHEMA
