"""The repair gate: frozen, agents, cooldowns and hourly budgets with a correct Retry-After,
and an audit row for every repair asked for, against a real daemon."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest

from signet.config import AutonomousSettings, RepairSettings, parse_settings
from signet.errors import ConfigError
from signet.ops.repair_gate import ACTIONS, RepairGate
from signet.store.records import now_iso
from signet.workspace import Workspace
from tests.conftest import DaemonProcess, StoreConnection


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def gate(clock: Clock, **repair: Any) -> RepairGate:
    return RepairGate(AutonomousSettings(), RepairSettings(**repair), clock)


def test_the_n_plus_first_run_in_the_hour_waits_for_the_oldest_to_leave_it() -> None:
    clock = Clock()
    g = gate(clock, requeueHourlyBudget=3, requeueCooldownMs=0)
    for step in (0, 100, 200):
        clock.now = 1000.0 + step
        assert g.admit("requeue-dead", "operator").allowed
    clock.now = 1000.0 + 250
    refused = g.admit("requeue-dead", "operator")
    assert not refused.allowed and refused.code == "hourly_budget"
    assert refused.retry_after == 3600 - 250  # the first run leaves the hour then
    clock.now = 1000.0 + 3600  # exactly one hour after the first: one slot is free again
    assert g.admit("requeue-dead", "operator").allowed
    clock.now += 1
    assert g.admit("requeue-dead", "operator").retry_after == 100 - 1  # now the second run must leave
    # another action and another kind of caller count apart
    assert g.admit("release-leases", "operator").allowed
    assert g.admit("requeue-dead", "system").allowed


def test_cooldowns_bind_the_worker_and_agents_not_an_operator() -> None:
    clock = Clock()
    g = gate(clock, reembedCooldownMs=300_000, reembedHourlyBudget=10)
    assert g.admit("re-embed", "system").allowed
    clock.now += 30.4
    refused = g.admit("re-embed", "system")
    assert refused.code == "cooldown" and refused.retry_after == 270  # 269.6 rounded up
    assert g.admit("re-embed", "operator").allowed and g.admit("re-embed", "operator").allowed
    clock.now += 270
    assert g.admit("re-embed", "system").allowed


def test_keyword_rebuilds_are_capped_at_five_an_hour() -> None:
    clock = Clock()
    g = gate(clock, reembedHourlyBudget=100, reembedCooldownMs=0)
    assert [g.admit("check-fts", "operator").allowed for _ in range(6)] == [True] * 5 + [False]


def test_frozen_refuses_everyone_and_agents_need_autonomy() -> None:
    frozen = RepairGate(AutonomousSettings(frozen=True), RepairSettings())
    for kind in ("operator", "agent", "system"):
        d = frozen.admit("clean-orphans", kind)  # type: ignore[arg-type]
        assert not d.allowed and d.code == "repairs_frozen" and d.error().status == 503
    off = RepairGate(AutonomousSettings(enabled=False), RepairSettings())
    d = off.admit("clean-orphans", "agent")
    assert d.code == "autonomous_disabled" and d.error().status == 403
    assert off.admit("clean-orphans", "operator").allowed and off.admit("clean-orphans", "system").allowed
    with pytest.raises(ValueError):
        off.admit("drop-everything", "operator")


def test_racing_callers_never_overspend_a_budget() -> None:
    g = RepairGate(AutonomousSettings(), RepairSettings(requeueHourlyBudget=7, requeueCooldownMs=0))
    admitted: list[bool] = []
    lock = threading.Lock()
    start = threading.Barrier(16)

    def worker() -> None:
        start.wait()
        for _ in range(5):
            ok = g.admit("requeue-dead", "operator").allowed
            with lock:
                admitted.append(ok)

    threads = [threading.Thread(target=worker) for _ in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert admitted.count(True) == 7 and len(admitted) == 80


def test_the_specs_flat_keys_are_the_nested_settings() -> None:
    pipeline = parse_settings(
        {
            "memory": {
                "pipelineV2": {
                    "autonomousFrozen": True,
                    "maintenanceMode": "observe",
                    "repairRequeueHourlyBudget": 7,
                    "autonomous": {"enabled": False, "allowUpdateDelete": True},
                    "repair": {"requeueHourlyBudget": 9},
                }
            }
        }
    ).memory.pipeline
    assert pipeline.autonomous.frozen and not pipeline.autonomous.enabled
    assert pipeline.autonomous.maintenance_mode == "observe"
    assert pipeline.repair.requeue_hourly_budget == 9  # the nested value wins
    assert pipeline.allow_update_delete is True
    with pytest.raises(ConfigError, match="maintenanceMode"):
        parse_settings({"memory": {"pipelineV2": {"autonomous": {"maintenanceMode": "fix-everything"}}}})


def _daemon(
    make_workspace: Callable[..., Workspace], start_daemon: Callable[..., DaemonProcess], **pipeline: Any
) -> DaemonProcess:
    ws = make_workspace(
        embedding="none",
        memory={
            "pipelineV2": {
                "reaperIntervalMs": 3_600_000,
                "autonomous": {"maintenanceIntervalMs": 3_600_000},
                **pipeline,
            }
        },
    )
    return start_daemon(ws)


def test_the_fourth_repair_in_the_hour_gets_429_with_a_correct_retry_after(
    make_workspace: Callable[..., Workspace], start_daemon: Callable[..., DaemonProcess]
) -> None:
    d = _daemon(make_workspace, start_daemon, repair={"requeueHourlyBudget": 3})
    with d.client() as c:
        for _ in range(3):
            r = c.post("/api/repair/release-leases", headers={"X-Signet-Actor": "ops-alice"})
            assert r.status_code == 200, r.text
        r = c.post("/api/repair/release-leases", headers={"X-Signet-Actor": "ops-alice"})
        assert r.status_code == 429, r.text
        body = r.json()
        assert body["code"] == "rate_limited" and body["reason"] == "hourly_budget" and "budget of 3" in body["error"]
        retry = int(r.headers["Retry-After"])
        assert body["retry_after"] == retry
        assert 3600 - 60 <= retry <= 3600  # the first of the three ran moments ago: it leaves the hour in ~1 h
        # another action has its own budget
        assert c.post("/api/repair/clean-orphans", json={}).status_code == 200
        rows = c.get("/api/repair/audit", params={"action": "release-leases"}).json()["items"]
    assert [r["outcome"] for r in rows] == ["refused", "noop", "noop", "noop"]
    assert {r["actor"] for r in rows} == {"ops-alice"} and {r["actor_type"] for r in rows} == {"operator"}
    assert rows[0]["details"]["retry_after"] == retry and rows[0]["details"]["code"] == "hourly_budget"


def test_every_repair_leaves_an_audit_row(
    make_workspace: Callable[..., Workspace], start_daemon: Callable[..., DaemonProcess]
) -> None:
    d = _daemon(make_workspace, start_daemon)
    with d.client() as c:
        for i in range(3):
            assert c.post("/api/memory/remember", json={"content": f"audited memory {i}"}).status_code == 200
        conn = StoreConnection(d.workspace)
        now = now_iso()  # recent: the retention sweep below keeps it
        conn.execute(
            "INSERT INTO memory_jobs(id, job_type, status, created_at, updated_at, failed_at)"
            " VALUES ('dead-1', 'extract', 'dead', ?, ?, ?)",
            (now, now, now),
        )
        conn.close()
        calls: list[tuple[str, dict[str, Any] | None]] = [
            ("/api/repair/retention-sweep", None),
            ("/api/repair/check-fts", {"repair": True}),
            ("/api/repair/re-embed", None),
            ("/api/repair/clean-orphans", {}),
            ("/api/repair/deduplicate", {}),
            ("/api/repair/requeue-dead", {}),
            ("/api/repair/release-leases", None),
        ]
        for path, body in calls:
            r = c.post(path, json=body)
            assert r.status_code == 200, (path, r.text)
        # reads are not repairs: a plain check, dry runs and statistics leave no row
        assert c.post("/api/repair/check-fts", json={}).status_code == 200
        assert c.post("/api/repair/clean-orphans", json={"dry_run": True}).status_code == 200
        assert c.post("/api/repair/deduplicate", json={"dry_run": True}).status_code == 200
        assert c.get("/api/repair/dedup-stats").status_code == 200
        rows = c.get("/api/repair/audit", params={"limit": 100}).json()["items"]
        requeued = [r for r in rows if r["action"] == "requeue-dead"]
        since = c.get("/api/repair/audit", params={"since": "2099-01-01T00:00:00Z"}).json()
        bad = c.get("/api/repair/audit", params={"action": "drop-tables"})
    assert sorted(r["action"] for r in rows) == sorted(ACTIONS)
    assert requeued[0]["outcome"] == "ok" and requeued[0]["details"]["jobs"] == ["dead-1"]
    assert since == {"items": [], "count": 0}
    assert bad.status_code == 422 and bad.json()["code"] == "invalid_request"


def test_a_frozen_gate_refuses_with_503_and_says_so_in_the_audit(
    make_workspace: Callable[..., Workspace], start_daemon: Callable[..., DaemonProcess]
) -> None:
    d = _daemon(make_workspace, start_daemon, autonomous={"frozen": True})
    with d.client() as c:
        r = c.post("/api/repair/clean-orphans", json={})
        assert r.status_code == 503 and r.json()["code"] == "repairs_frozen", r.text
        status = c.get("/api/repair/maintenance").json()
        rows = c.get("/api/repair/audit").json()["items"]
    assert status["frozen"] is True and status["scheduled"] is False
    assert [(r["action"], r["outcome"]) for r in rows] == [("clean-orphans", "refused")]
