"""The PostgreSQL schema ends where SQLite's migrations end (signet.store.pg_schema)."""

from __future__ import annotations

from typing import Any

import psycopg

from signet.store import pg_schema
from signet.store.migrations import MIGRATIONS
from signet.store.pg_url import resolve
from signet.store.postgres import PostgresDatabase
from tests.pg import schema_gen

NOW = "2026-01-01T00:00:00+00:00"


def _sqlite_columns() -> dict[str, set[str]]:
    import re

    import sqlglot
    from sqlglot import exp

    out: dict[str, set[str]] = {}
    for kind, name, sql in schema_gen.sqlite_schema():
        if kind != "table" or name.startswith(("sqlite_", "schema_migrations")) or schema_gen._is_fts(name, sql):
            continue
        tree = sqlglot.parse_one(sql, read="sqlite")
        out[name] = {c.name for c in tree.find_all(exp.ColumnDef)}
        assert out[name], re.sub(r"\s+", " ", sql)[:80]
    return out


def test_the_committed_baseline_is_what_the_generator_derives() -> None:
    """The baseline is SQLite's schema after migration 30, and a SQLite migration after it has its
    PostgreSQL counterpart under the same number (test_every_table_and_column_exists_on_postgres
    checks what the counterparts add)."""
    assert "".join(pg_schema.BASELINE.split()) == "".join(schema_gen.postgres_ddl(upto=30).split()), (
        "SQLite's migrations 1-30 changed: they are frozen (the PostgreSQL baseline is their end state)"
    )
    sqlite_versions = {m.version for m in MIGRATIONS}
    pg_versions = {m.version for m in pg_schema.PG_MIGRATIONS}
    assert not sqlite_versions & pg_schema.PG_ONLY, (
        "a SQLite migration took a number PostgreSQL uses for its own (pg_schema.PG_ONLY): use the next free one"
    )
    assert {v for v in sqlite_versions if v > 30} == {v for v in pg_versions if v > 30} - pg_schema.PG_ONLY, (
        "a new SQLite migration: add its PostgreSQL counterpart with the same number"
    )


def test_every_table_and_column_exists_on_postgres(pg_url: str) -> None:
    with PostgresDatabase(resolve(pg_url, "env:SIGNET_TEST_NO_SUCH_VAR")) as db:
        rows = db.read(
            lambda c: c.execute(
                "SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = 'public'"
            ).fetchall()
        )
    pg: dict[str, set[str]] = {}
    for table, column in rows:
        pg.setdefault(table, set()).add(column)
    for table, columns in _sqlite_columns().items():
        assert table in pg, table
        assert columns <= pg[table], (table, columns - pg[table])
        assert "rowid" in pg[table]


def test_keyword_search_and_its_change_log(pg_url: str) -> None:
    with PostgresDatabase(resolve(pg_url, "env:SIGNET_TEST_NO_SUCH_VAR")) as db:

        def add(conn: Any) -> None:
            for i, text in enumerate(["the quick brown fox", "a lazy dog sleeps", "Foxes are quick"]):
                conn.execute(
                    "INSERT INTO memories(id, content, content_hash, normalized_content, created_at, updated_at)"
                    " VALUES (?, ?, ?, '', ?, ?)",
                    (f"m{i}", text, f"h{i}", NOW, NOW),
                )
            conn.execute("UPDATE memories SET content = 'a lazy cat sleeps' WHERE id = 'm1'")
            conn.execute("UPDATE memories SET importance = 0.9 WHERE id = 'm2'")  # not a keyword change

        db.write(add)
        hits = db.read(
            lambda c: [
                r[0]
                for r in c.raw.execute(
                    "SELECT id FROM memories WHERE fts @@ plainto_tsquery('simple', %s) ORDER BY seq", ("quick",)
                ).fetchall()
            ]
        )
        assert hits == ["m0", "m2"]
        cat = db.read(
            lambda c: c.raw.execute("SELECT id FROM memories WHERE fts @@ to_tsquery('simple', 'cat')").fetchall()
        )
        assert [r[0] for r in cat] == ["m1"]
        logged = db.read(lambda c: [r[0] for r in c.execute("SELECT seq FROM keyword_changes ORDER BY id").fetchall()])
        assert logged == [1, 2, 3, 2]


def test_the_gin_index_is_used(pg_url: str) -> None:
    with psycopg.connect(pg_url, autocommit=True) as conn:
        PostgresDatabase(resolve(pg_url, "env:SIGNET_TEST_NO_SUCH_VAR")).open().close()
        conn.execute("SET enable_seqscan = off")
        plan = " ".join(
            r[0]
            for r in conn.execute(
                "EXPLAIN SELECT id FROM memories WHERE fts @@ plainto_tsquery('simple', 'fox')"
            ).fetchall()
        )
    assert "idx_memories_fts" in plan


