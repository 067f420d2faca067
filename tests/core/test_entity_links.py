"""Migration 36: a memory's entity links are kept by integer keys (real SQLite files, the real
migrations). What a store held before reads back the same through the ``memory_entity_mentions``
view; the keys survive ``VACUUM``; the write and delete paths keep the links right."""

from __future__ import annotations

import uuid
from pathlib import Path

from signet.knowledge import read
from signet.knowledge import store as knowledge
from signet.knowledge.extract import extract as extract_mentions
from signet.ops import orphans
from signet.store import entity_links
from signet.store.database import connect
from signet.store.migrations import MIGRATIONS, migrate
from signet.store.sqlite import Connection

NOW = "2026-01-01T00:00:00+00:00"
LATER = "2026-02-01T00:00:00+00:00"


def _memory(conn: Connection, content: str, created: str = NOW) -> str:
    mid = str(uuid.uuid4())
    conn.execute(
        "INSERT INTO memories(id, content, created_at, updated_at, content_hash, normalized_content)"
        " VALUES (?, ?, ?, ?, ?, ?)",
        (mid, content, created, created, uuid.uuid4().hex, content.lower()),
    )
    return mid


def _seq(conn: Connection, memory_id: str) -> int:
    return int(conn.execute("SELECT seq FROM memories WHERE id = ?", (memory_id,)).fetchone()[0])


def _entity(conn: Connection, name: str) -> str:
    eid = str(uuid.uuid4())
    conn.execute(
        "INSERT INTO entities(id, name, canonical_name, mentions, agent_id, created_at, updated_at)"
        " VALUES (?, ?, ?, 1, 'default', ?, ?)",
        (eid, name, name.lower(), NOW, NOW),
    )
    return eid


def _mentions(conn: Connection) -> set[tuple[str, str, str | None, float | None, str]]:
    return {
        (r[0], r[1], r[2], r[3], r[4])
        for r in conn.execute(
            "SELECT memory_id, entity_id, mention_text, confidence, created_at FROM memory_entity_mentions"
        )
    }


def test_migration_36_keeps_every_link_readable_and_stores_no_copies(tmp_path: Path) -> None:
    conn = connect(tmp_path / "memories.db")
    migrate(conn, [m for m in MIGRATIONS if m.version <= 34])
    conn.execute("BEGIN")
    # A few entities deleted first, so the rowids the links take over have holes.
    for name in ("Gone1", "Gone2"):
        _entity(conn, name)
    conn.execute("DELETE FROM entities WHERE name LIKE 'Gone%'")
    alice, lisbon = _entity(conn, "Alice"), _entity(conn, "Lisbon")
    first, second = _memory(conn, "Alice moved to Lisbon"), _memory(conn, "alice again", created=LATER)
    old_rows = [
        (first, alice, "Alice", 0.6, NOW),  # the entity's name, the memory's time: neither kept
        (first, lisbon, "lisbon", 1.0, NOW),  # another spelling: kept
        (second, alice, "Alice", None, NOW),  # made before the memory's own time: kept
        (second, lisbon, None, 0.5, LATER),
    ]
    for row in old_rows:
        conn.execute(
            "INSERT INTO memory_entity_mentions(memory_id, entity_id, mention_text, confidence, created_at)"
            " VALUES (?, ?, ?, ?, ?)",
            row,
        )
    rowids = dict(conn.execute("SELECT id, rowid FROM entities").fetchall())
    conn.execute("COMMIT")

    assert migrate(conn)[0] == 36  # and any later ones
    assert conn.execute("SELECT type FROM sqlite_master WHERE name = 'memory_entity_mentions'").fetchone()[0] == "view"
    # A NULL mention text reads back as the entity's name (what every link of the extractor had).
    expected = {r if r[2] is not None else (r[0], r[1], "Lisbon", r[3], r[4]) for r in old_rows}
    assert _mentions(conn) == expected
    stored = {
        (r[0], r[1]): (r[2], r[3])
        for r in conn.execute("SELECT memory_seq, entity_rowid, mention_text, created_at FROM memory_entity_links")
    }
    seq = dict(conn.execute("SELECT id, seq FROM memories").fetchall())
    assert stored[(seq[first], rowids[alice])] == (None, None)
    assert stored[(seq[first], rowids[lisbon])] == ("lisbon", None)
    assert stored[(seq[second], rowids[alice])] == (None, NOW)
    assert conn.execute("PRAGMA foreign_key_check").fetchall() == []

    # The keys survive a VACUUM (entities.rowid is declared INTEGER PRIMARY KEY now).
    conn.execute("DELETE FROM entities WHERE rowid < ?", (min(rowids[alice], rowids[lisbon]),))
    conn.execute("VACUUM")
    assert _mentions(conn) == expected
    assert dict(conn.execute("SELECT id, rowid FROM entities").fetchall()) == {
        alice: rowids[alice],
        lisbon: rowids[lisbon],
    }


