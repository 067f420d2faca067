"""Fault injection against real daemons: each fault is flagged by diagnostics, reported by an
``observe`` cycle, fixed by an ``execute`` cycle, and /health is never "ok" while it stands; a
repair that does not help is halted after 3 cycles; the worker runs on its own interval; and
``signet doctor --fix`` runs the same plan, through the daemon or (none running) in process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

from signet.ops import orphans
from signet.store.records import now_iso
from signet.workspace import Workspace
from tests.conftest import DaemonProcess, StoreConnection
from tests.pipeline.fake_llm import FakeLLM

HOUR_AGO = "2020-01-01T00:00:00+00:00"
QUIET = {"reaperIntervalMs": 3_600_000, "autonomous": {"maintenanceIntervalMs": 3_600_000}}
"""The reaper and the worker's own timer out of the way: cycles run when the test asks."""


def open_db(d: DaemonProcess) -> Any:
    return StoreConnection(d.workspace)


def remember(c: httpx.Client, n: int, prefix: str = "maintained memory") -> list[str]:
    ids = []
    for i in range(n):
        r = c.post("/api/memory/remember", json={"content": f"{prefix} number {i} about otters and rivers"})
        assert r.status_code == 200, r.text
        ids.append(r.json()["id"])
    return ids


def repairs_in(report: dict[str, Any]) -> dict[str, str]:
    """action -> domain of every repair a diagnostics report asks for."""
    return {h["action"]: name for name, d in report["domains"].items() for h in d["repairs"]}


def entry(cycle: dict[str, Any], action: str) -> dict[str, Any]:
    found = [p for p in cycle["plan"] if p["action"] == action]
    assert len(found) == 1, cycle["plan"]
    return found[0]


def run(c: httpx.Client, mode: str) -> dict[str, Any]:
    r = c.post("/api/repair/maintenance/run", json={"mode": mode})
    assert r.status_code == 200, r.text
    return dict(r.json())


def health(c: httpx.Client) -> tuple[str, list[str]]:
    h = c.get("/health").json()
    return h["status"], h.get("reasons") or []


def health_turns(c: httpx.Client, want: str, timeout: float = 20.0) -> list[str]:
    """Poll /health (nothing else) until it says ``want``: each poll asks the worker to look
    again when its last look is older than signet.ops.maintenance.WATCH_EVERY_S."""
    deadline = time.monotonic() + timeout
    while True:
        status, reasons = health(c)
        if status == want:
            return reasons
        if time.monotonic() > deadline:
            raise AssertionError(f"/health still {status} after {timeout}s: {reasons}")
        time.sleep(0.2)


# -- the faults --------------------------------------------------------------------------------


def stuck_lease(conn: Any, ids: list[str]) -> None:
    conn.execute(
        "INSERT INTO memory_jobs(id, memory_id, job_type, status, attempts, max_attempts, leased_at, created_at,"
        " updated_at) VALUES ('stuck-1', ?, 'extract', 'leased', 1, 3, ?, ?, ?)",
        (ids[0], HOUR_AGO, HOUR_AGO, HOUR_AGO),
    )


def stuck_lease_fixed(conn: Any) -> bool:
    # Released, it is pending; with no LLM provider (these daemons have none) the worker then
    # parks it as waiting_for_provider at once.
    status = conn.execute("SELECT status FROM memory_jobs WHERE id = 'stuck-1'").fetchone()[0]
    return status in ("pending", "waiting_for_provider")


def dead_jobs(conn: Any, ids: list[str]) -> None:
    now = now_iso()
    for i, mid in enumerate(ids[:2]):
        conn.execute(
            "INSERT INTO memory_jobs(id, memory_id, job_type, status, attempts, max_attempts, error, failed_at,"
            " created_at, updated_at) VALUES (?, ?, 'extract', 'dead', 3, 3, 'provider timed out', ?, ?, ?)",
            (f"dead-{i}", mid, now, now, now),
        )


def dead_jobs_fixed(conn: Any) -> bool:
    return conn.execute("SELECT COUNT(*) FROM memory_jobs WHERE status = 'dead'").fetchone()[0] == 0


