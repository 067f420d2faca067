"""SQLite statements run on PostgreSQL through signet.store.pg_dialect: the rewrites return the
rows SQLite would, and every statement of the codebase either translates or is engine-specific."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from signet.store import pg_dialect
from signet.store.pg_url import resolve
from signet.store.postgres import PostgresDatabase

SRC = Path(__file__).resolve().parents[2] / "src" / "signet"
NOW = "2026-01-01T00:00:00+00:00"

ENGINE_SPECIFIC = re.compile(r"_fts\b|_fts_|\bMATCH\b|bm25|PRAGMA|VACUUM|sqlite_(master|sequence)")
"""What is SQLite's by nature and gets its own PostgreSQL code (docs/team.md): FTS5 tables and
their shadow tables, ``MATCH``/``bm25``, PRAGMAs, ``VACUUM``, the catalog."""

NOT_THE_STORE = ("bench/", "ingest/cursor.py", "search/tokens.py", "store/pg_", "store/postgres.py")
"""Modules whose SQL is not run on the store: benchmarks' scratch files, Cursor's own SQLite
files (signet.ingest.cursor), FTS5's tokenizer in an in-memory SQLite (signet.search.tokens),
and the PostgreSQL modules themselves."""


def _literal_statements() -> Iterator[tuple[str, int, str]]:
    """(file, line, sql) of every string literal passed to ``execute``/``executemany``, except
    on ``conn.raw`` (the PostgreSQL store's own psycopg connection: its SQL is PostgreSQL's,
    written for it, e.g. signet.auth.shared_secret)."""
    for path in sorted(SRC.rglob("*.py")):
        rel = str(path.relative_to(SRC))
        if any(part in rel for part in NOT_THE_STORE):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in ("execute", "executemany")
                and not (isinstance(node.func.value, ast.Attribute) and node.func.value.attr == "raw")
                and node.args
                and isinstance(node.args[0], ast.Constant)
                and isinstance(node.args[0].value, str)
            ):
                yield rel, node.lineno, node.args[0].value


@pytest.fixture
def pg(pg_url: str) -> Iterator[PostgresDatabase]:
    with PostgresDatabase(resolve(pg_url, "env:SIGNET_TEST_NO_SUCH_VAR")) as db:
        yield db


def test_every_literal_statement_translates_or_is_engine_specific(pg_url: str) -> None:
    PostgresDatabase(resolve(pg_url, "env:SIGNET_TEST_NO_SUCH_VAR")).open().close()
    planned, specific, broken = 0, 0, []
    seen: set[str] = set()
    with psycopg.connect(pg_url, autocommit=True) as conn:
        for rel, line, sql in _literal_statements():
            if sql in seen:
                continue
            seen.add(sql)
            try:
                pg = pg_dialect.translate(sql, with_params=False)
            except pg_dialect.Untranslatable as exc:
                if ENGINE_SPECIFIC.search(sql):
                    specific += 1
                else:
                    broken.append(f"{rel}:{line}: {exc}")
                continue
            if pg.lstrip().split(None, 1)[0].upper() not in ("SELECT", "INSERT", "UPDATE", "DELETE", "WITH"):
                continue  # DDL built at run time
            try:
                with conn.transaction(force_rollback=True):
                    for part in re.sub(r"%\(\w+\)s|%s", "NULL", pg).split(";\n"):
                        conn.execute("EXPLAIN " + part)
                planned += 1
            except psycopg.Error as exc:
                if ENGINE_SPECIFIC.search(sql):
                    specific += 1
                else:
                    broken.append(f"{rel}:{line}: {str(exc).splitlines()[0]}")
    assert broken == [], "\n".join(broken)
    assert planned > 250 and specific < 60  # docs/team.md: 271 planned, 46 engine-specific


def _seed(conn: Any) -> None:
    rows = [
        ("m1", "alpha fact", '["x", "y"]', 1, 0, '{"a": {"b": "deep"}}'),
        ("m2", "beta 50% off", '["y"]', 0, 0, '{"a": {"b": "other"}}'),
        ("m3", "gamma", "[]", 0, 1, "{}"),
    ]
    for mid, content, tags, pinned, deleted, clock in rows:
        conn.execute(
            "INSERT INTO memories(id, content, tags, pinned, is_deleted, vector_clock, content_hash,"
            " normalized_content, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, '', ?, ?)",
            (mid, content, tags, pinned, deleted, clock, f"h{mid}", NOW, NOW),
        )


def _ids(db: PostgresDatabase, sql: str, params: tuple[Any, ...] = ()) -> list[Any]:
    return db.read(lambda c: [r[0] for r in c.execute(sql, params).fetchall()])


def test_rewrites_return_what_sqlite_returns(pg: PostgresDatabase) -> None:
    pg.write(_seed)
    # integer flags read as truth values, NOT included; INDEXED BY dropped
    assert _ids(pg, "SELECT id FROM memories INDEXED BY idx_memories_type WHERE pinned AND NOT is_deleted") == ["m1"]
    assert _ids(pg, "SELECT CASE WHEN is_deleted THEN 'gone' ELSE id END FROM memories ORDER BY seq") == [
        "m1",
        "m2",
        "gone",
    ]
    # json_each over a TEXT column, unaliased and aliased
    assert _ids(
        pg,
        "SELECT id FROM memories m WHERE EXISTS (SELECT 1 FROM json_each(m.tags) WHERE json_each.value = ?)"
        " ORDER BY seq",
        ("y",),
    ) == ["m1", "m2"]
    assert _ids(pg, "SELECT j.value FROM json_each(?) j ORDER BY 1", ('["b", "a"]',)) == ["a", "b"]
    # json_extract with a nested path; % in a literal beside parameters
    assert _ids(pg, "SELECT json_extract(vector_clock, '$.a.b') FROM memories WHERE id = ?", ("m1",)) == ["deep"]
    assert _ids(pg, "SELECT id FROM memories WHERE content LIKE '%50%%' AND id = ?", ("m2",)) == ["m2"]
    # SUM of comparisons, an unnamed FROM subquery, IFNULL, GROUP_CONCAT
    assert _ids(pg, "SELECT SUM(is_deleted = 0) FROM memories") == [2]
    assert _ids(pg, "SELECT COUNT(*) FROM (SELECT id FROM memories WHERE pinned = ?)", (0,)) == [2]
    assert _ids(pg, "SELECT IFNULL(category, 'none') FROM memories WHERE id = 'm1'") == ["none"]
    assert _ids(pg, "SELECT group_concat(id, ',') FROM (SELECT id FROM memories ORDER BY seq)") == ["m1,m2,m3"]
    # a parameter or a number read as a truth value (a bool is sent as 0/1; `WHERE 1` from a built clause)
    assert _ids(pg, "SELECT id FROM memories WHERE 1 ORDER BY seq") == ["m1", "m2", "m3"]
    assert _ids(pg, "SELECT CASE WHEN ? THEN 'yes' ELSE 'no' END", (True,)) == ["yes"]
    assert _ids(pg, "SELECT CASE WHEN ? THEN 'yes' ELSE 'no' END", (False,)) == ["no"]
    # LIMIT -1: SQLite's "no limit", beside an OFFSET
    assert _ids(pg, "SELECT id FROM memories ORDER BY seq LIMIT -1 OFFSET ?", (1,)) == ["m2", "m3"]
    # a bool parameter is stored as SQLite would (0/1)
    pg.write(lambda c: c.execute("UPDATE memories SET pinned = ? WHERE id = ?", (True, "m3")))
    assert _ids(pg, "SELECT pinned FROM memories WHERE id = 'm3'") == [1]
    # strftime of now, in the ISO form the codebase writes
    (stamp,) = _ids(pg, "SELECT strftime('%Y-%m-%dT%H:%M:%fZ', 'now')")
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", stamp)


def test_upsert_with_a_bare_column_adds_to_the_existing_row(pg: PostgresDatabase) -> None:
    sql = (
        "INSERT INTO entities(id, name, canonical_name, mentions, agent_id, created_at, updated_at)"
        " VALUES (?, ?, ?, 1, ?, ?, ?) ON CONFLICT(agent_id, canonical_name)"
        " DO UPDATE SET mentions = mentions + 1, updated_at = excluded.updated_at RETURNING id"
    )
    first = pg.write(lambda c: c.execute(sql, ("e1", "Cat", "cat", "default", NOW, NOW)).fetchone()[0])
    again = pg.write(lambda c: c.execute(sql, ("e2", "Cat", "cat", "default", NOW, "later")).fetchone()[0])
    assert first == again == "e1"
    assert pg.read(lambda c: tuple(c.execute("SELECT mentions, updated_at FROM entities").fetchone())) == (2, "later")


def test_an_untranslatable_statement_says_what_it_is(pg: PostgresDatabase) -> None:
    with pytest.raises(pg_dialect.Untranslatable, match="SQLite-only"):
        pg.read(lambda c: c.execute("PRAGMA page_count"))
    with pytest.raises(pg_dialect.Untranslatable, match="does not parse"):
        pg.read(lambda c: c.execute("SELECT FROM WHERE ((("))


def test_fts5_queries_run_as_tsvector_searches(pg: PostgresDatabase) -> None:
    """The two shapes recall sends (signet.search.ftspool), with signet.search.fts's MATCH syntax."""
    pg.write(_seed)
    top = "SELECT rowid, bm25(memories_ctx_fts, 1.0, 0.5) AS r FROM memories_ctx_fts WHERE memories_ctx_fts MATCH ? ORDER BY r LIMIT ?"
    rows = pg.read(lambda c: c.execute(top, ('"alph"* OR "gamma"', 10)).fetchall())
    assert sorted(int(r[0]) for r in rows) == [1, 3]
    assert all(float(r[1]) < 0 for r in rows)  # negative, best first, like bm25
    filtered = (
        "SELECT m.id, bm25(memories_fts) AS r FROM memories_fts CROSS JOIN memories m ON m.seq = memories_fts.rowid "
        "WHERE memories_fts MATCH ? AND m.is_deleted = ? ORDER BY r LIMIT ?"
    )
    assert _ids(pg, filtered, ('"alph"* OR "gamma" OR "quote""d"', 0, 10)) == ["m1"]
    assert _ids(pg, filtered, ('"nothing"', 0, 10)) == []
    with pytest.raises(pg_dialect.Untranslatable, match="first"):
        pg_dialect.translate(
            "SELECT rowid FROM memories_fts WHERE rowid > ? AND memories_fts MATCH ?", with_params=True
        )


