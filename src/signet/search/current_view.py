"""The current view of the entities a text names: their active attributes (spec 001, prompt-submit).

Recall answers with memories, which may state old values; the LLM-built knowledge graph keeps,
per claim, which value is current (signet.knowledge.attributes: ``status`` active or
superseded). The prompt-submit hook injects that current view for the entities a prompt names,
so an agent told "Alice moved to Paris" after "Alice lives in Berlin" is handed Paris, not both.

What is read, and for whom:

- the entities are the **requesting agent's**, resolved by recall's own resolver
  (:func:`signet.search.traversal.focal_entities`: names and aliases, longest first, suppressed
  entities never);
- only ``active`` attributes, never superseded ones, at or above a confidence gate;
- only attributes whose **source memory** is live and passes the caller's read filter (the same
  SQL recall applies: agent, visibility, project): a fact is never injected to a caller who could
  not read where it came from. An attribute without a source memory has nothing to check and is
  left out.

Read-only; the caller holds the read transaction.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from signet.search.traversal import focal_entities
from signet.store.sqlite import Connection

MAX_TEXT_CHARS = 2000
"""The prompt's first characters searched for entity names (recall reads the same share)."""


@dataclass(frozen=True)
class CurrentAttribute:
    id: str
    entity: str
    aspect: str
    key: str
    value: str
    confidence: float
    source_memory_id: str

    def line(self) -> str:
        """The compact form injected into a prompt's context: one line, whatever the model wrote."""
        parts = (" ".join(str(p).split()) for p in (self.entity, self.aspect, self.key, self.value))
        entity, aspect, key, value = parts
        return f"Known about {entity}: {aspect}: {key} = {value}"


def _entity_attributes(
    conn: Connection, entity_id: str, agent_id: str, min_confidence: float, where: str, params: list[Any], limit: int
) -> list[tuple[Any, ...]]:
    return list(
        conn.execute(
            "SELECT t.id, s.aspect_name, t.attribute_key, t.attribute_value, t.confidence, t.source_memory_id"
            " FROM entity_attributes t JOIN entity_aspects s ON s.id = t.aspect_id"
            " JOIN memories m ON m.id = t.source_memory_id"
            " WHERE t.entity_id = ? AND t.agent_id = ? AND t.status = 'active' AND t.confidence >= ?"
            f" AND {where} ORDER BY t.confidence DESC, t.updated_at DESC, t.id LIMIT ?",
            (entity_id, agent_id, min_confidence, *params, limit),
        ).fetchall()
    )


def current_attributes(
    conn: Connection,
    text: str,
    *,
    agent_id: str,
    where: str,
    params: list[Any],
    min_confidence: float,
    limit: int,
    max_focal: int,
) -> list[CurrentAttribute]:
    """At most ``limit`` active attributes (confidence >= ``min_confidence``) of the entities of
    ``agent_id`` that ``text`` names, whose source memories ``where`` (on ``memories m``)
    allows: the entities in the resolver's order, each one's most confident first."""
    if limit <= 0:
        return []
    out: list[CurrentAttribute] = []
    for entity_id, name in focal_entities(conn, text[:MAX_TEXT_CHARS], agent_id, max_focal):
        rows = _entity_attributes(conn, entity_id, agent_id, min_confidence, where, params, limit - len(out))
        out += [
            CurrentAttribute(str(r[0]), name, str(r[1]), str(r[2]), str(r[3]), float(r[4]), str(r[5])) for r in rows
        ]
        if len(out) >= limit:
            break
    return out
