"""Writing and removing a memory's links to its entities (``memory_entity_links``, migration 36).

The links are keyed by ``memories.seq`` and ``entities.rowid`` (integers: a link is a sixth of
what two UUID strings and their indexes took); everything that reads them uses the
``memory_entity_mentions`` view, which gives the ids back. Writers name the memory and the
entity by id as before: their keys are read first, so a link to a memory or an entity that
does not exist is simply not written (the old table kept such orphans). A link
stores no copy of what the view reads back (signet.store.schema_entity_links): its mention
text when it is the entity's name, its time when it is the memory's.
"""

from __future__ import annotations

from collections.abc import Sequence

from signet.store.sqlite import Connection

_KEYS = "SELECT m.seq, e.rowid, e.name, m.created_at FROM memories m, entities e WHERE m.id = ? AND e.id = ?"
_INSERT = (
    "INSERT INTO memory_entity_links(memory_seq, entity_rowid, mention_text, confidence, created_at)"
    " VALUES (?, ?, ?, ?, ?) ON CONFLICT(memory_seq, entity_rowid) DO "
)
KEEP = "NOTHING"
"""On a link that exists: keep it as it is."""
RAISE_CONFIDENCE = "UPDATE SET confidence = MAX(COALESCE(memory_entity_links.confidence, 0), excluded.confidence)"
"""On a link that exists: keep the higher confidence of the two (the LLM pipeline's links)."""


def link(
    conn: Connection,
    memory_id: str,
    entity_id: str,
    mention_text: str | None,
    confidence: float | None,
    created_at: str | None,
    *,
    on_conflict: str = KEEP,
) -> int:
    """Link ``memory_id`` to ``entity_id``; returns 1 when a link was written, 0 otherwise."""
    keys = conn.execute(_KEYS, (memory_id, entity_id)).fetchone()
    if keys is None:
        return 0
    seq, rowid, name, memory_created = keys
    text = None if mention_text == name else mention_text
    when = None if created_at == memory_created else created_at
    cur = conn.execute(_INSERT + on_conflict, (seq, rowid, text, confidence, when))
    return max(cur.rowcount, 0)


def link_keys(
    conn: Connection,
    memory_seq: int,
    entity_rowid: int,
    mention_text: str | None,
    confidence: float,
    *,
    on_conflict: str = KEEP,
) -> int:
    """:func:`link` for the write path of every remember, which holds both keys: the link is made
    with the memory (its ``created_at`` is the memory's, so none is stored) and ``mention_text``
    is None when it is the entity's name (the view reads both back)."""
    cur = conn.execute(_INSERT + on_conflict, (memory_seq, entity_rowid, mention_text, confidence, None))
    return max(cur.rowcount, 0)


def unlink(conn: Connection, memory_ids: Sequence[str]) -> int:
    """Remove every link of ``memory_ids`` (before their rows go: the keys are read from them)."""
    if not memory_ids:
        return 0
    marks = ",".join("?" for _ in memory_ids)
    cur = conn.execute(
        f"DELETE FROM memory_entity_links WHERE memory_seq IN (SELECT seq FROM memories WHERE id IN ({marks}))",
        list(memory_ids),
    )
    return max(cur.rowcount, 0)
