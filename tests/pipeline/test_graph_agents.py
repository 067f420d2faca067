"""Entities belong to one agent: the same name from two agents is two entities, and
migration 11 splits rows that older versions shared (real SQLite files, the real migrations)."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from signet.pipeline import graph
from signet.pipeline.extraction import EntityTriple
from signet.store.database import Database, connect
from signet.store.migrations import MIGRATIONS, migrate
from signet.store.sqlite import Connection, sqlite3

NOW = "2026-01-01T00:00:00+00:00"


def _memory(conn: Connection, content: str, agent: str) -> str:
    mid = str(uuid.uuid4())
    conn.execute(
        "INSERT INTO memories(id, content, created_at, updated_at, content_hash, normalized_content, agent_id)"
        " VALUES (?, ?, ?, ?, ?, ?, ?)",
        (mid, content, NOW, NOW, uuid.uuid4().hex, content.lower(), agent),
    )
    return mid


def test_the_same_name_from_two_agents_is_two_entities(tmp_path: Path) -> None:
    db = Database(tmp_path / "memories.db")
    db.open()
    try:

        def write(conn: Connection) -> None:
            a = _memory(conn, "Alice moved to Lisbon", "agent-a")
            b = _memory(conn, "Alice likes chess", "agent-b")
            graph.persist(
                conn,
                [EntityTriple("Alice", "lives_in", "Lisbon", 0.9)],
                agent_id="agent-a",
                memories={a: "Alice moved to Lisbon"},
                job_id=None,
            )
            graph.persist(
                conn,
                [EntityTriple("Alice", "likes", "chess", 0.8)],
                agent_id="agent-b",
                memories={b: "Alice likes chess"},
                job_id=None,
            )
            # B's inline linker finds B's own Alice (it found nothing when A owned the name).
            c = _memory(conn, "Alice won the chess final", "agent-b")
            seq = conn.execute("SELECT seq FROM memories WHERE id = ?", (c,)).fetchone()[0]
            assert graph.inline_link(conn, seq, "Alice won the chess final", "agent-b") >= 1

        db.write(write)
        rows = db.read(
            lambda c: c.execute(
                "SELECT agent_id, mentions FROM entities WHERE canonical_name = 'alice' ORDER BY agent_id"
            ).fetchall()
        )
        assert [(r[0], r[1]) for r in rows] == [("agent-a", 1), ("agent-b", 1)]
        cross = db.read(
            lambda c: c.execute(
                "SELECT COUNT(*) FROM memory_entity_mentions mm JOIN memories m ON m.id = mm.memory_id"
                " JOIN entities e ON e.id = mm.entity_id WHERE m.agent_id != e.agent_id"
            ).fetchone()[0]
        )
        assert cross == 0
    finally:
        db.close()


def test_migration_11_splits_entities_two_agents_shared(tmp_path: Path) -> None:
    path = tmp_path / "memories.db"
    conn = connect(path)
    migrate(conn, [m for m in MIGRATIONS if m.version <= 10])
    # What versions before 11 wrote: B's mention counted on A's row and linked to it.
    conn.execute("BEGIN")
    a = _memory(conn, "Alice moved to Lisbon", "agent-a")
    b = _memory(conn, "Alice likes chess", "agent-b")
    alice, lisbon = str(uuid.uuid4()), str(uuid.uuid4())
    for eid, name in ((alice, "alice"), (lisbon, "lisbon")):
        conn.execute(
            "INSERT INTO entities(id, name, canonical_name, mentions, agent_id, created_at, updated_at)"
            " VALUES (?, ?, ?, ?, 'agent-a', ?, ?)",
            (eid, name.title(), name, 3 if name == "alice" else 1, NOW, NOW),
        )
    conn.execute(
        "INSERT INTO relations(id, source_entity_id, target_entity_id, relation_type, created_at, updated_at)"
        " VALUES (?, ?, ?, 'lives_in', ?, ?)",
        (str(uuid.uuid4()), alice, lisbon, NOW, NOW),
    )
    for mid in (a, b):
        conn.execute(  # the table of versions before 36
            "INSERT INTO memory_entity_mentions(memory_id, entity_id, mention_text, created_at)"
            " VALUES (?, ?, 'Alice', ?)",
            (mid, alice, NOW),
        )
    conn.execute("COMMIT")
    assert migrate(conn)[0] == 11  # and any later ones
    ents = {
        (r["agent_id"], r["canonical_name"]): (r["id"], r["mentions"])
        for r in conn.execute("SELECT id, agent_id, canonical_name, mentions FROM entities")
    }
    assert set(ents) == {("agent-a", "alice"), ("agent-a", "lisbon"), ("agent-b", "alice")}
    assert ents[("agent-a", "alice")] == (alice, 2)  # B's mention moved out of A's count
    b_alice = ents[("agent-b", "alice")][0]
    assert ents[("agent-b", "alice")][1] == 1 and str(uuid.UUID(b_alice)) == b_alice
    mentions = dict(conn.execute("SELECT memory_id, entity_id FROM memory_entity_mentions").fetchall())
    assert mentions == {a: alice, b: b_alice}
    # Relations stay with the first owner and still resolve; foreign keys are on and intact.
    assert (
        conn.execute(
            "SELECT COUNT(*) FROM relations r JOIN entities s ON s.id = r.source_entity_id"
            " JOIN entities t ON t.id = r.target_entity_id"
        ).fetchone()[0]
        == 1
    )
    assert conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1
    assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
    # The new constraint holds: a second (agent-b, alice) row is refused.
    with pytest.raises(sqlite3.IntegrityError, match="UNIQUE"):
        conn.execute(
            "INSERT INTO entities(id, name, canonical_name, agent_id, created_at, updated_at)"
            " VALUES ('x', 'Alice', 'alice', 'agent-b', ?, ?)",
            (NOW, NOW),
        )
    conn.close()