def test_writes_deletes_and_orphans_keep_the_links_right(tmp_path: Path) -> None:
    conn = connect(tmp_path / "memories.db")
    migrate(conn)
    conn.execute("BEGIN")
    mid = _memory(conn, "Yesterday Alice met Bob in Lisbon")
    links = knowledge.record(
        conn, _seq(conn, mid), "default", extract_mentions("Yesterday Alice met Bob in Lisbon", None)
    )
    assert links == 3
    names = {r[0] for r in conn.execute("SELECT mention_text FROM memory_entity_mentions WHERE memory_id = ?", (mid,))}
    assert names == {"Alice", "Bob", "Lisbon"}
    assert conn.execute("SELECT COUNT(*) FROM memory_entity_links WHERE mention_text IS NOT NULL").fetchone()[0] == 0
    # A link to a memory or an entity that does not exist is not written.
    alice = conn.execute("SELECT id FROM entities WHERE canonical_name = 'alice'").fetchone()[0]
    assert entity_links.link(conn, "no-such-memory", alice, "Alice", 1.0, NOW) == 0
    assert entity_links.link(conn, mid, "no-such-entity", "Alice", 1.0, NOW) == 0
    # The LLM pipeline's link raises an existing link's confidence, never lowers it.
    entity_links.link(conn, mid, alice, "Alice", 0.9, NOW, on_conflict=entity_links.RAISE_CONFIDENCE)
    entity_links.link(conn, mid, alice, "Alice", 0.2, NOW, on_conflict=entity_links.RAISE_CONFIDENCE)
    got = conn.execute(
        "SELECT confidence FROM memory_entity_mentions WHERE memory_id = ? AND entity_id = ?", (mid, alice)
    ).fetchone()[0]
    assert got == 0.9
    # Deleting an entity takes its links (foreign key on the integer key).
    conn.execute("DELETE FROM entities WHERE canonical_name = 'bob'")
    assert conn.execute("SELECT COUNT(*) FROM memory_entity_links").fetchone()[0] == 2
    # A memory row removed without its links leaves orphans the repair finds in the table.
    other = _memory(conn, "We went to Lisbon again")
    knowledge.record(conn, _seq(conn, other), "default", extract_mentions("We went to Lisbon again", None))
    conn.execute("DELETE FROM memories WHERE id = ?", (other,))
    assert orphans.count(conn)["graph_mentions"] == 1
    removed = orphans.clean(conn)
    assert removed["graph_mentions"] == 1
    assert conn.execute("SELECT mentions FROM entities WHERE canonical_name = 'lisbon'").fetchone()[0] == 1
    # The delete path removes a memory's links before its row.
    assert entity_links.unlink(conn, [mid]) == 2
    assert conn.execute("SELECT COUNT(*) FROM memory_entity_links").fetchone()[0] == 0
    conn.execute("COMMIT")


def test_migration_37_removes_only_the_extractors_kind_aspects(tmp_path: Path) -> None:
    conn = connect(tmp_path / "memories.db")
    migrate(conn, [m for m in MIGRATIONS if m.version <= 36])
    conn.execute("BEGIN")
    alice, paris = _entity(conn, "Alice"), _entity(conn, "Paris")
    conn.execute("UPDATE entities SET entity_type = 'person' WHERE id = ?", (alice,))
    conn.execute("UPDATE entities SET entity_type = 'name' WHERE id = ?", (paris,))
    aspects = [  # (id, entity, name, confidence, description)
        ("a-kind", alice, "person", 0.6, None),  # what the extractor wrote: goes
        ("p-kind", paris, "named thing", 0.6, None),  # the same for another kind: goes
        ("a-llm", alice, "work", 0.6, None),  # another name: stays
        ("p-desc", paris, "geography", 0.8, "where it is"),  # an LLM's: stays
    ]
    for aid, eid, name, conf, desc in aspects:
        conn.execute(
            "INSERT INTO entity_aspects(id, entity_id, agent_id, aspect_name, canonical_name, description, confidence,"
            " created_at, updated_at) VALUES (?, ?, 'default', ?, ?, ?, ?, ?, ?)",
            (aid, eid, name, name, desc, conf, NOW, NOW),
        )
    conn.execute("COMMIT")
    assert migrate(conn, [m for m in MIGRATIONS if m.version <= 37]) == [37]
    assert {r[0] for r in conn.execute("SELECT id FROM entity_aspects")} == {"a-llm", "p-desc"}
    # The kind aspect is still there to read.
    detail = read.get_entity(conn, "default", alice)
    assert [(a.name, a.id) for a in detail.aspects] == [("person", f"kind:{alice}"), ("work", "a-llm")]