def fts_out_of_step(conn: Any, ids: list[str]) -> None:
    row = conn.execute("SELECT seq, content FROM memories WHERE id = ?", (ids[0],)).fetchone()
    conn.execute(
        "INSERT INTO memories_fts(memories_fts, rowid, content) VALUES ('delete', ?, ?)", (row["seq"], row["content"])
    )


def fts_fixed(conn: Any) -> bool:
    memories = conn.execute("SELECT COUNT(*) FROM memories").fetchone()[0]
    return bool(memories == conn.execute("SELECT COUNT(*) FROM memories_fts_docsize").fetchone()[0])


def orphaned_rows(conn: Any, ids: list[str]) -> None:
    now = now_iso()
    gone = "00000000-0000-4000-8000-000000000000"
    conn.execute(
        "INSERT INTO embeddings(id, content_hash, vector, dimensions, source_id, chunk_text, created_at)"
        " VALUES ('orphan-vec', 'no-such-hash', ?, 1, ?, '', ?)",
        (b"\x00\x00\x80\x3f", gone, now),
    )
    conn.execute(
        "INSERT INTO entities(id, name, canonical_name, mentions, agent_id, created_at, updated_at)"
        " VALUES ('orphan-entity', 'Nobody', 'nobody', 1, 'default', ?, ?)",
        (now, now),
    )
    conn.execute(  # a link whose memory is gone: its seq is past every memory's
        "INSERT INTO memory_entity_links(memory_seq, entity_rowid, created_at)"
        " SELECT (SELECT COALESCE(MAX(seq), 0) + 1000 FROM memories), rowid, ? FROM entities WHERE id = 'orphan-entity'",
        (now,),
    )
    conn.execute(
        "INSERT INTO hook_injections(session_key, memory_id, turn, event, injected_at) VALUES ('s1', ?, 1, 'prompt', ?)",
        (gone, now),
    )
    conn.execute(
        "INSERT INTO memory_jobs(id, memory_id, job_type, status, created_at, updated_at)"
        " VALUES ('orphan-job', ?, 'extract', 'pending', ?, ?)",
        (gone, now, now),
    )


def orphans_fixed(conn: Any) -> bool:
    entity = conn.execute("SELECT 1 FROM entities WHERE id = 'orphan-entity'").fetchone()
    return sum(orphans.count(conn).values()) == 0 and entity is None


FAULTS: dict[str, tuple[Callable[[Any, list[str]], None], Callable[[Any], bool], str, str]] = {
    "stuck lease": (stuck_lease, stuck_lease_fixed, "queue", "release-leases"),
    "dead jobs": (dead_jobs, dead_jobs_fixed, "queue", "requeue-dead"),
    "fts out of step": (fts_out_of_step, fts_fixed, "index", "check-fts"),
    "orphaned rows": (orphaned_rows, orphans_fixed, "storage", "clean-orphans"),
}


@pytest.fixture
def quiet_daemon(
    make_workspace: Callable[..., Workspace], start_daemon: Callable[..., DaemonProcess]
) -> Callable[..., DaemonProcess]:
    def make(embedding: str = "none", **pipeline: Any) -> DaemonProcess:
        ws = make_workspace(embedding=embedding, memory={"pipelineV2": {**QUIET, **pipeline}})
        return start_daemon(ws)

    return make