def test_migrations_36_and_37_on_postgresql(pg_url: str) -> None:
    """A PostgreSQL store at 35 with mention rows reads the same links through the view after
    36, stores no copy of a name or time it can read back, and drops a link to a missing memory."""
    from signet.store import pg_migrations

    with psycopg.connect(pg_url, autocommit=True) as conn:
        pg_migrations.migrate(conn, [m for m in pg_schema.PG_MIGRATIONS if m.version <= 35])
        for mid, created in (("m1", NOW), ("m2", "2026-02-01T00:00:00+00:00")):
            conn.execute(
                "INSERT INTO memories(id, content, content_hash, normalized_content, created_at, updated_at)"
                " VALUES (%s, 'x', %s, '', %s, %s)",
                (mid, mid, created, created),
            )
        for eid, name in (("e1", "Alice"), ("e2", "Lisbon")):
            conn.execute(
                "INSERT INTO entities(id, name, canonical_name, created_at, updated_at) VALUES (%s, %s, %s, %s, %s)",
                (eid, name, name.lower(), NOW, NOW),
            )
        rows = [
            ("m1", "e1", "Alice", 0.6, NOW),
            ("m1", "e2", "lisbon", 1.0, NOW),
            ("m2", "e1", "Alice", None, NOW),
            ("gone", "e2", "Lisbon", 0.5, NOW),
        ]
        for row in rows:
            conn.execute(
                "INSERT INTO memory_entity_mentions(memory_id, entity_id, mention_text, confidence, created_at)"
                " VALUES (%s, %s, %s, %s, %s)",
                row,
            )
        conn.execute("UPDATE entities SET entity_type = 'person' WHERE id = 'e1'")
        for aid, name in (("kind", "person"), ("llm", "work")):  # 37: the extractor's kind aspect goes
            conn.execute(
                "INSERT INTO entity_aspects(id, entity_id, agent_id, aspect_name, canonical_name, confidence,"
                " created_at, updated_at) VALUES (%s, 'e1', 'default', %s, %s, 0.6, %s, %s)",
                (aid, name, name, NOW, NOW),
            )
        assert pg_migrations.migrate(conn, [m for m in pg_schema.PG_MIGRATIONS if m.version <= 37]) == [36, 37]
        assert [r[0] for r in conn.execute("SELECT id FROM entity_aspects").fetchall()] == ["llm"]
        got = set(
            conn.execute(
                "SELECT memory_id, entity_id, mention_text, confidence, created_at FROM memory_entity_mentions"
            ).fetchall()
        )
        assert got == set(rows[:3])
        stored = conn.execute(
            "SELECT COUNT(*), COUNT(mention_text), COUNT(created_at) FROM memory_entity_links"
        ).fetchone()
        assert stored == (3, 1, 1)  # "lisbon" (another spelling) and m2's earlier link time are kept
        conn.execute("DELETE FROM entities WHERE id = 'e1'")
        assert conn.execute("SELECT COUNT(*) FROM memory_entity_links").fetchone()[0] == 1


def test_migration_38_hints_on_postgresql(pg_url: str) -> None:
    """The hints of a PostgreSQL store: the same search SQL as SQLite's (signet.search.hints,
    translated to the ``tsvector``), the same filter, removed with their memory or its old text."""
    from signet.knowledge import hints as stored_hints
    from signet.search.hints import hint_matches

    with PostgresDatabase(resolve(pg_url, "env:SIGNET_TEST_NO_SUCH_VAR")) as db:

        def add(conn: Any) -> None:
            for mid, project in (("m1", "a"), ("m2", "b"), ("m3", "a")):
                conn.execute(
                    "INSERT INTO memories(id, content, content_hash, normalized_content, project, created_at,"
                    " updated_at) VALUES (?, 'x', ?, '', ?, ?, ?)",
                    (mid, mid, project, NOW, NOW),
                )
            for seq in (1, 2, 3):
                stored_hints.write(conn, seq, ['Which "greenhouse" NEAR( did she visit?'], "llm")

        db.write(add)
        where, params = "m.is_deleted = 0 AND m.project = ?", ["a"]
        found = db.read(lambda c: hint_matches(c, '"greenhouse"', where, params, 10))
        assert sorted(mid for mid, _ in found) == ["m1", "m3"] and all(score < 0 for _, score in found)
        db.write(lambda c: c.execute("UPDATE memories SET content = 'new text' WHERE id = 'm3'"))
        db.write(lambda c: c.execute("DELETE FROM memories WHERE id = 'm2'"))
        assert [mid for mid, _ in db.read(lambda c: hint_matches(c, '"greenhouse"', where, params, 10))] == ["m1"]
        left = db.read(lambda c: c.execute("SELECT memory_seq FROM memory_hints ORDER BY memory_seq").fetchall())
        assert [r[0] for r in left] == [1]
