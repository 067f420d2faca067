"""SIGKILL the daemon while jobs are leased: after a restart every job completes (or is dead
with its error), no fact is written twice, and the database passes integrity_check. The
restarted daemon also serves the ``signet pipeline`` CLI. A kill at the exact moment a job
completes (its graph written, its completion not committed) leaves the graph as one run does."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from signet.store.choose import build_store
from signet.workspace import Workspace
from tests.conftest import DaemonProcess, free_port
from tests.pipeline.conftest import pipeline_config, wait_idle
from tests.pipeline.fake_llm import FakeLLM, Reply, as_json

SHARED_FACT = "The billing team reviews every deploy on Monday mornings"


def facts_for(text: str) -> list[dict[str, Any]]:
    n = text.rsplit(" ", 1)[-1]
    return [
        {"content": f"Service number {n} is owned by the billing team", "type": "fact", "confidence": 0.9},
        {"content": SHARED_FACT, "type": "procedural", "confidence": 0.9},
    ]


def wait_for(cond: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def cli(d: DaemonProcess, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "signet.cli.entry", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "SIGNET_WORKSPACE": str(d.workspace.root), "SIGNET_PORT": str(d.port)},
        check=False,
    )


def test_sigkill_with_leased_jobs(
    make_workspace: Callable[..., Workspace], start_daemon: Callable[..., DaemonProcess], fake_llm: FakeLLM
) -> None:
    slow = threading.Event()
    slow.set()
    fake_llm.extract = lambda text: Reply(
        text=as_json({"facts": facts_for(text), "entities": []}), delay=0.6 if slow.is_set() else 0.0
    )
    fake_llm.decide = lambda fact, cands: as_json(
        {"action": "add", "targetId": None, "confidence": 0.9, "reason": "new"}
    )
    ws = make_workspace(embedding="none", memory=pipeline_config(fake_llm, workers=2))
    d = start_daemon(ws)
    n = 8
    with d.client() as c:
        for i in range(n):
            r = c.post("/api/memory/remember", json={"content": f"Billing service inventory item {i}"})
            assert r.status_code == 200

        def leased() -> bool:
            st = c.get("/api/pipeline/status").json()
            return bool(st["queue"]["by_status"]["leased"] >= 1 and fake_llm.calls("extract") >= 3)

        wait_for(leased, 20, "leased jobs")
    d.proc.send_signal(signal.SIGKILL)
    d.proc.wait()

    slow.clear()
    d2 = start_daemon(ws)
    with d2.client() as c:

        def settled() -> bool:
            q = c.get("/api/pipeline/status").json()["queue"]["by_status"]
            return bool(q["pending"] == 0 and q["leased"] == 0)

        wait_for(settled, 30, "the queue to drain after restart")
        jobs = c.get("/api/pipeline/jobs", params={"limit": 100}).json()["items"]
        status = c.get("/api/pipeline/status").json()

    assert len(jobs) == n
    assert all(j["status"] == "completed" or (j["status"] == "dead" and j["error"]) for j in jobs), jobs
    assert sum(j["status"] == "completed" for j in jobs) == n
    assert any(j["attempts"] >= 2 for j in jobs), "no job was interrupted by the kill"
    assert status["state"] == "running"

    # The CLI against the restarted daemon.
    out = cli(d2, "pipeline", "status")
    assert out.returncode == 0 and "pipeline: running (controlled mode)" in out.stdout, out.stderr
    out = cli(d2, "pipeline", "jobs", "--status", "completed", "--limit", "3")
    assert out.returncode == 0 and out.stdout.count("completed") == 3 and f"3 of {n} jobs" in out.stdout
    out = cli(d2, "pipeline", "requeue")
    assert out.returncode == 0 and "requeued 0 dead job(s)" in out.stdout
    out = cli(d2, "pipeline", "jobs", "--status", "bogus")
    assert out.returncode == 1 and out.stderr.startswith("error:")
    d2.stop()
    out = cli(d2, "pipeline", "status")
    assert out.returncode == 1 and "not running" in out.stderr

    def check(conn: Any) -> None:
        if getattr(conn, "dialect", "sqlite") == "sqlite":
            assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
            fts = conn.execute("SELECT COUNT(*) FROM memories_fts_docsize").fetchone()[0]
            assert fts == conn.execute("SELECT COUNT(*) FROM memories").fetchone()[0]
        derived = [r[0] for r in conn.execute("SELECT content FROM memories WHERE source_type = 'pipeline'")]
        expected = {f["content"] for i in range(n) for f in facts_for(f"item {i}")}
        assert sorted(derived) == sorted(expected)  # each fact exactly once, none lost
        created = conn.execute(
            "SELECT COUNT(*) FROM memory_history WHERE event = 'created' AND changed_by = 'pipeline-v2'"
        ).fetchone()[0]
        assert created == len(expected)
        dedups = [
            json.loads(r[0])
            for r in conn.execute(
                "SELECT metadata FROM memory_history WHERE event = 'none' AND metadata LIKE '%dedupedExistingId%'"
            )
        ]
        assert len(dedups) >= n - 1  # the shared fact: written once, deduplicated for every other job

    # Through the workspace's own store (its SQLite file, or its PostgreSQL database).
    with build_store(ws, ws.settings()) as db:
        db.read(check)


# -- the crash window between a job's graph writes and its completion ------------------------

GRAPH_SOURCE = (
    "Alice Moreau leads the billing team at Acme. For new services she prefers PostgreSQL, "
    "and the billing team ships on Thursdays."
)
GRAPH_FACTS = [
    {"content": "Alice Moreau leads the billing team at Acme", "type": "fact", "confidence": 0.95},
    {"content": "Alice Moreau prefers PostgreSQL for new services", "type": "preference", "confidence": 0.9},
]
GRAPH_TRIPLES = [
    {"source": "Alice Moreau", "relationship": "leads", "target": "billing team", "confidence": 0.9},
    {"source": "Alice Moreau", "relationship": "prefers", "target": "PostgreSQL", "confidence": 0.8},
    {"source": "billing team", "relationship": "part of", "target": "Acme", "confidence": 0.7},
]

# The daemon, except that the first job completion SIGKILLs the process: the job's facts and
# graph writes have run, its completion has not been committed. That is exactly the window in
# which a worker dies after the graph step and the job is later run again.
KILL_AT_COMPLETE = """
import os, runpy, signal
from signet.pipeline import queue
def complete(*args, **kwargs):
    os.kill(os.getpid(), signal.SIGKILL)
