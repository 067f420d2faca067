"""The PostgreSQL store keeps the SQLite store's contract (signet.store.backend), on a real server."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest

from signet.store.backend import StorageBackend
from signet.store.database import Database
from signet.store.decay import sql_decay
from signet.store.migrations import Migration, MigrationError
from signet.store.pg_migrations import LOCK_KEY
from signet.store.pg_migrations import migrate as pg_migrate
from signet.store.pg_url import resolve
from signet.store.postgres import PostgresDatabase
from signet.store.sqlite import sqlite3

NOW = "2026-01-01T00:00:00+00:00"


def _memory(conn: Any, mid: str, content: str) -> None:
    conn.execute(
        "INSERT INTO memories(id, content, content_hash, normalized_content, created_at, updated_at)"
        " VALUES (?, ?, ?, '', ?, ?)",
        (mid, content, f"h-{mid}", NOW, NOW),
    )


@pytest.fixture
def pg(pg_url: str) -> Iterator[PostgresDatabase]:
    with PostgresDatabase(resolve(pg_url, "env:SIGNET_TEST_NO_SUCH_VAR")) as db:
        yield db


def test_both_stores_satisfy_the_interface(pg: PostgresDatabase, tmp_path: Any) -> None:
    assert isinstance(pg, StorageBackend)
    assert isinstance(Database(tmp_path / "s.db"), StorageBackend)
    assert pg.dialect == "postgres" and Database.dialect == "sqlite"


def test_a_write_is_read_back_by_name_and_position(pg: PostgresDatabase) -> None:
    pg.write(lambda c: _memory(c, "m1", "the cat sat"))
    row = pg.read(lambda c: c.execute("SELECT id, content, seq, rowid FROM memories WHERE id = ?", ("m1",)).fetchone())
    assert row["content"] == "the cat sat" and row[0] == "m1"
    assert row["rowid"] == row["seq"]  # SQLite's rowid alias of an INTEGER PRIMARY KEY
    assert dict(row)["id"] == "m1"


def test_a_failing_write_rolls_back_alone_and_its_callbacks_never_run(pg: PostgresDatabase) -> None:
    ran: list[str] = []
    gate = threading.Event()

    def blocker(conn: Any) -> None:
        gate.wait(10)  # holds the writer so the next three are committed as one group

    def good(name: str) -> Any:
        def fn(conn: Any) -> str:
            _memory(conn, name, f"text {name}")
            pg.after_commit(lambda: ran.append(name))
            return name

        return fn

    def bad(conn: Any) -> None:
        _memory(conn, "bad", "never kept")
        pg.after_commit(lambda: ran.append("bad"))
        _memory(conn, "a", "a duplicate id: unique violation")

    first = pg.submit(blocker)
    futs = [pg.submit(good("a")), pg.submit(bad), pg.submit(good("b"))]
    gate.set()
    first.result(10)
    assert futs[0].result(10) == "a" and futs[2].result(10) == "b"
    # the callers' own class (signet.store.pg_errors), with PostgreSQL's error as the cause
    with pytest.raises(sqlite3.IntegrityError) as unique:
        futs[1].result(10)
    assert isinstance(unique.value.__cause__, psycopg.errors.UniqueViolation)
    ids = pg.read(lambda c: [r["id"] for r in c.execute("SELECT id FROM memories ORDER BY seq").fetchall()])
    assert ids == ["a", "b"]
    assert ran == ["a", "b"]


def test_a_python_error_in_a_write_reaches_the_caller_and_undoes_its_rows(pg: PostgresDatabase) -> None:
    def fn(conn: Any) -> None:
        _memory(conn, "x", "half done")
        raise ValueError("changed my mind")

    with pytest.raises(ValueError, match="changed my mind"):
        pg.write(fn)
    assert pg.read(lambda c: c.execute("SELECT COUNT(*) FROM memories").fetchone()[0]) == 0


def test_a_write_inside_a_write_joins_its_transaction(pg: PostgresDatabase) -> None:
    def outer(conn: Any) -> None:
        _memory(conn, "o", "outer")
        pg.write(lambda c: _memory(c, "i", "inner"))
        raise RuntimeError("roll both back")

    with pytest.raises(RuntimeError):
        pg.write(outer)
    assert pg.read(lambda c: c.execute("SELECT COUNT(*) FROM memories").fetchone()[0]) == 0


def test_after_commit_is_only_for_write_functions(pg: PostgresDatabase) -> None:
    with pytest.raises(RuntimeError, match="after_commit"):
        pg.after_commit(lambda: None)


def test_a_read_sees_one_snapshot(pg: PostgresDatabase) -> None:
    pg.write(lambda c: _memory(c, "m1", "one"))
    inside, done = threading.Event(), threading.Event()

    def reader(conn: Any) -> tuple[int, int]:
        before = int(conn.execute("SELECT COUNT(*) FROM memories").fetchone()[0])
        inside.set()
        done.wait(10)
        return before, int(conn.execute("SELECT COUNT(*) FROM memories").fetchone()[0])

    with ThreadPoolExecutor(1) as pool:
        fut = pool.submit(pg.read, reader)
        assert inside.wait(10)
        pg.write(lambda c: _memory(c, "m2", "two"))
        done.set()
        assert fut.result(10) == (1, 1)
    assert pg.read(lambda c: c.execute("SELECT COUNT(*) FROM memories").fetchone()[0]) == 2


def test_reads_cannot_write(pg: PostgresDatabase) -> None:
    with pytest.raises(sqlite3.DatabaseError) as err:
        pg.read(lambda c: _memory(c, "r", "from a read"))
    assert isinstance(err.value.__cause__, psycopg.errors.ReadOnlySqlTransaction)
    assert err.value.sqlstate == "25006"  # type: ignore[attr-defined]


def test_sqlite_upserts_behave_the_same(pg: PostgresDatabase) -> None:
    sql = "INSERT OR IGNORE INTO memory_entity_links(memory_seq, entity_rowid, created_at) VALUES (?, ?, ?)"

    def entity(conn: Any) -> None:
        rowid = conn.execute(
            "INSERT INTO entities(id, name, canonical_name, agent_id, created_at, updated_at)"
            " VALUES ('e1', 'Cat', 'cat', 'default', ?, ?) RETURNING rowid",
            (NOW, NOW),
        ).fetchone()[0]
        conn.execute(sql, (1, rowid, NOW))
        conn.execute(sql, (1, rowid, "later"))  # ignored, as in SQLite

    pg.write(entity)
    assert pg.read(lambda c: c.execute("SELECT created_at FROM memory_entity_links").fetchall()) == [(NOW,)]
    replace = "INSERT OR REPLACE INTO schema_migrations_audit(id, version, name, duration_ms, applied_at) VALUES (?, ?, ?, ?, ?)"
    pg.write(lambda c: c.execute(replace, (1, 99, "first", 1.0, NOW)))
    pg.write(lambda c: c.execute(replace, (1, 99, "second", 2.0, NOW)))
    assert pg.read(lambda c: c.execute("SELECT name FROM schema_migrations_audit WHERE id = 1").fetchone()[0]) == (
        "second"
    )


@pytest.mark.parametrize("days", [0.0, 1.5, 30.0])
@pytest.mark.parametrize("pinned", [0, 1])
def test_signet_decay_is_the_same_rule_in_postgres(pg: PostgresDatabase, days: float, pinned: int) -> None:
    last = (datetime.now(UTC) - timedelta(days=days)).isoformat()
    got = pg.read(lambda c: c.execute("SELECT signet_decay(?, ?, ?, ?)", (0.8, pinned, last, 0.95)).fetchone()[0])
    assert got == pytest.approx(sql_decay(0.8, pinned, last, 0.95), rel=1e-4)
    assert pg.read(lambda c: c.execute("SELECT signet_decay(0.8, 0, 'not a date', 0.95)").fetchone()[0]) == 0.8


def test_concurrent_opens_migrate_once(pg_url: str) -> None:
    """Four daemons start at once on an empty database: each version is applied exactly once."""
    target = resolve(pg_url, "env:SIGNET_TEST_NO_SUCH_VAR")
    barrier = threading.Barrier(4)

    def start() -> list[int]:
        barrier.wait(10)
        db = PostgresDatabase(target)
        try:
            db.open()
            return db.read(lambda c: [int(r[0]) for r in c.execute("SELECT version FROM schema_migrations")])
        finally:
            db.close()

    with ThreadPoolExecutor(4) as pool:
        seen = list(pool.map(lambda _: start(), range(4)))
    assert all(s == seen[0] for s in seen) and seen[0]
    with psycopg.connect(pg_url) as conn:
        audit = conn.execute("SELECT version, COUNT(*) FROM schema_migrations_audit GROUP BY version").fetchall()
    assert audit and all(n == 1 for _, n in audit)


def test_migration_waits_for_the_lock_holder(pg_url: str) -> None:
    with psycopg.connect(pg_url, autocommit=True) as holder, psycopg.connect(pg_url, autocommit=True) as other:
        holder.execute("SELECT pg_advisory_lock(%s)", (LOCK_KEY,))
        started = time.monotonic()
        with pytest.raises(MigrationError, match="migration lock"):
            pg_migrate(other, [Migration(900, "t", "CREATE TABLE t900 (a INT)")], lock_wait_s=0.6)
        assert time.monotonic() - started >= 0.6
        holder.execute("SELECT pg_advisory_unlock(%s)", (LOCK_KEY,))
        assert pg_migrate(other, [Migration(900, "t", "CREATE TABLE t900 (a INT)")]) == [900]


def test_a_failing_migration_leaves_nothing(pg_url: str) -> None:
    broken = Migration(901, "broken", "CREATE TABLE half (a INT); CREATE TABLE half (a INT);")
    with psycopg.connect(pg_url, autocommit=True) as conn:
        with pytest.raises(psycopg.errors.DuplicateTable):
            pg_migrate(conn, [broken])
        assert conn.execute("SELECT to_regclass('half')").fetchone() == (None,)
        assert conn.execute("SELECT COUNT(*) FROM schema_migrations WHERE version = 901").fetchone() == (0,)
        assert conn.execute("SELECT pg_try_advisory_lock(%s)", (LOCK_KEY,)).fetchone() == (True,)  # released


def test_a_changed_migration_is_refused(pg_url: str) -> None:
    with psycopg.connect(pg_url, autocommit=True) as conn:
        pg_migrate(conn, [Migration(902, "v", "CREATE TABLE v902 (a INT)")])
        with pytest.raises(MigrationError, match="changed after it was applied"):
            pg_migrate(conn, [Migration(902, "v", "CREATE TABLE v902 (a BIGINT)")])
