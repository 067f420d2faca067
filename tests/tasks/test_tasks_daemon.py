"""Scheduled tasks against a real daemon on loopback: a task every few seconds runs on time
and its output streams over SSE to a real client; a hanging task is killed at its timeout; two
runs of one task never overlap; runs missed while the daemon was down are reported; only
programs on tasks.allow run."""

from __future__ import annotations

import itertools
import json
import os
import threading
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx

from signet.auth.tokens import Role
from signet.workspace import Workspace
from tests.auth.conftest import bearer, configure, token_for
from tests.conftest import DaemonProcess


def ts(text: str) -> float:
    return datetime.fromisoformat(text).timestamp()


def wait_runs(
    c: httpx.Client, task_id: str, done: Callable[[list[dict[str, Any]]], bool], timeout: float = 30
) -> list[dict[str, Any]]:
    deadline = time.monotonic() + timeout
    while True:
        items = c.get(f"/api/tasks/{task_id}/runs", params={"limit": 200}).json()["items"]
        if done(items) or time.monotonic() > deadline:
            return list(reversed(items))  # oldest first
        time.sleep(0.1)


def finished(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [r for r in items if r["status"] not in ("running",)]


def task_workspace(make_workspace: Callable[..., Workspace], **tasks: Any) -> Workspace:
    tasks.setdefault("allow", ["sh"])
    return make_workspace(embedding="none", tasks=tasks)


def test_a_task_every_two_seconds_runs_on_time_and_streams(
    make_workspace: Callable[..., Workspace], start_daemon: Callable[..., DaemonProcess]
) -> None:
    d = start_daemon(task_workspace(make_workspace))
    events: list[tuple[str, dict[str, Any]]] = []
    with d.client() as c:
        task = c.post(
            "/api/tasks",
            json={"name": "ticker", "schedule": "every 2s", "command": ["sh", "-c", "echo tick; echo to-stderr >&2"]},
        )
        assert task.status_code == 201, task.text
        task_id = task.json()["id"]

        def listen() -> None:
            with httpx.stream("GET", f"{d.url}/api/tasks/{task_id}/stream", params={"heartbeat": 1}, timeout=30) as r:
                name = None
                for line in r.iter_lines():
                    if line.startswith("event: "):
                        name = line[7:]
                    elif line.startswith("data: ") and name is not None:
                        events.append((name, json.loads(line[6:])))
                        if sum(1 for e in events if e[0] == "done") >= 3:
                            return

        listener = threading.Thread(target=listen)
        listener.start()
        listener.join(timeout=30)
        assert not listener.is_alive(), events
        runs = [r for r in wait_runs(c, task_id, lambda items: len(finished(items)) >= 3) if r["status"] == "done"]
    assert len(runs) >= 3
    for run in runs:
        assert run["output"] == "tick\nto-stderr\n" or run["output"] == "to-stderr\ntick\n"
        assert run["trigger"] == "schedule" and run["exit_code"] == 0
        assert ts(run["started_at"]) - ts(run["scheduled_for"]) < 1.0  # on time
    gaps = [ts(b["scheduled_for"]) - ts(a["scheduled_for"]) for a, b in itertools.pairwise(runs)]
    assert all(1.9 <= g <= 2.6 for g in gaps), gaps
    names = [e[0] for e in events]
    assert names.count("run") >= 3 and names.count("done") >= 3
    streamed = "".join(e[1]["text"] for e in events if e[0] == "output")
    assert streamed.count("tick\n") >= 3 and "to-stderr" in streamed
    done = [e[1] for e in events if e[0] == "done"]
    assert all(e["status"] == "done" and e["exit_code"] == 0 for e in done)


def test_runs_never_overlap_and_a_hanging_run_is_killed(
    make_workspace: Callable[..., Workspace], start_daemon: Callable[..., DaemonProcess]
) -> None:
    d = start_daemon(task_workspace(make_workspace))
    with d.client() as c:
        slow = c.post(
            "/api/tasks",
            json={"name": "slow", "schedule": "every 1s", "command": ["sh", "-c", "sleep 2.5; echo ok"]},
        ).json()
        time.sleep(1.5)
        busy = c.post(f"/api/tasks/{slow['id']}/run")
        assert busy.status_code == 409 and "never overlap" in busy.json()["error"]
        runs = wait_runs(c, slow["id"], lambda items: sum(r["status"] == "done" for r in items) >= 2)
        c.patch(f"/api/tasks/{slow['id']}", json={"enabled": False})
        done = [r for r in runs if r["status"] == "done"]
        assert len(done) >= 2 and any(r["status"] == "skipped" for r in runs), [r["status"] for r in runs]
        spans = sorted((ts(r["started_at"]), ts(r["finished_at"])) for r in done)
        assert all(later[0] >= earlier[1] for earlier, later in itertools.pairwise(spans)), spans

        hang = c.post(
            "/api/tasks",
            json={
                "name": "hang",
                "schedule": "@yearly",
                "command": ["sh", "-c", "echo start; sleep 60"],
                "timeout_s": 1,
            },
        ).json()
        started = c.post(f"/api/tasks/{hang['id']}/run")
        assert started.status_code == 202 and started.json()["status"] == "running"
        (run,) = wait_runs(c, hang["id"], lambda items: bool(items) and items[0]["status"] != "running")
        assert run["status"] == "timeout" and run["exit_code"] == -9 and run["output"] == "start\n", run
        assert ts(run["finished_at"]) - ts(run["started_at"]) < 5
        assert run["trigger"] == "manual"


def test_missed_runs_are_reported_after_a_restart(
    make_workspace: Callable[..., Workspace], start_daemon: Callable[..., DaemonProcess]
) -> None:
    ws = task_workspace(make_workspace)
    d = start_daemon(ws)
    with d.client() as c:
        task = c.post(
            "/api/tasks", json={"name": "often", "schedule": "every 1s", "command": ["sh", "-c", "true"]}
        ).json()
        wait_runs(c, task["id"], lambda items: len(finished(items)) >= 1)
    d.stop()
    time.sleep(3.5)
    d = start_daemon(ws, port=d.port)
    with d.client() as c:
        runs = wait_runs(c, task["id"], lambda items: any(r["status"] == "missed" for r in items))
        (missed,) = [r for r in runs if r["status"] == "missed"]
        count = int(missed["error"].split()[0])
        assert count >= 2 and "while the daemon was down" in missed["error"], missed
        # and scheduling goes on: a normal run after it
        runs = wait_runs(c, task["id"], lambda items: items[0]["status"] != "missed" and len(items) > len(runs))
        assert runs[-1]["trigger"] == "schedule"


def test_crud_validation_and_the_allow_list(
    make_workspace: Callable[..., Workspace], start_daemon: Callable[..., DaemonProcess]
) -> None:
    d = start_daemon(task_workspace(make_workspace))
    with d.client() as c:
        for body, status, words in (
            ({"name": "x", "schedule": "every 1m", "command": ["python3", "-c", "1"]}, 403, "tasks.allow"),
            ({"name": "x", "schedule": "never", "command": ["sh"]}, 400, "invalid schedule"),
            ({"name": "x", "schedule": "every 1m"}, 422, "command"),
            ({"name": "x", "schedule": "every 1m", "harness": "claude-code"}, 422, "prompt"),
            ({"name": "x", "schedule": "every 1m", "command": ["sh"], "cwd": "relative"}, 400, "cwd"),
            ({"name": "x", "schedule": "every 1m", "command": ["sh"], "surprise": 1}, 422, "surprise"),
            ({"name": "x", "schedule": "every 1m", "harness": "claude-code", "prompt": "hi"}, 403, "claude"),
        ):
            r = c.post("/api/tasks", json=body)
            assert r.status_code == status and words in r.text, (body, r.status_code, r.text)
        made = c.post(
            "/api/tasks", json={"name": "daily", "schedule": "0 9 * * *", "command": ["sh", "-c", "pwd"], "cwd": "/tmp"}
        ).json()
        assert made["next_run_at"].endswith("09:00:00.000+00:00") and made["cwd"] == "/tmp"
        assert [t["id"] for t in c.get("/api/tasks").json()["tasks"]] == [made["id"]]
        changed = c.patch(f"/api/tasks/{made['id']}", json={"schedule": "every 5m", "enabled": False}).json()
        assert changed["schedule"] == "every 5m" and changed["enabled"] is False and changed["next_run_at"] is None
        assert c.patch(f"/api/tasks/{made['id']}", json={"prompt": "x"}).status_code == 400
        c.post(f"/api/tasks/{made['id']}/run")
        (run,) = wait_runs(c, made["id"], lambda items: bool(items) and items[0]["status"] != "running")
        assert run["output"] == "/tmp\n"
        assert c.delete(f"/api/tasks/{made['id']}").json() == {"id": made["id"], "deleted": True}
        for method, path in (("GET", ""), ("DELETE", ""), ("POST", "/run"), ("GET", "/runs"), ("GET", "/stream")):
            r = c.request(method, f"/api/tasks/{made['id']}{path}")
            assert r.status_code == 404, (method, path, r.text)


def test_a_harness_prompt_task_runs_the_harness_cli(
    make_workspace: Callable[..., Workspace], start_daemon: Callable[..., DaemonProcess], tmp_path: Path
) -> None:
    """``claude -p PROMPT`` as the task; ``claude`` here is a script that speaks its CLI protocol
    (argv in, text out), on the daemon's PATH."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "claude"
    fake.write_text('#!/bin/sh\nprintf "claude got: %s|%s\\n" "$1" "$2"\n')
    fake.chmod(0o755)
    ws = task_workspace(make_workspace, allow=["claude"])
    d = start_daemon(ws, env={"PATH": f"{bin_dir}:{os.environ['PATH']}"})
    with d.client() as c:
        task = c.post(
            "/api/tasks",
            json={"name": "summary", "schedule": "@daily", "harness": "claude-code", "prompt": "summarise today"},
        ).json()
        assert task["command"] == ["claude", "-p", "summarise today"]
        c.post(f"/api/tasks/{task['id']}/run")
        c.post(f"/api/tasks/{task['id']}/run")  # refused or after the first: never two at once
        runs = wait_runs(c, task["id"], lambda items: bool(items) and items[0]["status"] != "running")
        assert runs[0]["output"] == "claude got: -p|summarise today\n", runs
        changed = c.patch(f"/api/tasks/{task['id']}", json={"prompt": "summarise this week"}).json()
        assert changed["command"] == ["claude", "-p", "summarise this week"]
        page = c.get(f"/api/tasks/{task['id']}/runs", params={"limit": 1, "offset": 0}).json()
        assert page["limit"] == 1 and len(page["items"]) == 1 and page["total"] == len(runs)


def test_tokens_below_admin_cannot_reach_tasks(
    make_workspace: Callable[..., Workspace], open_app: Callable[..., Any]
) -> None:
    ws = task_workspace(make_workspace)
    configure(ws, "team", rateLimits={"default": 100_000, "operations": {}})
    _, c = open_app(ws)
    admin = bearer(token_for(ws, "admin"))
    made = c.post(
        "/api/tasks", headers=admin, json={"name": "t", "schedule": "@yearly", "command": ["sh", "-c", "true"]}
    )
    assert made.status_code == 201, made.text
    task_path = f"/api/tasks/{made.json()['id']}"
    calls = [
        ("GET", "/api/tasks", None),
        ("POST", "/api/tasks", {"name": "x", "schedule": "@yearly", "command": ["sh", "-c", "id"]}),
        ("GET", task_path, None),
        ("PATCH", task_path, {"enabled": False}),
        ("DELETE", task_path, None),
        ("POST", f"{task_path}/run", None),
        ("GET", f"{task_path}/runs", None),
        ("GET", f"{task_path}/stream", None),
    ]
    roles: tuple[Role, ...] = ("operator", "agent", "readonly")
    for role in roles:
        headers = bearer(token_for(ws, role))
        for method, path, body in calls:
            r = c.request(method, path, headers=headers, json=body)
            assert r.status_code == 403, (role, method, path, r.status_code)
    assert c.get(f"{task_path}/runs", headers=admin).json()["total"] == 0  # nothing ran
