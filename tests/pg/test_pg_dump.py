"""The backup recipe of docs/team.md ("Backups"), run as written: ``pg_dump --format=custom``
of a live store, ``pg_restore`` into an empty database, and a daemon on the copy finds every
row, recalls by keyword and writes on (sequences, triggers and functions came along)."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg

from signet.models import RecallRequest, RememberRequest
from signet.store.pg_url import resolve
from signet.store.postgres import PostgresDatabase
from signet.workspace import Workspace
from tests import pgcluster
from tests.conftest import start_runtime


def _store(url: str) -> PostgresDatabase:
    return PostgresDatabase(resolve(url, "env:SIGNET_TEST_NO_SUCH_VAR"))


def _everything(url: str) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every table, by table, sorted (as text: rows mix types and NULLs)."""
    with psycopg.connect(url) as conn:
        tables = [
            r[0]
            for r in conn.execute(
                "SELECT table_name FROM information_schema.tables"
                " WHERE table_schema = 'public' AND table_type = 'BASE TABLE' ORDER BY table_name"
            )
        ]
        return {t: sorted((tuple(r) for r in conn.execute(f'SELECT * FROM "{t}"')), key=repr) for t in tables}


def test_pg_dump_and_pg_restore_give_a_working_copy(
    pg_cluster: pgcluster.Cluster, make_workspace: Callable[..., Workspace], tmp_path: Path
) -> None:
    source = pg_cluster.new_database()
    rt = start_runtime(make_workspace(embedding="none"), storage=_store(source))
    try:
        for text in ("the walrus sleeps on the ice", "a zebra crossing on Elm Street", "forget this okapi"):
            rt.service.remember(RememberRequest(content=text))
        gone = rt.service.recall(RecallRequest(query="okapi", limit=1, track_access=False)).results[0].id
        rt.service.delete(gone, reason="test")  # a forgotten memory: kept as a tombstone
        # The recipe runs against a live store: pg_dump reads one consistent snapshot.
        dump = tmp_path / "signet.dump"
        subprocess.run(
            [str(pg_cluster.bin / "pg_dump"), "--format=custom", "--no-owner", "--file", str(dump), source],
            check=True,
            capture_output=True,
            timeout=120,
        )
    finally:
        rt.stop()
    copy = pg_cluster.new_database()
    subprocess.run(
        [str(pg_cluster.bin / "pg_restore"), "--no-owner", "--exit-on-error", "--dbname", copy, str(dump)],
        check=True,
        capture_output=True,
        timeout=120,
    )
    before, after = _everything(source), _everything(copy)
    # The telemetry log goes on after the dump (the runtime's stop event): the copy has a prefix.
    assert set(after.pop("telemetry_events")) <= set(before.pop("telemetry_events"))
    assert after == before
    assert len(before["memories"]) == 3

    rt = start_runtime(make_workspace(embedding="none"), storage=_store(copy))
    try:
        hits = rt.service.recall(RecallRequest(query="zebra crossing", limit=3, track_access=False)).results
        assert [h.content for h in hits][:1] == ["a zebra crossing on Elm Street"]
        assert rt.service.recall(RecallRequest(query="okapi", limit=3, track_access=False)).results == []
        new = rt.service.remember(RememberRequest(content="a narwhal after the restore"))  # sequences restored
        assert rt.service.recall(RecallRequest(query="narwhal", limit=1, track_access=False)).results[0].id == new.id
    finally:
        rt.stop()
    with psycopg.connect(copy) as conn:
        versions = [r[0] for r in conn.execute("SELECT version FROM schema_migrations ORDER BY version")]
    assert versions == sorted(r[0] for r in before["schema_migrations"])  # nothing re-applied
