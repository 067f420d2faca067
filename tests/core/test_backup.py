"""Backups: before a migration, on demand, rotated, never on a nearly full disk; restore only
with the daemon stopped. Real SQLite files in tmp dirs, the real daemon and the real CLI."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from signet.config import BackupSettings
from signet.daemon.app import create_app
from signet.errors import StorageFull
from signet.store.backup import backup_dir, create_backup, list_backups
from signet.store.database import Database, connect
from signet.store.migrations import MIGRATIONS, migrate
from signet.store.sqlite import sqlite3
from signet.workspace import Workspace
from tests.conftest import DaemonProcess, start_runtime, write_config

ORDERED = sorted(MIGRATIONS, key=lambda m: m.version)
LATEST = ORDERED[-1].version
PREVIOUS = ORDERED[-2].version
"""The version before the latest (not LATEST - 1: 31 and 32 are PostgreSQL's own numbers)."""


def signet(ws: Workspace, *args: str, port: int | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "SIGNET_WORKSPACE": str(ws.root), "SIGNET_HOST": "127.0.0.1"}
    if port is not None:
        env["SIGNET_PORT"] = str(port)
    return subprocess.run(
        [sys.executable, "-m", "signet.cli.entry", *args], capture_output=True, text=True, env=env, timeout=120
    )


def one_line_error(r: subprocess.CompletedProcess[str]) -> str:
    assert r.returncode == 1, (r.stdout, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    return lines[0]


def older_database(path: Path, content: str = "we deploy on thursdays") -> None:
    """A store at the schema before the newest migration, holding one memory."""
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = connect(path)
    try:
        migrate(conn, ORDERED[:-1])
        conn.execute(
            "INSERT INTO memories(id, content, content_hash, normalized_content, created_at, updated_at)"
            " VALUES ('m-old', ?, 'h-old', '', '2024-01-01T00:00:00+00:00', '2024-01-01T00:00:00+00:00')",
            (content,),
        )
    finally:
        conn.close()


def schema_version(path: Path) -> int:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return int(conn.execute("SELECT MAX(version) FROM schema_migrations").fetchone()[0])
    finally:
        conn.close()


def memory_contents(path: Path) -> list[str]:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return [str(r[0]) for r in conn.execute("SELECT content FROM memories ORDER BY seq")]
    finally:
        conn.close()


# -- before a migration ----------------------------------------------------------------------


def test_a_migration_on_a_copy_of_a_database_leaves_a_backup_of_it(tmp_path: Path) -> None:
    original = tmp_path / "original" / "memories.db"
    older_database(original)
    copy = tmp_path / "copy" / "memories.db"
    copy.parent.mkdir()
    copy.write_bytes(original.read_bytes())

    with Database(copy, backups=BackupSettings(min_free_mb=0)) as db:
        assert db.read(lambda c: c.execute("SELECT MAX(version) FROM schema_migrations").fetchone()[0]) == LATEST

    backups = list_backups(backup_dir(copy))
    assert [b.reason for b in backups] == [f"pre-migration-{LATEST}"]
    # The backup is the database as it was before the migration: older schema, same memory.
    assert schema_version(backups[0].path) == PREVIOUS
    assert memory_contents(backups[0].path) == ["we deploy on thursdays"]
    assert not Path(str(backups[0].path) + "-wal").exists()  # one self-contained file
    assert list_backups(backup_dir(original)) == []  # the original was not touched

    # Opening it again migrates nothing, so backs up nothing; a new store is not backed up either.
    with Database(copy, backups=BackupSettings(min_free_mb=0)):
        pass
    fresh = tmp_path / "fresh" / "memories.db"
    with Database(fresh, backups=BackupSettings(min_free_mb=0)):
        pass
    assert len(list_backups(backup_dir(copy))) == 1
    assert list_backups(backup_dir(fresh)) == []


@pytest.mark.sqlite_only("backups of the SQLite file (PostgreSQL's are pg_dump: tests/pg/test_pg_dump.py)")
@pytest.mark.slow
def test_the_daemon_backs_up_before_it_migrates(
    make_workspace: Callable[..., Workspace], start_daemon: Callable[..., DaemonProcess]
) -> None:
    ws = make_workspace(embedding="none", backup={"min_free_mb": 0, "keep": 2})
    older_database(ws.database_path())
    d = start_daemon(ws)
    with d.client() as c:
        listed = c.get("/api/backup").json()
        mems = c.get("/api/memories").json()
    assert [b["reason"] for b in listed["backups"]] == [f"pre-migration-{LATEST}"]
    assert listed["keep"] == 2 and listed["directory"] == str(ws.memory_dir / "backups")
    assert [m["content"] for m in mems["items"]] == ["we deploy on thursdays"]
    d.stop()
    assert schema_version(Path(listed["backups"][0]["path"])) == PREVIOUS


def test_a_migration_goes_ahead_without_a_backup_on_a_full_disk(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "memories.db"
    older_database(path)
    with (
        caplog.at_level(logging.WARNING, logger="signet.store.database"),
        Database(path, backups=BackupSettings(min_free_mb=100_000_000)) as db,
    ):
        assert db.read(lambda c: c.execute("SELECT MAX(version) FROM schema_migrations").fetchone()[0]) == LATEST
    assert list_backups(backup_dir(path)) == []
    assert any("without a backup" in r.getMessage() and "MB free" in r.getMessage() for r in caplog.records)


# -- rotation and the floor ------------------------------------------------------------------


def test_with_backups_at_the_limit_the_oldest_is_removed_first(tmp_path: Path) -> None:
    path = tmp_path / "memories.db"
    with Database(path):
        pass
    directory = backup_dir(path)
    directory.mkdir()
    (directory / "notes.txt").write_text("mine")  # not a backup: never rotated
    (directory / "signet-copy.db").write_bytes(b"x")  # not named as Signet names backups: kept
    start = datetime(2025, 1, 1, tzinfo=UTC)
    conn = connect(path, readonly=True)
    made, removed = [], []
    try:
        for i in range(5):
            done = create_backup(conn, path, reason=f"n{i}", keep=3, min_free_mb=0, now=start + timedelta(hours=i))
            made.append(done.backup.name)
            removed.extend(done.removed)
    finally:
        conn.close()
    assert removed == made[:2]  # the oldest first, one per backup over the limit
    assert [b.name for b in list_backups(directory)] == made[2:]
    assert (directory / "notes.txt").read_text() == "mine" and (directory / "signet-copy.db").exists()


@pytest.mark.sqlite_only("backups of the SQLite file (PostgreSQL's are pg_dump: tests/pg/test_pg_dump.py)")
def test_no_backup_below_the_free_disk_floor(make_workspace: Callable[..., Workspace]) -> None:
    ws = make_workspace(embedding="none", backup={"min_free_mb": 0})
    start_runtime(ws).stop()
    ok = signet(ws, "backup", "--reason", "first")
    assert ok.returncode == 0, ok.stderr
    before = list_backups(backup_dir(ws.database_path()))
    assert len(before) == 1

    write_config(ws, backup={"min_free_mb": 100_000_000})  # 100 TB: no disk here has that free
    line = one_line_error(signet(ws, "backup"))
    assert "no backup written" in line and "MB free" in line and "backup.min_free_mb" in line, line
    assert list_backups(backup_dir(ws.database_path())) == before  # nothing written, nothing rotated

    with pytest.raises(StorageFull) as err:
        conn = connect(ws.database_path(), readonly=True)
        try:
            create_backup(conn, ws.database_path(), reason="x", keep=1, min_free_mb=100_000_000)
        finally:
            conn.close()
    assert err.value.code == "backup_refused" and err.value.status == 507


@pytest.mark.sqlite_only("backups of the SQLite file (PostgreSQL's are pg_dump: tests/pg/test_pg_dump.py)")
def test_post_backup_takes_one_and_rotates_to_the_setting(make_workspace: Callable[..., Workspace]) -> None:
    ws = make_workspace(embedding="none", backup={"keep": 2, "min_free_mb": 0})
    rt = start_runtime(ws)
    try:
        with TestClient(create_app(rt, manage_runtime=False)) as c:
            names = []
            for i in range(3):
                r = c.post("/api/backup", json={"reason": f"dashboard {i}"})
                assert r.status_code == 200, r.text
                names.append(r.json()["backup"]["name"])
                assert r.json()["backup"]["reason"] == f"dashboard-{i}"
            assert r.json()["removed"] == names[:1]
            listed = c.get("/api/backup").json()
            assert [b["name"] for b in listed["backups"]] == names[1:]
            bad = c.post("/api/backup", json={"reason": "../../etc"})
            assert bad.status_code == 422 and bad.json()["code"] == "invalid_request"
    finally:
        rt.stop()


# -- restore ---------------------------------------------------------------------------------


@pytest.mark.sqlite_only("backups of the SQLite file (PostgreSQL's are pg_dump: tests/pg/test_pg_dump.py)")
@pytest.mark.slow
def test_restore_refuses_while_the_daemon_runs_and_works_once_it_is_stopped(
    make_workspace: Callable[..., Workspace], start_daemon: Callable[..., DaemonProcess]
) -> None:
    ws = make_workspace(embedding="none", backup={"min_free_mb": 0})
    d = start_daemon(ws)
    with d.client() as c:
        assert c.post("/api/memory/remember", json={"content": "kept: the backup has this one"}).status_code == 200
        made = signet(ws, "backup", "--reason", "before the change", "--json", port=d.port)  # online
        assert made.returncode == 0, made.stderr
        assert c.post("/api/memory/remember", json={"content": "lost: written after the backup"}).status_code == 200
    name = json.loads(made.stdout)["backup"]["name"]

    line = one_line_error(signet(ws, "backup", "restore", name, port=d.port))
    assert "the daemon is running" in line and "signet stop" in line, line
    listed = signet(ws, "backup", "list")
    assert listed.returncode == 0 and name in listed.stdout

    d.stop()
    restored = signet(ws, "backup", "restore", name)
    assert restored.returncode == 0, restored.stderr
    assert "restored" in restored.stdout and "pre-restore" in restored.stdout
    previous = [p for p in ws.memory_dir.iterdir() if ".pre-restore-" in p.name and not p.name.endswith(("wal", "shm"))]
    assert len(previous) == 1
    assert "lost: written after the backup" in memory_contents(previous[0])  # the replaced store is kept

    d2 = start_daemon(ws)
    with d2.client() as c:
        contents = [m["content"] for m in c.get("/api/memories").json()["items"]]
    assert contents == ["kept: the backup has this one"]

    missing = one_line_error(signet(ws, "backup", "restore", "no-such-backup", port=d2.port))
    assert "no backup named" in missing and "signet backup list" in missing
