"""Migration 17 (``secret_exec_runs``) on a blank database and on one that already has the
later migrations (a store migrated by a release that did not have secrets)."""

from __future__ import annotations

from pathlib import Path

from signet.secrets import runs
from signet.secrets.models import ExecRun
from signet.store.database import connect
from signet.store.migrations import MIGRATIONS, migrate


def test_migration_17_applies_after_later_ones(tmp_path: Path) -> None:
    conn = connect(tmp_path / "m.db")
    assert 17 not in migrate(conn, [m for m in MIGRATIONS if m.version != 17])
    assert conn.execute("SELECT name FROM sqlite_master WHERE name = 'secret_exec_runs'").fetchone() is None
    assert migrate(conn) == [17]
    assert migrate(conn) == []
    run = ExecRun(
        id="r1",
        status="done",
        command=["gh", "api", "user"],
        secrets=["GH_TOKEN"],
        actor="tester",
        origin="cli",
        created_at="2026-01-01T00:00:00+00:00",
        started_at=None,
        finished_at=None,
        exit_code=0,
        stdout="[REDACTED:GH_TOKEN]\n",
        stderr="",
        truncated=False,
        redactions=1,
        error=None,
    )
    runs.insert(conn, run)
    assert runs.get(conn, "r1") == run
    runs.update(conn, "r1", status="timeout", truncated=True)
    got = runs.get(conn, "r1")
    assert got is not None and got.status == "timeout" and got.truncated is True
    assert runs.get(conn, "missing") is None
