"""Damaged and emptied database files, with real files, a real daemon and the real CLI: a
corrupted page is reported (health, status, diagnostics) with the recovery command, and
`signet repair --recover` gets back every row that still reads; a database truncated to 0
bytes is not taken for a new store; a file with a broken header refuses to start in one line."""

from __future__ import annotations

import os
import struct
import subprocess
import sys
from pathlib import Path

import httpx

from signet.store.sqlite import sqlite3
from tests.conftest import free_port

N = 400


def _env(ws: Path, port: int) -> dict[str, str]:
    return {**os.environ, "SIGNET_WORKSPACE": str(ws), "SIGNET_PORT": str(port), "SIGNET_HOST": "127.0.0.1"}


def signet(ws: Path, port: int, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "signet.cli.entry", *args],
        capture_output=True,
        text=True,
        env=_env(ws, port),
        timeout=300,
    )


def seeded(tmp_path: Path) -> tuple[Path, int, Path]:
    ws, port = tmp_path / "ws", free_port()
    assert signet(ws, port, "setup", "-y", "--embedding", "none", "--llm", "none").returncode == 0
    assert signet(ws, port, "start").returncode == 0
    with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30) as c:
        for i in range(N):
            r = c.post("/api/memory/remember", json={"content": f"memory {i}: " + "lorem ipsum dolor " * 12})
            assert r.status_code == 200
    assert signet(ws, port, "stop").returncode == 0
    db = ws / "memory" / "memories.db"
    conn = sqlite3.connect(str(db))
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # every page in the main file
    conn.close()
    return ws, port, db


def a_leaf_of_memories(db: Path) -> int:
    """The page number of one leaf of the memories table (walking its b-tree from the root)."""
    conn = sqlite3.connect(str(db))
    root = int(conn.execute("SELECT rootpage FROM sqlite_master WHERE name = 'memories'").fetchone()[0])
    size = int(conn.execute("PRAGMA page_size").fetchone()[0])
    conn.close()
    data = db.read_bytes()
    page = root
    while True:
        off = (page - 1) * size + (100 if page == 1 else 0)
        kind = data[off]
        if kind == 0x0D:  # a table leaf
            return page
        assert kind == 0x05, kind  # a table interior page: follow its first child
        first_cell = struct.unpack(">H", data[off + 12 : off + 14])[0]
        page = struct.unpack(">I", data[(page - 1) * size + first_cell : (page - 1) * size + first_cell + 4])[0]


def test_a_corrupted_page_is_reported_and_recovered(tmp_path: Path) -> None:
    ws, port, db = seeded(tmp_path)
    leaf = a_leaf_of_memories(db)
    size = 4096
    with db.open("r+b") as fh:  # scribble over the leaf's cells (keep the rest of the file)
        fh.seek((leaf - 1) * size + 8)
        fh.write(os.urandom(size - 8))
    assert signet(ws, port, "start").returncode == 0
    url = f"http://127.0.0.1:{port}"
    try:
        with httpx.Client(base_url=url, timeout=30) as c:
            health = c.get("/health").json()
            assert health["status"] == "degraded" and any("signet repair --recover" in r for r in health["reasons"])
            status = c.get("/api/status")  # it counts memories: a read that may hit the damaged page
            assert (status.status_code == 200 and any("damaged" in w for w in status.json()["warnings"])) or (
                status.status_code == 503 and "repair --recover" in status.json()["error"]
            ), status.text
            storage = c.get("/api/diagnostics/storage")
            assert storage.status_code == 200, storage.text
            assert storage.json()["status"] != "healthy"
            assert any("repair --recover" in f or "quick_check" in f for f in storage.json()["findings"])
        r = signet(ws, port, "repair", "--recover")
        assert r.returncode != 0 and "stop it first" in r.stderr  # never while the daemon has the file open
    finally:
        assert signet(ws, port, "stop").returncode == 0
    r = signet(ws, port, "repair", "--recover")
    assert r.returncode == 0, r.stderr
    recovered = int(r.stdout.split("recovered ")[1].split(" ")[0])
    assert N // 2 < recovered < N, r.stdout  # all but the rows of the scribbled page
    assert list(db.parent.glob("memories.db.corrupt-*")), "the damaged file is kept"
    assert signet(ws, port, "start").returncode == 0
    try:
        with httpx.Client(base_url=url, timeout=30) as c:
            assert c.get("/health").json() == {"status": "ok"}
            assert c.get("/api/memories").json()["total"] == recovered
            assert c.post("/api/memory/recall", json={"query": "lorem ipsum", "alpha": 0}).json()["results"]
            assert c.post("/api/memory/remember", json={"content": "written after the repair"}).status_code == 200
    finally:
        signet(ws, port, "stop")


def test_an_emptied_database_is_not_a_new_store(tmp_path: Path) -> None:
    ws, port, db = seeded(tmp_path)
    for side in ("-wal", "-shm"):
        db.with_name(db.name + side).unlink(missing_ok=True)
    db.write_bytes(b"")  # truncated to 0 bytes
    for args in (("daemon",), ("start",)):
        r = signet(ws, port, *args)
        assert r.returncode != 0 and len(r.stderr.strip().splitlines()) == 1, (args, r.stderr)
        assert f"held {N} memories" in r.stderr and "--accept-empty-database" in r.stderr, r.stderr
    assert db.stat().st_size == 0  # untouched: nothing was created over it
    assert signet(ws, port, "start", "--accept-empty-database").returncode == 0
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30) as c:
            assert c.get("/api/memories").json()["total"] == 0
    finally:
        signet(ws, port, "stop")
    assert signet(ws, port, "start").returncode == 0  # the empty store is now the known state
    signet(ws, port, "stop")


def test_a_broken_header_refuses_to_start_in_one_line(tmp_path: Path) -> None:
    ws, port, db = seeded(tmp_path)
    with db.open("r+b") as fh:
        fh.write(b"this is not sqlite")
    r = signet(ws, port, "daemon")
    assert r.returncode != 0 and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert "damaged or unreadable" in r.stderr and "restore a backup" in r.stderr


def test_repair_says_what_it_needs_in_one_line(tmp_path: Path) -> None:
    ws, port = tmp_path / "ws", free_port()
    r = signet(ws, port, "repair")
    assert r.returncode != 0 and r.stderr.strip().splitlines() == [
        "error: say what to repair: `signet repair --recover` rebuilds a damaged database from what it still holds; "
        "`signet repair --vacuum` compacts it"
    ]
    assert signet(ws, port, "setup", "-y", "--embedding", "none", "--llm", "none").returncode == 0
    r = signet(ws, port, "repair", "--recover")  # no database yet
    assert r.returncode != 0 and len(r.stderr.strip().splitlines()) == 1 and "no database to recover" in r.stderr
