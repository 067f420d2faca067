"""Knowledge-graph writes: entity triples from extraction, and the inline entity linker.

Entities are keyed by agent and ``canonical_name`` (lowercase, whitespace collapsed; one agent's
"Alice" is not another's, migration 11); relations by
(source, target, type). Both count their mentions. ``memory_entity_mentions`` links a
memory to the entities its text names. Everything here runs inside a write transaction
the caller opened.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterable

from signet.pipeline.extraction import EntityTriple
from signet.search.names import canonical, linkable_names
from signet.store import entity_links
from signet.store.records import now_iso
from signet.store.sqlite import Connection


def upsert_entity(conn: Connection, name: str, agent_id: str) -> str:
    canon = canonical(name)
    now = now_iso()
    row = conn.execute(
        "INSERT INTO entities(id, name, canonical_name, mentions, agent_id, created_at, updated_at)"
        " VALUES (?, ?, ?, 1, ?, ?, ?) ON CONFLICT(agent_id, canonical_name) DO UPDATE SET mentions = mentions + 1,"
        " updated_at = excluded.updated_at RETURNING id",
        (str(uuid.uuid4()), " ".join(name.split()), canon, agent_id, now, now),
    ).fetchone()
    return str(row[0])


def upsert_relation(
    conn: Connection, source_id: str, target_id: str, rel_type: str, confidence: float, job_id: str | None
) -> str:
    now = now_iso()
    row = conn.execute(
        "INSERT INTO relations(id, source_entity_id, target_entity_id, relation_type, mentions, confidence, metadata,"
        " created_at, updated_at) VALUES (?, ?, ?, ?, 1, ?, ?, ?, ?)"
        " ON CONFLICT(source_entity_id, target_entity_id, relation_type) DO UPDATE SET mentions = mentions + 1,"
        " confidence = MAX(COALESCE(confidence, 0), excluded.confidence), updated_at = excluded.updated_at"
        " RETURNING id",
        (str(uuid.uuid4()), source_id, target_id, rel_type, confidence, json.dumps({"firstJob": job_id}), now, now),
    ).fetchone()
    return str(row[0])


def link(conn: Connection, memory_id: str, entity_id: str, mention: str, confidence: float) -> None:
    entity_links.link(
        conn, memory_id, entity_id, mention, confidence, now_iso(), on_conflict=entity_links.RAISE_CONFIDENCE
    )


def _mentions(text: str, name: str) -> bool:
    return re.search(r"(?<![\w])" + re.escape(canonical(name)) + r"(?![\w])", text.lower()) is not None


def persist(
    conn: Connection,
    triples: Iterable[EntityTriple],
    *,
    agent_id: str,
    memories: dict[str, str],
    job_id: str | None,
) -> dict[str, int]:
    """Write triples; link each memory (id -> content) to the entities its text names.

    ``memories`` holds the source memory and the facts written from it; a transcript job
    has no source memory, so only its facts are linked.
    """
    entities: dict[str, tuple[str, str, float]] = {}
    relations = 0
    for t in triples:
        if not canonical(t.source) or not canonical(t.target):
            continue
        src = upsert_entity(conn, t.source, agent_id)
        tgt = upsert_entity(conn, t.target, agent_id)
        upsert_relation(conn, src, tgt, canonical(t.relationship), t.confidence, job_id)
        relations += 1
        for eid, name in ((src, t.source), (tgt, t.target)):
            prev = entities.get(eid)
            entities[eid] = (name, eid, max(t.confidence, prev[2] if prev else 0.0))
    links = 0
    for mid, content in memories.items():
        for name, eid, conf in entities.values():
            if _mentions(content, name):
                link(conn, mid, eid, name, conf)
                links += 1
    return {"entities": len(entities), "relations": relations, "mentions": links}


def inline_link(
    conn: Connection,
    memory_seq: int,
    content: str,
    agent_id: str,
    names: list[str] | None = None,
    *,
    skip: set[str] | frozenset[str] = frozenset(),
) -> int:
    """Link a new memory (its ``seq``) to existing entities (same agent) whose names it contains. No LLM.

    Candidate names (:func:`linkable_names`, or ``names`` computed beforehand) are looked
    up by ``canonical_name``; nothing is created. ``skip``: names the memory is linked to
    already (the extractor's, just recorded): looking them up again only rewrote their links'
    confidence from the extractor's 0.6 to 1.0.
    """
    if names is None:
        names = linkable_names(content)
    if skip:
        names = [n for n in names if n not in skip]
    if not names:
        return 0
    found = 0
    # One statement text whatever the number of names (a JSON array, not one placeholder per
    # name): with ``IN (?, ?, …)`` every turn length was a new statement to compile on the
    # writer thread (a tenth of its time on real turns went to preparing statements).
    rows = conn.execute(
        "SELECT rowid FROM entities WHERE agent_id = ? AND canonical_name IN (SELECT value FROM json_each(?))",
        (agent_id, json.dumps(names)),
    ).fetchall()
    for row in rows:  # under the entity's own name, made with the memory: the link stores neither
        entity_links.link_keys(conn, memory_seq, int(row[0]), None, 1.0, on_conflict=entity_links.RAISE_CONFIDENCE)
        found += 1
    return found
