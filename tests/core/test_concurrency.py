"""8 concurrent writers x 500 remembers plus concurrent recalls against the real daemon."""

from __future__ import annotations

import sqlite3
import threading
from concurrent.futures import ThreadPoolExecutor

import httpx

from tests.conftest import TEST_STORAGE, DaemonProcess

WRITERS = 8
PER_WRITER = 500


def test_concurrent_writers_and_readers_lose_nothing(daemon: DaemonProcess) -> None:
    errors: list[str] = []
    ids: list[str] = []
    lock = threading.Lock()
    stop = threading.Event()

    def writer(w: int) -> None:
        with httpx.Client(base_url=daemon.url, timeout=60) as c:
            for i in range(PER_WRITER):
                r = c.post(
                    "/api/memory/remember",
                    json={"content": f"writer {w} wrote fact number {i}", "project": f"p{w % 3}", "tags": [f"w{w}"]},
                )
                if r.status_code != 200:
                    errors.append(f"remember {w}/{i}: {r.status_code} {r.text[:200]}")
                    continue
                with lock:
                    ids.append(r.json()["id"])

    def reader() -> int:
        n = 0
        with httpx.Client(base_url=daemon.url, timeout=60) as c:
            while not stop.is_set():
                r = c.post("/api/memory/recall", json={"query": f"writer {n % WRITERS} fact", "limit": 5})
                if r.status_code != 200:
                    errors.append(f"recall: {r.status_code} {r.text[:200]}")
                n += 1
        return n

    with ThreadPoolExecutor(WRITERS + 2) as pool:
        readers = [pool.submit(reader) for _ in range(2)]
        writers = [pool.submit(writer, w) for w in range(WRITERS)]
        for f in writers:
            f.result()
        stop.set()
        recalls = sum(f.result() for f in readers)

    assert errors == []
    assert len(ids) == len(set(ids)) == WRITERS * PER_WRITER
    assert recalls > 0
    with daemon.client() as c:
        assert c.get("/api/memories", params={"limit": 1}).json()["total"] == WRITERS * PER_WRITER
        for w in range(WRITERS):
            got = c.get("/api/memories", params={"tag": f"w{w}", "limit": 1}).json()["total"]
            assert got == PER_WRITER
    if TEST_STORAGE != "sqlite":  # the rest reads the SQLite file itself (integrity check, FTS5)
        return
    conn = sqlite3.connect(daemon.workspace.database_path())
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert conn.execute("SELECT COUNT(*) FROM memory_history WHERE event = 'created'").fetchone()[0] == len(ids)
        fts = conn.execute("SELECT COUNT(*) FROM memories_fts WHERE memories_fts MATCH 'writer'").fetchone()[0]
        assert fts == len(ids)
    finally:
        conn.close()