@pytest.mark.parametrize(
    "fault",
    [
        pytest.param(n, marks=pytest.mark.sqlite_only("FTS5's own index")) if n == "fts out of step" else n
        for n in sorted(FAULTS)
    ],
)
def test_each_fault_is_flagged_observed_then_fixed(fault: str, quiet_daemon: Callable[..., DaemonProcess]) -> None:
    inject, fixed, domain, action = FAULTS[fault]
    d = quiet_daemon()
    with d.client() as c:
        ids = remember(c, 5)
        baseline = c.get("/api/diagnostics").json()
        assert repairs_in(baseline) == {}
        connector = baseline["domains"]["connector"]  # none exist here: said, not scored
        assert (
            connector["applicable"] is False and connector["findings"] == [] and connector["metrics"]["configured"] == 0
        )
        assert health(c) == ("ok", [])
        conn = open_db(d)
        inject(conn, ids)
        reasons = health_turns(c, "degraded")  # /health alone notices, within a poll or two
        assert any(r.startswith("maintenance:") and "/api/repair/" in r for r in reasons), reasons

        report = c.get("/api/diagnostics").json()
        assert repairs_in(report) == {action: domain}, report["domains"][domain]
        assert report["domains"][domain]["score"] < 1.0 and report["domains"][domain]["findings"]
        warnings = c.get("/api/status").json()["warnings"]
        assert any(w.startswith("maintenance:") for w in warnings), warnings

        observed = run(c, "observe")
        assert entry(observed, action)["status"] == "planned"
        assert not fixed(conn), "observe must not repair"
        assert health(c)[0] == "degraded"

        executed = run(c, "execute")
        done = entry(executed, action)
        assert done["status"] == "done", done
        assert executed["domains_after"][domain] > executed["domains_before"][domain]
        assert fixed(conn)
        assert repairs_in(c.get("/api/diagnostics").json()) == {}
        assert health(c) == ("ok", [])
        audit = c.get("/api/repair/audit", params={"action": action}).json()["items"]
        conn.close()
    assert [(a["outcome"], a["actor_type"]) for a in audit] == [("ok", "operator")]
    assert audit[0]["details"]["reason"] == done["finding"]


@pytest.fixture
def fake_llm() -> Iterator[FakeLLM]:
    f = FakeLLM().start()
    yield f
    f.stop()


