"""Storage stays bounded: purged memories give their space back, and status says how big the store is.

Real stores in temp dirs, written, forgotten and purged through the service and the retention
sweep the daemon runs; the file's size is read from the file system after a checkpoint.
"""

from __future__ import annotations

import random
import sqlite3 as stdlib_sqlite3
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from typer.testing import CliRunner

from signet.cli.main import app
from signet.models import ForgetRequest, RememberRequest
from signet.runtime import Runtime
from signet.store import space
from signet.store.database import connect
from signet.workspace import Workspace
from tests.conftest import start_runtime, write_config

WORDS = [
    "deploy",
    "billing",
    "service",
    "thursday",
    "load",
    "test",
    "caroline",
    "melanie",
    "painted",
    "sunrise",
    "lake",
    "weekend",
    "road",
    "trip",
    "woodhaven",
    "midwest",
    "postgres",
    "database",
    "migration",
    "rollback",
    "schema",
    "index",
    "vacuum",
    "retention",
    "purge",
    "memory",
    "recall",
    "keyword",
    "vector",
    "embedding",
    "session",
    "harness",
    "transcript",
    "pipeline",
    "extraction",
    "summary",
]


def _turns(n: int, seed: int = 7) -> list[str]:
    """Conversation-turn-sized texts (~300-600 characters), all distinct."""
    rng = random.Random(seed)
    return [f"turn {i}: " + " ".join(rng.choice(WORDS) for _ in range(rng.randint(45, 90))) for i in range(n)]


def _file_size(rt: Runtime) -> int:
    """The main file's size once the WAL is checkpointed into it (the daemon's own automatic
    checkpoints do the same every 1,000 pages of WAL)."""
    conn = connect(rt.db_path)
    try:
        busy, _, _ = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        assert busy == 0
    finally:
        conn.close()
    return rt.db_path.stat().st_size


def _forget_all(rt: Runtime, ids: list[str]) -> None:
    for i in range(0, len(ids), 1000):
        chunk = ids[i : i + 1000]
        preview = rt.service.forget(ForgetRequest(ids=chunk, limit=1000))
        rt.service.forget(
            ForgetRequest(
                ids=chunk, limit=1000, mode="execute", reason="test purge", confirm_token=preview.confirm_token
            )
        )


@pytest.mark.sqlite_only("the SQLite file's pages (PostgreSQL gives space back by VACUUM)")
def test_writing_forgetting_and_purging_20k_memories_shrinks_the_file(
    make_workspace: Callable[..., Workspace],
) -> None:
    ws = make_workspace(embedding="none")
    write_config(ws, retention={"tombstone_days": 0, "history_days": 0, "batch_limit": 5000})
    rt = start_runtime(ws)
    try:
        assert rt.db.read(space.mode) == "incremental"  # a new store
        empty = _file_size(rt)
        texts = _turns(20_000)
        ids: list[str] = []
        for i in range(0, len(texts), 1000):
            done = rt.service.remember_batch([RememberRequest(content=t) for t in texts[i : i + 1000]])
            ids.extend(r.id for r in done if r.id is not None)
        assert len(ids) == 20_000
        full = _file_size(rt)
        status = rt.service.status(str(ws.root), str(rt.db_path)).storage
        assert status is not None and status.text_bytes >= sum(len(t) for t in texts)
        assert status.auto_vacuum == "incremental" and status.amplification is not None

        _forget_all(rt, ids)
        later = datetime.now(UTC) + timedelta(days=1)
        reclaimed = 0
        for _ in range(10):  # each sweep takes at most batch_limit rows per step
            report = rt.retention.sweep(now=later)
            reclaimed += report.pages_reclaimed
            if not any(v for k, v in report.as_dict().items() if k != "pages_reclaimed"):
                break
        assert rt.db.read(lambda c: c.execute("SELECT COUNT(*) FROM memories").fetchone()[0]) == 0
        # Every page the purge freed goes back, over as many sweeps as it takes.
        while rt.db.write(lambda conn: space.reclaim(conn)):
            pass
        after = _file_size(rt)
    finally:
        rt.stop()
    assert reclaimed > 0
    assert full > 10 * empty
    assert after < full / 4, (empty, full, after)


def test_status_reports_the_database_size_and_its_amplification(make_workspace: Callable[..., Workspace]) -> None:
    ws = make_workspace(embedding="none")
    rt = start_runtime(ws)
    try:
        rt.service.remember(RememberRequest(content="The billing service deploys on Thursdays"))
        st = rt.service.status(str(ws.root), str(rt.db_path)).storage
    finally:
        rt.stop()
    assert st is not None
    assert st.file_bytes > 0 and st.text_bytes == len("The billing service deploys on Thursdays")
    assert st.vector_bytes == 0 and st.amplification == round(st.file_bytes / st.text_bytes, 2)


def _legacy_store(path: Path, rows: int) -> None:
    """A store as the versions before incremental auto-vacuum made it: auto_vacuum NONE."""
    conn = stdlib_sqlite3.connect(path)
    conn.execute("PRAGMA auto_vacuum = NONE")
    conn.execute("CREATE TABLE filler (x TEXT)")
    conn.executemany("INSERT INTO filler VALUES (?)", [("x" * 2000,) for _ in range(rows)])
    conn.commit()
    conn.close()


def test_repair_vacuum_converts_an_old_store_and_gives_space_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "ws"
    monkeypatch.setenv("SIGNET_WORKSPACE", str(root))
    ws = Workspace(root)
    path = ws.database_path()
    path.parent.mkdir(parents=True)
    _legacy_store(path, 5000)
    conn = connect(path)  # migrates nothing here; only to delete through a Signet connection
    try:
        assert space.mode(conn) == "none"
        conn.execute("DELETE FROM filler")
        assert space.reclaim(conn) == 0  # NONE: freed pages stay in the file for reuse
    finally:
        conn.close()
    before = path.stat().st_size
    res = CliRunner().invoke(app, ["repair", "--vacuum"])
    assert res.exit_code == 0, res.output
    assert "auto-vacuum incremental" in res.output
    assert path.stat().st_size < before / 10
    conn = connect(path)
    try:
        assert space.mode(conn) == "incremental"
    finally:
        conn.close()


def test_repair_vacuum_without_a_database_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SIGNET_WORKSPACE", str(tmp_path / "nothing"))
    res = CliRunner().invoke(app, ["repair", "--vacuum"])
    assert res.exit_code != 0 and "nothing to compact" in res.output
