"""Writes of the LLM knowledge builder: entities, aliases, aspects and attributes, with
supersession (issue 18; spec 001 knowledge architecture, 004 knowledge update).

**What counts as the same claim.** An attribute's ``claim_key`` is its entity and its key,
canonical (``alice|city``): the aspect groups claims (``group_key`` ``alice|home``) but does not
change what they are about, and a model that files "city" under "home" once and "residence" the
next time still states the same claim. Keys are per agent (every lookup carries ``agent_id``), so
one agent's "Alice" never supersedes another's.

**Supersession.** A ``state`` attribute whose claim key already has an active value *from another
source memory* and a different value supersedes it: the older row is kept, ``status``
``superseded``, ``superseded_by`` its successor and ``superseded_at`` the time, never deleted. The
order is the order the facts were *said* (their source memories' ``created_at``), not the order
the jobs ran: an old memory extracted late is filed as already superseded by the newer value. The
same value again is a confirmation (confidence raised, no new row); several values from the same
source ("likes tea and coffee") stand side by side; an ``event`` is never superseded.

Everything runs inside the job's final transaction (signet.pipeline.worker), so a job's knowledge
is written exactly once, together with its completion.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

from signet.knowledge.claims import Claim, EntityFacts, Knowledge
from signet.search.names import canonical
from signet.store import entity_links
from signet.store.records import now_iso
from signet.store.sqlite import Connection


@dataclass
class WriteCounts:
    entities: int = 0
    aspects: int = 0
    attributes: int = 0
    confirmed: int = 0
    superseded: int = 0
    unsourced: int = 0
    superseded_ids: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, int]:
        return {
            "entities": self.entities,
            "aspects": self.aspects,
            "attributes": self.attributes,
            "confirmed": self.confirmed,
            "superseded": self.superseded,
            "unsourced": self.unsourced,
        }


def claim_key(entity_canonical: str, key: str) -> str:
    return f"{entity_canonical}|{canonical(key)}"


def _entity(conn: Connection, ent: EntityFacts, agent_id: str, now: str) -> tuple[str, str]:
    """The agent's entity for ``ent`` (by canonical name, then alias; created when new): (id, canonical)."""
    canon = canonical(ent.name)
    row = conn.execute(
        "SELECT id, canonical_name FROM entities WHERE agent_id = ? AND canonical_name = ?", (agent_id, canon)
    ).fetchone()
    if row is None:
        row = conn.execute(
            "SELECT e.id, e.canonical_name FROM entity_aliases a JOIN entities e ON e.id = a.entity_id"
            " WHERE a.agent_id = ? AND a.canonical_alias = ? ORDER BY e.mentions DESC LIMIT 1",
            (agent_id, canon),
        ).fetchone()
    if row is not None:
        conn.execute(
            "UPDATE entities SET mentions = mentions + 1, entity_type = COALESCE(entity_type, ?), updated_at = ?"
            " WHERE id = ?",
            (ent.type, now, row[0]),
        )
        return str(row[0]), str(row[1])
    eid = str(uuid.uuid4())
    conn.execute(
        "INSERT INTO entities(id, name, entity_type, canonical_name, mentions, agent_id, created_at, updated_at)"
        " VALUES (?, ?, ?, ?, 1, ?, ?, ?)",
        (eid, ent.name, ent.type, canon, agent_id, now, now),
    )
    return eid, canon


def _aspect(conn: Connection, entity_id: str, agent_id: str, name: str, confidence: float, now: str) -> str:
    row = conn.execute(
        "INSERT INTO entity_aspects(id, entity_id, agent_id, aspect_name, canonical_name, confidence, created_at,"
        " updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(entity_id, canonical_name) DO UPDATE"
        " SET confidence = MAX(entity_aspects.confidence, excluded.confidence), updated_at = excluded.updated_at"
        " RETURNING id",
        (str(uuid.uuid4()), entity_id, agent_id, name, canonical(name), confidence, now, now),
    ).fetchone()
    return str(row[0])


def _source_for(claim: Claim, entity: str, memories: dict[str, str]) -> str | None:
    """The written fact that states ``claim`` (its value, preferably with the entity's name), for
    a job without a source memory (a transcript): what recall leads to."""
    value = canonical(claim.value)
    stating = [mid for mid, text in memories.items() if value and value in canonical(text)]
    named = [mid for mid in stating if entity in canonical(memories[mid])]
    best = named or stating
    return best[0] if best else None