def wait_for(what: Callable[[], bool], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not what():
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting")
        time.sleep(0.05)


def test_a_repair_that_does_not_help_halts_after_three_cycles(
    quiet_daemon: Callable[..., DaemonProcess], fake_llm: FakeLLM
) -> None:
    """A poisoned job (a document job that names no document) dies on every run: requeueing it helps
    for a moment and never for good. After three cycles that did not improve the queue, the
    requeue is halted: planned, not run, and said so in status, diagnostics and /health."""
    d = quiet_daemon(
        pollIntervalMs=50, extraction={"provider": "ollama", "model": "qwen3:4b", "endpoint": fake_llm.url}
    )
    with d.client() as c:
        remember(c, 3)
        conn = open_db(d)
        now = now_iso()
        conn.execute(
            "INSERT INTO memory_jobs(id, job_type, status, payload, created_at, updated_at)"
            " VALUES ('poison', 'document_ingest', 'pending', '{}', ?, ?)",
            (now, now),
        )

        def poison() -> Any:
            return conn.execute("SELECT status, attempts, error FROM memory_jobs WHERE id = 'poison'").fetchone()

        def dead() -> bool:
            return bool(poison()["status"] == "dead")

        wait_for(dead)
        assert "names no document" in poison()["error"]
        for cycle in range(1, 4):
            ran = entry(run(c, "execute"), "requeue-dead")
            assert ran["status"] == "done", (cycle, ran)
            wait_for(dead)  # it died again
            health_turns(c, "degraded")
        attempts = poison()["attempts"]
        halted = entry(run(c, "execute"), "requeue-dead")
        assert halted["status"] == "halted", halted
        assert entry(run(c, "execute"), "requeue-dead")["status"] == "halted"  # and it stays halted
        assert poison()["status"] == "dead" and poison()["attempts"] == attempts  # not requeued again
        status = c.get("/api/repair/maintenance").json()
        [track] = status["halted"]
        assert track["action"] == "requeue-dead" and track["strikes"] == 3
        assert [h["improved"] for h in track["history"]] == [False, False, False]
        queue = c.get("/api/diagnostics/queue").json()
        assert any("requeue-dead halted" in f for f in queue["findings"]), queue["findings"]
        state, reasons = health(c)
        assert state == "degraded" and any("halted" in r for r in reasons), reasons
        # the fault going away lifts the halt
        conn.execute("DELETE FROM memory_jobs WHERE id = 'poison'")
        cleared = run(c, "execute")
        assert cleared["plan"] == [] and c.get("/api/repair/maintenance").json()["halted"] == []
        assert health(c) == ("ok", [])
        audit = c.get("/api/repair/audit", params={"action": "requeue-dead"}).json()["items"]
        conn.close()
    assert [a["outcome"] for a in audit] == ["ok", "ok", "ok"]


def test_lost_vectors_are_flagged_and_embedded_again(quiet_daemon: Callable[..., DaemonProcess]) -> None:
    d = quiet_daemon(embedding="local")
    d.wait_embedder()
    with d.client() as c:
        ids = remember(c, 4, prefix="vector fault")
        d.wait_embedder()
        assert repairs_in(c.get("/api/diagnostics").json()) == {}
        conn = open_db(d)
        conn.execute(
            "DELETE FROM embeddings WHERE content_hash IN (SELECT content_hash FROM memories WHERE id IN (?, ?))",
            (ids[0], ids[1]),
        )
        report = c.get("/api/diagnostics").json()
        assert repairs_in(report) == {"re-embed": "index"}
        assert report["domains"]["index"]["metrics"]["vectors_lost"] == 2
        assert health(c)[0] == "degraded"
        assert entry(run(c, "observe"), "re-embed")["status"] == "planned"
        assert c.get("/api/diagnostics").json()["domains"]["index"]["metrics"]["vectors_lost"] == 2
        assert entry(run(c, "execute"), "re-embed")["status"] == "done"
        d.wait_embedder()
        report = c.get("/api/diagnostics").json()
        stored = conn.execute(
            "SELECT COUNT(*) FROM memories m JOIN embeddings e ON e.content_hash = m.content_hash WHERE m.id IN (?, ?)",
            (ids[0], ids[1]),
        ).fetchone()[0]
        conn.close()
        assert report["domains"]["index"]["metrics"]["vectors_lost"] == 0 and stored == 2
        assert health(c) == ("ok", [])


def test_near_duplicates_are_counted_merged_and_recoverable(quiet_daemon: Callable[..., DaemonProcess]) -> None:
    d = quiet_daemon(embedding="local")
    d.wait_embedder()
    texts = [
        "The staging database password is rotated every Monday morning.",
        "Every Monday morning the staging database password gets rotated.",
        "critical: the staging database password rotates each Monday morning",
        "My cat Biscuit only eats tuna on Sundays.",
    ]
    with d.client() as c:
        ids = [c.post("/api/memory/remember", json={"content": t}).json()["id"] for t in texts]
        d.wait_embedder()
        stats = c.get("/api/repair/dedup-stats", params={"threshold": 0.8}).json()
        assert stats["scanned"] == 4 and stats["clusters"] == 1 and stats["duplicates"] == 2, stats
        [group] = stats["groups"]
        assert group["survivor"]["id"] == ids[2]  # the pinned one survives
        assert {m["id"] for m in group["duplicates"]} == {ids[0], ids[1]}
        dry = c.post("/api/repair/deduplicate", json={"threshold": 0.8, "dry_run": True}).json()
        assert dry["count"] == 2 and dry["dry_run"] is True
        assert c.get("/api/memories").json()["total"] == 4  # a dry run merges nothing
        done = c.post("/api/repair/deduplicate", json={"threshold": 0.8, "limit": 1}).json()
        assert done["count"] == 1 and done["remaining"] == 1  # a bounded batch
        done = c.post("/api/repair/deduplicate", json={"threshold": 0.8}).json()
        assert done["count"] == 1 and done["remaining"] == 0
        assert c.get("/api/memories").json()["total"] == 2
        merged = done["merged"][0]
        history = c.get(f"/api/memory/{merged['id']}/history").json()
        deleted = [e for e in history["events"] if e["event"] == "deleted"]
        assert deleted and deleted[-1]["metadata"]["merged_into"] == ids[2] and ids[2] in deleted[-1]["reason"]
        r = c.post(f"/api/memory/{merged['id']}/recover", json={"reason": "not a duplicate after all"})
        assert r.status_code == 200, r.text
        assert c.get("/api/memories").json()["total"] == 3
        assert c.get("/api/repair/dedup-stats", params={"threshold": 0.99}).json()["clusters"] == 0


def test_the_worker_runs_on_its_interval_observe_then_execute_through_the_gate(
    make_workspace: Callable[..., Workspace], start_daemon: Callable[..., DaemonProcess]
) -> None:
    """Observe: the worker plans and changes nothing. Execute: it repairs as ``system``, and its
    cooldown refuses the same repair again within the minute, with when to retry."""

    def daemon(mode: str) -> DaemonProcess:
        auto = {"maintenanceIntervalMs": 1000, "maintenanceMode": mode}
        ws = make_workspace(
            embedding="none",
            memory={
                "pipelineV2": {
                    "reaperIntervalMs": 3_600_000,
                    "autonomous": auto,
                    "repair": {"requeueCooldownMs": 60_000},
                }
            },
        )
        return start_daemon(ws)

    def last_plan(c: httpx.Client, after: int) -> dict[str, Any]:
        state: dict[str, Any] = {}

        def ran() -> bool:
            state.update(c.get("/api/repair/maintenance").json())
            return bool(state["cycles"] > after and state["last_cycle"]["plan"])

        wait_for(ran, timeout=30)
        return state

    observe = daemon("observe")
    with observe.client() as c:
        ids = remember(c, 2)
        conn = open_db(observe)
        stuck_lease(conn, ids)
        state = last_plan(c, 0)
        assert state["scheduled"] is True and state["mode"] == "observe"
        assert entry(state["last_cycle"], "release-leases")["status"] == "planned"
        assert not stuck_lease_fixed(conn) and health(c)[0] == "degraded"
        conn.close()
    observe.stop()

    execute = daemon("execute")
    with execute.client() as c:
        ids = remember(c, 2)
        conn = open_db(execute)
        stuck_lease(conn, ids)
        wait_for(lambda: stuck_lease_fixed(conn))
        cycles = c.get("/api/repair/maintenance").json()["cycles"]
        conn.execute("UPDATE memory_jobs SET status = 'leased', leased_at = ? WHERE id = 'stuck-1'", (HOUR_AGO,))
        state = last_plan(c, cycles)
        refused = entry(state["last_cycle"], "release-leases")
        assert refused["status"] == "refused" and 0 < refused["retry_after"] <= 60, refused
        assert state["gate"]["system"]["release-leases"]["runs_last_hour"] == 1
        rows = c.get("/api/repair/audit", params={"actor_type": "system"}).json()["items"]
        conn.close()
    assert rows[-1]["outcome"] == "ok" and rows[-1]["actor"] == "maintenance"
    assert rows[0]["outcome"] == "refused" and rows[0]["details"]["code"] == "cooldown"


def signet(d: DaemonProcess, *args: str) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "SIGNET_WORKSPACE": str(d.workspace.root),
        "SIGNET_PORT": str(d.port),
        "SIGNET_HOST": "127.0.0.1",
    }
    return subprocess.run(
        [sys.executable, "-m", "signet.cli.entry", *args], capture_output=True, text=True, env=env, timeout=180
    )


def test_doctor_fix_runs_the_plan_through_the_daemon_or_in_process(quiet_daemon: Callable[..., DaemonProcess]) -> None:
    d = quiet_daemon()
    with d.client() as c:
        ids = remember(c, 3)
        conn = open_db(d)
        stuck_lease(conn, ids)
        r = signet(d, "doctor", "--fix")
        assert r.returncode == 0, r.stderr
        assert "release-leases" in r.stdout and "done" in r.stdout and "released 1 stale lease" in r.stdout
        assert stuck_lease_fixed(conn)
        assert health(c) == ("ok", [])
        audit = c.get("/api/repair/audit").json()["items"]
        assert audit[0]["actor"] == "cli" and audit[0]["action"] == "release-leases"
        conn.close()
    d.stop()
    # no daemon: the same plan runs in this process, the daemon's lock held
    conn = open_db(d)
    orphaned_rows(conn, ids)
    conn.close()
    r = signet(d, "doctor", "--fix", "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert entry(out["fix"], "clean-orphans")["status"] == "done"
    assert out["domains"]["storage"]["repairs"] == []
    conn = open_db(d)
    assert orphans_fixed(conn)
    conn.close()