def test_the_catalog_answers_like_sqlite_master(pg: PostgresDatabase) -> None:
    sql = "SELECT 1 FROM sqlite_master WHERE type = ? AND name = ?"
    assert _ids(pg, sql, ("table", "memories")) == [1]
    assert _ids(pg, sql, ("index", "idx_memories_project")) == [1]
    assert _ids(pg, sql, ("table", "nope")) == []


def test_in_lists_of_any_length_share_one_translation(pg: PostgresDatabase) -> None:
    """Recall filters a pool of a different size each time: one parse, the right rows every time."""

    def add(conn: Any) -> None:
        for i in range(6):
            conn.execute(
                "INSERT INTO memories(id, content, content_hash, normalized_content, project, created_at, updated_at)"
                " VALUES (?, ?, ?, '', ?, ?, ?)",
                (f"m{i}", f"text {i}", f"h{i}", "a" if i % 2 else "b", NOW, NOW),
            )

    pg.write(add)
    pg_dialect._translate.cache_clear()
    for n in range(1, 7):
        ids = [f"m{i}" for i in range(n)]
        marks = ",".join("?" for _ in ids)
        sql = (
            f"SELECT id FROM memories WHERE id IN ({marks}) AND project IN (?, ?) AND content LIKE 'text%' ORDER BY id"
        )
        got = pg.read(lambda c, sql=sql, ids=ids: [r[0] for r in c.execute(sql, (*ids, "a", "zz"))])
        assert got == [i for i in ids if int(i[1:]) % 2]
    assert pg_dialect._translate.cache_info().currsize <= 2  # the list-of-one form and the folded one
    # A list inside a string literal is text, not parameters.
    assert "'x IN (?, ?)'" in pg_dialect.translate("SELECT 'x IN (?, ?)' AS t WHERE 1 IN (?, ?)", with_params=True)