def _said_at(conn: Connection, attribute_id: str) -> str:
    """When an attribute's fact was said: its source memory's creation, else the row's."""
    row = conn.execute(
        "SELECT COALESCE(m.created_at, t.created_at) FROM entity_attributes t"
        " LEFT JOIN memories m ON m.id = t.source_memory_id WHERE t.id = ?",
        (attribute_id,),
    ).fetchone()
    return str(row[0])


def _claim(
    conn: Connection,
    claim: Claim,
    *,
    entity_id: str,
    entity: str,
    aspect_id: str,
    group: str,
    agent_id: str,
    source: str | None,
    now: str,
    counts: WriteCounts,
) -> None:
    key = claim_key(entity, claim.key)
    value = canonical(claim.value)
    active = conn.execute(
        "SELECT id, attribute_value, source_memory_id FROM entity_attributes"
        " WHERE agent_id = ? AND claim_key = ? AND status = 'active' AND claim_type = ?",
        (agent_id, key, claim.kind),
    ).fetchall()
    same = next((r for r in active if canonical(r[1]) == value), None)
    if same is not None:  # said again: a confirmation, not a new claim
        conn.execute(
            "UPDATE entity_attributes SET confidence = MAX(confidence, ?), updated_at = ? WHERE id = ?",
            (claim.confidence, now, same[0]),
        )
        counts.confirmed += 1
        return
    new_id = str(uuid.uuid4())
    conn.execute(
        "INSERT INTO entity_attributes(id, aspect_id, entity_id, agent_id, attribute_key, attribute_value, claim_key,"
        " group_key, kind, claim_type, status, confidence, source_memory_id, created_at, updated_at)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'fact', ?, 'active', ?, ?, ?, ?)",
        (
            new_id,
            aspect_id,
            entity_id,
            agent_id,
            claim.key,
            claim.value,
            key,
            group,
            claim.kind,
            claim.confidence,
            source,
            now,
            now,
        ),
    )
    counts.attributes += 1
    if source is None:
        counts.unsourced += 1
    if claim.kind != "state":
        return
    said = _said_at(conn, new_id)
    for old_id, _, old_source in active:
        if old_source is not None and old_source == source:
            continue  # several values from one statement stand side by side
        if _said_at(conn, old_id) <= said:
            _supersede(conn, old_id, new_id, now)
            counts.superseded_ids.append(old_id)
        else:  # an older statement extracted late: filed as already superseded by the newer value
            _supersede(conn, new_id, old_id, now)
            counts.superseded_ids.append(new_id)
            counts.superseded += 1
            break
        counts.superseded += 1


def _supersede(conn: Connection, old_id: str, new_id: str, now: str) -> None:
    conn.execute(
        "UPDATE entity_attributes SET status = 'superseded', superseded_by = ?, superseded_at = ?, updated_at = ?"
        " WHERE id = ?",
        (new_id, now, now, old_id),
    )


def write(
    conn: Connection,
    knowledge: Knowledge,
    *,
    agent_id: str,
    source_memory_id: str | None,
    memories: dict[str, str],
) -> WriteCounts:
    """Write one job's knowledge for ``agent_id``; attributes cite ``source_memory_id`` (a memory
    job), else the fact in ``memories`` (id -> content) that states them. The caller holds the
    transaction."""
    now = now_iso()
    counts = WriteCounts()
    for ent in knowledge.entities:
        entity_id, canon = _entity(conn, ent, agent_id, now)
        counts.entities += 1
        for alias in ent.aliases:
            if canonical(alias) != canon:
                conn.execute(
                    "INSERT OR IGNORE INTO entity_aliases(entity_id, agent_id, alias, canonical_alias, created_at)"
                    " VALUES (?, ?, ?, ?, ?)",
                    (entity_id, agent_id, alias, canonical(alias), now),
                )
        if source_memory_id is not None:
            entity_links.link(conn, source_memory_id, entity_id, ent.name, 1.0, now)
        for asp in ent.aspects:
            conf = max((c.confidence for c in asp.attributes), default=0.5)
            aspect_id = _aspect(conn, entity_id, agent_id, asp.name, conf, now)
            counts.aspects += 1
            group = f"{canon}|{canonical(asp.name)}"
            for claim in asp.attributes:
                source = source_memory_id or _source_for(claim, canon, memories)
                _claim(
                    conn,
                    claim,
                    entity_id=entity_id,
                    entity=canon,
                    aspect_id=aspect_id,
                    group=group,
                    agent_id=agent_id,
                    source=source,
                    now=now,
                    counts=counts,
                )
    return counts
