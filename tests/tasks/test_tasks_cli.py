"""``signet task …`` through a real daemon: the CLI in a subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable

from signet.workspace import Workspace
from tests.conftest import DaemonProcess


def cli(d: DaemonProcess, *args: str) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "SIGNET_WORKSPACE": str(d.workspace.root),
        "SIGNET_PORT": str(d.port),
        "SIGNET_HOST": "127.0.0.1",
    }
    return subprocess.run(
        [sys.executable, "-m", "signet.cli.entry", *args], capture_output=True, text=True, env=env, timeout=60
    )


def test_task_commands(make_workspace: Callable[..., Workspace], start_daemon: Callable[..., DaemonProcess]) -> None:
    d = start_daemon(make_workspace(embedding="none", tasks={"allow": ["sh"]}))
    assert cli(d, "task", "list").stdout == "no tasks (add one with `signet task add`)\n"
    added = cli(
        d, "task", "add", "hello", "--schedule", "@yearly", "--json", "--", "sh", "-c", "echo hello from a task"
    )
    assert added.returncode == 0, added.stderr
    task = json.loads(added.stdout)
    assert task["command"][-1] == "echo hello from a task" and task["schedule"] == "@yearly"
    listed = cli(d, "task", "list")
    assert listed.stdout.startswith(f"{task['id']}  hello  [@yearly]  next ")
    assert json.loads(cli(d, "task", "show", task["id"]).stdout)["name"] == "hello"
    started = cli(d, "task", "run", task["id"])
    assert started.returncode == 0 and started.stdout.startswith("started run ")
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        runs = json.loads(cli(d, "task", "runs", task["id"], "--json").stdout)["items"]
        if runs and runs[0]["status"] != "running":
            break
        time.sleep(0.2)
    assert runs[0]["status"] == "done" and runs[0]["output"] == "hello from a task\n"
    assert "1 of 1 runs" in cli(d, "task", "runs", task["id"]).stdout
    refused = cli(d, "task", "add", "bad", "--schedule", "every 1m", "--", "python3", "-c", "1")
    assert refused.returncode == 1 and refused.stderr.count("\n") == 1 and "tasks.allow" in refused.stderr
    nothing = cli(d, "task", "add", "empty", "--schedule", "every 1m")
    assert nothing.returncode == 1 and "--harness" in nothing.stderr
    assert cli(d, "task", "rm", task["id"]).stdout == f"removed task {task['id']}\n"
    gone = cli(d, "task", "show", task["id"])
    assert gone.returncode == 1 and gone.stderr.count("\n") == 1 and "no task" in gone.stderr
