"""``signet migrate-storage``: a real SQLite workspace, seeded through the real service, copied
to a real PostgreSQL (both test clusters) and back by the real CLI; the export and every
table's hash come back identical. Refusals (a non-empty target, a running daemon, a target
that alters rows) are one line and a non-zero exit; the password shows up nowhere."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
import pytest
from fastapi.testclient import TestClient

from signet import instance
from signet.daemon.app import create_app
from signet.memory.exporter import export_lines
from signet.pipeline.queue import enqueue
from signet.store.pg_url import resolve
from signet.store.postgres import PostgresDatabase
from signet.store.transfer_storage import SqliteEnd, Table, table_digest
from signet.workspace import Workspace
from tests import pgcluster
from tests.conftest import start_runtime
from tests.core.test_export_import import populate

TURNS = [
    {"role": "user", "content": "Remember: the nightly backup runs on hermes at 02:00."},
    {"role": "assistant", "content": "Noted, the nightly backup is on hermes."},
]


def cli(ws: Workspace, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, "SIGNET_WORKSPACE": str(ws.root), **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "signet.cli.entry", "migrate-storage", *args],
        capture_output=True,
        text=True,
        env=full,
        timeout=600,
    )


def one_line_error(r: subprocess.CompletedProcess[str]) -> str:
    assert r.returncode == 1, (r.stdout, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    return lines[0]


def seed_more(ws: Workspace) -> None:
    """A session transcript (and its handoff) through the hook, and a pipeline job."""
    rt = start_runtime(ws)
    try:
        with TestClient(create_app(rt, manage_runtime=False)) as c:
            r = c.post(
                "/api/hooks/session-end",
                json={"harness": "claude-code", "session_id": "s-1", "project": "ops", "turns": TURNS},
            )
            assert r.status_code == 200, r.text
            r = c.post("/api/memory/remember", json={"content": "the nightly backup runs on hermes"})
            assert r.status_code == 200, r.text
            mid = r.json()["id"]
        rt.db.write(lambda conn: enqueue(conn, "extract", memory_id=mid))
        rt.db.write(superseded_claim)
        assert rt.embeddings.wait_idle(120)
    finally:
        rt.stop()


def superseded_claim(conn: Any) -> None:
    """An attribute superseded by a newer one: a row referencing a row of its own table that
    comes after it (PostgreSQL checks the reference per statement; the copy sets it last)."""
    now = "2025-02-03T04:05:06+00:00"
    conn.execute(
        "INSERT INTO entity_aspects(id, entity_id, agent_id, aspect_name, canonical_name, created_at, updated_at)"
        " VALUES ('asp-1', 'e-hermes', 'default', 'Schedule', 'schedule', ?, ?)",
        (now, now),
    )
    for aid, value, status in (("att-old", "01:00", "superseded"), ("att-new", "02:00", "active")):
        conn.execute(
            "INSERT INTO entity_attributes(id, aspect_id, entity_id, agent_id, attribute_key, attribute_value,"
            " status, superseded_by, created_at, updated_at) VALUES (?, 'asp-1', 'e-hermes', 'default',"
            " 'backup_time', ?, ?, NULL, ?, ?)",
            (aid, value, status, now, now),
        )
    conn.execute("UPDATE entity_attributes SET superseded_by = 'att-new' WHERE id = 'att-old'")


def digests(path: Path) -> dict[str, tuple[int, str]]:
    end = SqliteEnd(path, create=False)
    try:
        out = {}
        for name, cols in end.tables().items():
            out[name] = table_digest(end.rows(Table(name, tuple(cols), own_rowid=True)))
        return out
    finally:
        end.close()


def export(path: Path) -> bytes:
    return b"".join(export_lines(path, vectors=True, deleted=True, agent=None, embedding_model=None))


def counts(path: Path, *tables: str) -> dict[str, int]:
    end = SqliteEnd(path, create=False)
    try:
        return {t: end.count(t) for t in tables}
    finally:
        end.close()


def pg_tables(url: str) -> int:
    with psycopg.connect(url) as conn:
        row = conn.execute("SELECT COUNT(*) FROM pg_tables WHERE schemaname = current_schema()").fetchone()
        assert row is not None
        return int(row[0])


def test_round_trip_sqlite_postgres_sqlite_is_identical(
    make_workspace: Callable[..., Workspace], pg_url: str, pg_cluster: pgcluster.Cluster, tmp_path: Path
) -> None:
    ws = make_workspace()
    populate(ws)  # memories with local vectors, an edit (history), a forgotten memory, tags, graph rows
    seed_more(ws)
    db = ws.database_path()
    seeded = counts(
        db,
        "memories",
        "embeddings",
        "memory_history",
        "entities",
        "memory_jobs",
        "session_transcripts",
        "transcript_turns",
        "entity_attributes",
    )
    assert all(n > 0 for n in seeded.values()), seeded

    dry = cli(ws, "--to", pg_url, "--dry-run", "--json")
    assert dry.returncode == 0, dry.stderr
    assert json.loads(dry.stdout)["dry_run"] is True and pg_tables(pg_url) == 0  # nothing written

    there = cli(ws, "--to", pg_url, "--json")
    assert there.returncode == 0, there.stderr
    report = json.loads(there.stdout)
    assert report["verified"] and not report["mismatched"]
    by_table = {t["table"]: t for t in report["tables"]}
    for name, n in seeded.items():
        assert by_table[name]["source_rows"] == by_table[name]["target_rows"] == n
    assert "memories_fts" in report["not_copied"] and "keyword_changes" in report["not_copied"]
    if pg_cluster.password:
        assert pg_cluster.password not in there.stdout + there.stderr

    # PostgreSQL built its own search column from the copied rows.
    with psycopg.connect(pg_url) as conn:
        hit = conn.execute("SELECT COUNT(*) FROM memories WHERE fts @@ to_tsquery('simple', 'hermes')").fetchone()
        assert hit is not None and hit[0] >= 2

    back = tmp_path / "back" / "memories.db"
    home = cli(ws, "--from", pg_url, "--to", f"sqlite:{back}")
    assert home.returncode == 0, home.stderr
    assert "DIFFERENT" not in home.stdout and " same" in home.stdout
    assert "memories_fts_data" in home.stdout.splitlines()[-1]  # the not-copied line names the rebuilt tables

    assert export(back) == export(db)  # byte for byte, vectors and tombstones included
    assert digests(back) == digests(db)

    # The SQLite copy is a working store: the daemon opens it and keyword recall finds rows
    # through the FTS5 index the copy rebuilt.
    ws2 = make_workspace()
    shutil.copyfile(back, ws2.database_path())
    rt = start_runtime(ws2)
    try:
        with TestClient(create_app(rt, manage_runtime=False)) as c:
            found = c.post("/api/memory/recall", json={"query": "staging server hermes"}).json()
            assert any("hermes" in r["content"] for r in found["results"]), found
    finally:
        rt.stop()


def _small(make_workspace: Callable[..., Workspace]) -> Workspace:
    ws = make_workspace(embedding="none")
    rt = start_runtime(ws)
    try:
        with TestClient(create_app(rt, manage_runtime=False)) as c:
            for text in ("alpha fact", "beta fact"):
                assert c.post("/api/memory/remember", json={"content": text}).status_code == 200
    finally:
        rt.stop()
    return ws


def test_refuses_a_non_empty_target_and_a_running_daemon(
    make_workspace: Callable[..., Workspace], pg_url: str, pg_cluster: pgcluster.Cluster
) -> None:
    ws = _small(make_workspace)
    first = cli(ws, "--to", pg_url)
    assert first.returncode == 0, first.stderr
    # The copy is a working PostgreSQL store: a new memory does not reuse a copied id.
    rt = start_runtime(make_workspace(embedding="none"), storage=PostgresDatabase(resolve(pg_url, "env:NO_SUCH_VAR")))
    try:
        with TestClient(create_app(rt, manage_runtime=False)) as c:
            r = c.post("/api/memory/remember", json={"content": "gamma fact"})
            assert r.status_code == 200, r.text
            assert c.get("/api/memories", params={"limit": 10}).json()["total"] == 3
    finally:
        rt.stop()
    with psycopg.connect(pg_url) as conn:
        seqs = [int(r[0]) for r in conn.execute("SELECT seq FROM memories ORDER BY seq")]
        assert seqs == sorted(set(seqs)) and len(seqs) == 3

    again = one_line_error(cli(ws, "--to", pg_url))
    assert "not empty" in again and "memories" in again
    with psycopg.connect(pg_url) as conn:
        row = conn.execute("SELECT COUNT(*) FROM memories").fetchone()
        assert row is not None and row[0] == 3  # untouched

    # Back to a SQLite file that already holds a store with rows: refused the same way.
    refused = one_line_error(cli(ws, "--from", pg_url, "--to", f"sqlite:{ws.database_path()}"))
    assert "the daemon" not in refused and "not empty" in refused

    lock = instance.DaemonLock(ws.daemon_dir)  # what a running daemon holds
    assert lock.acquire(wait=0.5)
    try:
        fresh = pg_cluster.new_database()
        busy = one_line_error(cli(ws, "--to", fresh))
        assert "daemon is running" in busy and "signet stop" in busy
        assert pg_tables(fresh) == 0
    finally:
        lock.release()

    for bad in (["--to", "mysql://x"], ["--to", "sqlite:/tmp/x.db"], ["--from", "nonsense", "--to", pg_url]):
        assert one_line_error(cli(ws, *bad))


def test_a_target_that_alters_rows_fails_verification_naming_the_table(
    make_workspace: Callable[..., Workspace], pg_url: str
) -> None:
    ws = _small(make_workspace)
    from signet.store import pg_migrations

    with psycopg.connect(pg_url, autocommit=True) as conn:  # a schema whose trigger changes what it stores
        pg_migrations.migrate(conn)
        conn.execute(
            "CREATE FUNCTION shout() RETURNS TRIGGER LANGUAGE plpgsql AS $$"
            " BEGIN NEW.content := upper(NEW.content); RETURN NEW; END $$"
        )
        conn.execute("CREATE TRIGGER shout BEFORE INSERT ON memories FOR EACH ROW EXECUTE FUNCTION shout()")
    r = cli(ws, "--to", pg_url)
    line = one_line_error(r)
    assert "verification failed" in line and "memories" in line
    assert "DIFFERENT" in r.stdout
    assert [x.split()[0] for x in r.stdout.splitlines() if "DIFFERENT" in x] == ["memories"]


def test_the_password_appears_nowhere(
    make_workspace: Callable[..., Workspace], pg_url: str, pg_cluster: pgcluster.Cluster
) -> None:
    if not pg_cluster.password:
        pytest.skip("this flavour trusts its socket: no password to leak")
    ws = _small(make_workspace)
    hostile = "pw-'; DROP TABLE memories; --" + "x" * 8
    bare = pg_url.replace(f":{pgcluster_quote(pg_cluster.password)}@", "@")
    assert bare != pg_url
    outs = [
        cli(ws, "--to", bare, "--password", "env:MIGRATE_PW", env={"MIGRATE_PW": hostile}),
        cli(ws, "--to", pg_url.replace(pgcluster_quote(pg_cluster.password), pgcluster_quote("wrong" + hostile))),
        cli(ws, "--to", bare, "--password", "env:MIGRATE_PW", "--dry-run", env={"MIGRATE_PW": hostile}),
    ]
    for r in outs:
        line = one_line_error(r)
        assert "PostgreSQL at" in line
        for secret in (hostile, "wrong" + hostile, pgcluster_quote(hostile), pg_cluster.password):
            assert secret not in r.stdout + r.stderr
    # A URL libpq cannot parse (an unencoded password): its parse error quotes the fault; not here.
    unparsable = one_line_error(cli(ws, "--to", pg_url.replace(pgcluster_quote(pg_cluster.password), hostile)))
    assert "cannot be parsed" in unparsable and "DROP" not in unparsable and "pw-" not in unparsable
    missing = one_line_error(cli(ws, "--to", bare, "--password", "secret:NOPE"))
    assert "NOPE" in missing and pg_cluster.password not in missing

    # The right password by reference works, and is not echoed either.
    ok = cli(ws, "--to", bare, "--password", "env:MIGRATE_PW", env={"MIGRATE_PW": pg_cluster.password})
    assert ok.returncode == 0, ok.stderr
    assert pg_cluster.password not in ok.stdout + ok.stderr


def pgcluster_quote(password: str) -> str:
    from urllib.parse import quote

    return quote(password, safe="")


def test_the_hash_tells_kinds_and_order_apart() -> None:
    def h(*rows: tuple[object, ...]) -> str:
        return table_digest(iter(rows))[1]

    assert len({h((1, 1)), h((1, "1")), h((1, 1.0)), h((1, b"1")), h((1, None))}) == 5
    assert h((1, "a"), (2, "b")) != h((2, "b"), (1, "a"))
    assert h((1, "ab", "c")) != h((1, "a", "bc"))  # length-prefixed: no ambiguity
    assert table_digest(iter([])) == (0, table_digest(iter([]))[1])