queue.complete = complete
runpy.run_module("signet.cli.main", run_name="__main__")
"""


def graph_snapshot(conn: Any) -> dict[str, Any]:
    """The graph as content (ids differ between workspaces): mentions, relations, links, facts."""
    return {
        "entities": dict(conn.execute("SELECT canonical_name, mentions FROM entities").fetchall()),
        "relations": sorted(
            tuple(r)
            for r in conn.execute(
                "SELECT s.canonical_name, r.relation_type, t.canonical_name, r.mentions FROM relations r"
                " JOIN entities s ON s.id = r.source_entity_id JOIN entities t ON t.id = r.target_entity_id"
            )
        ),
        "links": sorted(
            tuple(r)
            for r in conn.execute(
                "SELECT m.content, e.canonical_name FROM memory_entity_mentions l JOIN memories m ON m.id = l.memory_id"
                " JOIN entities e ON e.id = l.entity_id"
            )
        ),
        "facts": sorted(r[0] for r in conn.execute("SELECT content FROM memories WHERE source_type = 'pipeline'")),
    }


@pytest.mark.sqlite_only("reads the workspace's SQLite file between the kill and the restart")
def test_a_job_killed_between_graph_and_completion_counts_its_graph_once(
    make_workspace: Callable[..., Workspace],
    start_daemon: Callable[..., DaemonProcess],
    pipeline_rt: Callable[..., Any],
    fake_llm: FakeLLM,
) -> None:
    fake_llm.extract = lambda text: as_json({"facts": GRAPH_FACTS, "entities": GRAPH_TRIPLES})
    fake_llm.decide = lambda fact, cands: as_json(
        {"action": "add", "targetId": None, "confidence": 0.9, "reason": "new"}
    )

    # What one uninterrupted run gives (in process, same fake model).
    rt, api = pipeline_rt("ollama", embedding="none")
    assert api.post("/api/memory/remember", json={"content": GRAPH_SOURCE}).status_code == 200
    wait_idle(rt)
    once = rt.db.read(graph_snapshot)
    assert once["entities"] == {"alice moreau": 2, "billing team": 2, "postgresql": 1, "acme": 1}
    assert all(r[3] == 1 for r in once["relations"]) and len(once["links"]) >= 6

    # The same memory on a daemon that dies at the completion of its job.
    ws = make_workspace(embedding="none", memory=pipeline_config(fake_llm))
    port = free_port()
    log = (ws.root / "killed-daemon.log").open("ab")
    proc = subprocess.Popen(
        [sys.executable, "-c", KILL_AT_COMPLETE, "daemon", "--host", "127.0.0.1", "--port", str(port)],
        stdout=log,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        env={**os.environ, "SIGNET_WORKSPACE": str(ws.root)},
    )
    try:
        wait_for(lambda: _answers(f"http://127.0.0.1:{port}/health"), 30, "the daemon to answer")
        r = httpx.post(f"http://127.0.0.1:{port}/api/memory/remember", json={"content": GRAPH_SOURCE}, timeout=30)
        assert r.status_code == 200, r.text
        assert proc.wait(timeout=60) == -signal.SIGKILL
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        log.close()
    conn = sqlite3.connect(ws.database_path())
    try:
        job = conn.execute("SELECT status, attempts FROM memory_jobs").fetchone()
        assert job == ("leased", 1)  # died mid-job: nothing marked it complete
        assert len(graph_snapshot(conn)["facts"]) == len(GRAPH_FACTS)  # the facts were committed before
    finally:
        conn.close()

    # Restarted, the daemon releases the lease and runs the job again.
    d = start_daemon(ws)
    with d.client() as c:
        wait_for(
            lambda: c.get("/api/pipeline/status").json()["queue"]["by_status"]["completed"] == 1,
            30,
            "the job to run again",
        )
    d.stop()
    conn = sqlite3.connect(ws.database_path())
    try:
        assert conn.execute("SELECT status, attempts FROM memory_jobs").fetchone() == ("completed", 2)
        assert graph_snapshot(conn) == once  # every mention counted once, every link made once
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    finally:
        conn.close()


def _answers(url: str) -> bool:
    try:
        return httpx.get(url, timeout=0.5).status_code == 200
    except httpx.HTTPError:
        return False
