"""Kill the daemon (SIGKILL) in the middle of heavy writes: nothing acknowledged is lost,
and the database is consistent (integrity, FTS, history) after a restart."""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Callable

import httpx

from signet.workspace import Workspace
from tests.conftest import DaemonProcess, StoreConnection, write_config


def test_sigkill_mid_writes_loses_nothing_acknowledged(
    make_workspace: Callable[..., Workspace], start_daemon: Callable[..., DaemonProcess]
) -> None:
    ws = make_workspace(embedding="none")
    write_config(ws, embedding={"provider": "none"})
    d = start_daemon(ws)
    acked: list[str] = []
    lock = threading.Lock()
    stop = threading.Event()

    def writer(w: int) -> None:
        with httpx.Client(base_url=d.url, timeout=5) as c:
            i = 0
            while not stop.is_set():
                try:
                    if i % 5 == 4:
                        r = c.post(
                            "/api/memory/remember/batch",
                            json={"items": [{"content": f"batch {w}-{i}-{k}"} for k in range(20)]},
                        )
                    else:
                        r = c.post("/api/memory/remember", json={"content": f"writer {w} item {i}"})
                except httpx.HTTPError:
                    return
                if r.status_code == 200:
                    body = r.json()
                    with lock:
                        acked.extend(x["id"] for x in body["results"]) if "results" in body else acked.append(
                            body["id"]
                        )
                i += 1

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(4)]
    for t in threads:
        t.start()
    time.sleep(3)
    d.proc.send_signal(signal.SIGKILL)
    d.proc.wait()
    stop.set()
    for t in threads:
        t.join()
    assert len(acked) > 100

    d2 = start_daemon(ws)
    with d2.client() as c:
        total = c.get("/api/memories", params={"limit": 1}).json()["total"]
    d2.stop()
    sqlite = ws.settings().storage.backend == "sqlite"
    conn = StoreConnection(ws)
    try:
        if sqlite:
            assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        ids = {r[0] for r in conn.execute("SELECT id FROM memories").fetchall()}
        assert set(acked) <= ids, f"{len(set(acked) - ids)} acknowledged memories lost"
        assert total == len(ids)
        created = {
            r[0] for r in conn.execute("SELECT memory_id FROM memory_history WHERE event = 'created'").fetchall()
        }
        assert created == ids  # every memory has its history event, and no event lacks its memory
        if sqlite:
            conn.execute("INSERT INTO memories_fts(memories_fts) VALUES ('integrity-check')")
        batches = conn.execute("SELECT COUNT(*) FROM memories WHERE content LIKE 'batch %'").fetchone()[0]
        assert batches % 20 == 0  # batch remembers are all-or-nothing
    finally:
        conn.close()
