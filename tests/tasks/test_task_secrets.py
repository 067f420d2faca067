"""Tasks that name secrets, against a real daemon on loopback: the hostile task
``sh -c 'echo $TOKEN; echo $TOKEN | base64'`` gets the value (its output proves the variable
was set) and neither form of it reaches the live stream, the stored run, the task's API
answers, the log or any workspace file; a secret cut across the command's writes is masked as
a whole; a name that is not stored is refused when the task is saved and fails the run (never
a run without it) when it is deleted later."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

import httpx

from signet.secrets.redact import Redactor
from signet.secrets.streaming import StreamRedactor
from signet.workspace import Workspace
from tests.conftest import DaemonProcess
from tests.secrets.conftest import VALUE, assert_hidden, leaked_forms, workspace_text
from tests.tasks.test_tasks_cli import cli as task_cli
from tests.tasks.test_tasks_daemon import finished, wait_runs

HOSTILE = ["sh", "-c", "echo $TOKEN; echo $TOKEN | base64"]


def task_secret_workspace(make_workspace: Callable[..., Workspace]) -> Workspace:
    return make_workspace(embedding="none", tasks={"allow": ["sh"]}, secrets={"keyStore": "file"})


def listen(url: str, answers: list[str], stop_after_done: int) -> threading.Thread:
    def run() -> None:
        with httpx.stream("GET", url, params={"heartbeat": 1}, timeout=30) as r:
            done = 0
            for line in r.iter_lines():
                answers.append(line)
                if line.startswith("event: done"):
                    done += 1
                    if done >= stop_after_done:
                        return

    thread = threading.Thread(target=run)
    thread.start()
    return thread


def test_a_task_uses_a_secret_it_never_shows(
    make_workspace: Callable[..., Workspace], start_daemon: Callable[..., DaemonProcess]
) -> None:
    ws = task_secret_workspace(make_workspace)
    d = start_daemon(ws)
    answers: list[str] = []
    with d.client() as c:
        assert c.post("/api/secrets", json={"name": "TOKEN", "value": VALUE}).status_code == 200
        r = c.post(
            "/api/tasks", json={"name": "leaky", "schedule": "@yearly", "command": HOSTILE, "secrets": ["TOKEN"]}
        )
        assert r.status_code == 201, r.text
        task = r.json()
        assert task["secrets"] == ["TOKEN"]
        answers.append(r.text)

        stream: list[str] = []
        listener = listen(f"{d.url}/api/tasks/{task['id']}/stream", stream, 1)
        time.sleep(0.5)  # subscribed before the run starts
        r = c.post(f"/api/tasks/{task['id']}/run")
        assert r.status_code == 202, r.text
        answers.append(r.text)
        runs = wait_runs(c, task["id"], lambda items: bool(finished(items)))
        listener.join(timeout=30)
        assert not listener.is_alive()
        run = runs[-1]
        assert run["status"] == "done" and run["exit_code"] == 0, run
        # exactly what secret exec's redaction makes of what the command printed (so the variable
        # was set: unset, it prints an empty line and "Cg==")
        raw = VALUE.encode() + b"\n"
        printed = raw + base64.b64encode(raw) + b"\n"
        assert run["output"] == Redactor.of({"TOKEN": VALUE}).bytes(printed)[0].decode(), run["output"]
        assert run["output"].startswith("[REDACTED:TOKEN]\n[REDACTED:TOKEN]")
        streamed = "".join(
            json.loads(line[6:])["text"] for line in stream if line.startswith("data: ") and '"text"' in line
        )
        assert streamed == run["output"]
        answers += stream
        for path in (
            "/api/tasks",
            f"/api/tasks/{task['id']}",
            f"/api/tasks/{task['id']}/runs",
            "/api/logs?lines=500",
        ):
            r = c.get(path)
            assert r.status_code == 200, (path, r.text)
            answers.append(r.text)
        # the task names the secret; changing it to a name that is not stored is refused
        r = c.patch(f"/api/tasks/{task['id']}", json={"secrets": ["NOPE"]})
        assert r.status_code == 400 and "signet secret put NOPE" in r.json()["error"], r.text
        r = c.patch(f"/api/tasks/{task['id']}", json={"secrets": ["LD_PRELOAD"]})
        assert r.status_code in (400, 422) and "error" in r.json(), r.text

        # deleted since it was saved: the run fails, it does not run without the secret
        assert c.delete("/api/secrets/TOKEN").status_code == 200
        assert c.post(f"/api/tasks/{task['id']}/run").status_code == 202
        runs = wait_runs(c, task["id"], lambda items: len(finished(items)) >= 2)
        assert runs[-1]["status"] == "error" and "TOKEN" in runs[-1]["error"] and runs[-1]["output"] == ""
    d.stop()
    for i, text in enumerate(answers):
        assert_hidden(text, f"API answer {i}")
    for name, text in workspace_text(ws.root).items():
        assert_hidden(text, name)


def test_saving_a_task_with_unknown_or_bad_secret_names(
    make_workspace: Callable[..., Workspace], start_daemon: Callable[..., DaemonProcess]
) -> None:
    d = start_daemon(task_secret_workspace(make_workspace))
    with d.client() as c:
        base = {"name": "t", "schedule": "@yearly", "command": ["sh", "-c", "true"]}
        r = c.post("/api/tasks", json={**base, "secrets": ["MISSING"]})
        assert r.status_code == 400 and "MISSING" in r.json()["error"], r.text
        for bad in (["lower"], ["A" * 65], ["PATH"], "TOKEN", [1], ["X"] * 65):
            r = c.post("/api/tasks", json={**base, "secrets": bad})
            assert r.status_code in (400, 422) and isinstance(r.json().get("error"), str), (bad, r.text)
        assert c.get("/api/tasks").json()["tasks"] == []


def test_a_value_cut_across_writes_is_masked_whole() -> None:
    """Fed in pieces cut at every offset, the stream masks exactly what masking the whole output
    at once masks: the raw value, its base64 (wrapped by ``base64`` at 76 characters too)."""
    secret = VALUE * 3  # long: its base64 wraps
    redactor = Redactor.of({"TOKEN": secret})
    encoded = base64.encodebytes((secret + "\n").encode())  # wrapped every 76 characters
    output = b"before " + secret.encode() + b" middle\n" + encoded + b"after\n"
    whole, _ = redactor.bytes(output)
    for size in (1, 2, 3, 7, 64, 4096):
        stream = StreamRedactor(redactor)
        shown = b"".join(stream.feed(output[i : i + size]) for i in range(0, len(output), size)) + stream.flush()
        assert shown == whole, size
        text = shown.decode()
        for form in leaked_forms(secret).values():
            assert form not in text
        assert text.startswith("before [REDACTED:TOKEN] middle\n") and text.endswith("after\n")


def test_a_task_without_secrets_is_unchanged(
    make_workspace: Callable[..., Workspace], start_daemon: Callable[..., DaemonProcess]
) -> None:
    d = start_daemon(task_secret_workspace(make_workspace))
    with d.client() as c:
        r = c.post(
            "/api/tasks", json={"name": "t", "schedule": "@yearly", "command": ["sh", "-c", "echo ${TOKEN:-unset}"]}
        )
        task: dict[str, Any] = r.json()
        assert r.status_code == 201 and task["secrets"] == []
        c.post(f"/api/tasks/{task['id']}/run")
        runs = wait_runs(c, task["id"], lambda items: bool(finished(items)))
    assert runs[-1]["output"] == "unset\n"


def cli(d: DaemonProcess, *args: str, input: str | None = None) -> subprocess.CompletedProcess[str]:
    if input is None:
        return task_cli(d, *args)
    env = {**os.environ, "SIGNET_WORKSPACE": str(d.workspace.root), "SIGNET_PORT": str(d.port)}
    return subprocess.run(
        [sys.executable, "-m", "signet.cli.entry", *args],
        input=input,
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )


def test_the_cli_names_secrets_and_never_shows_them(
    make_workspace: Callable[..., Workspace], start_daemon: Callable[..., DaemonProcess]
) -> None:
    d = start_daemon(task_secret_workspace(make_workspace))
    put = cli(d, "secret", "put", "TOKEN", input=VALUE)
    assert put.returncode == 0, put.stderr
    missing = cli(d, "task", "add", "x", "--schedule", "@yearly", "--secret", "NOPE", "--", "sh", "-c", "true")
    assert missing.returncode == 1 and missing.stderr.count("\n") == 1 and "signet secret put NOPE" in missing.stderr
    added = cli(d, "task", "add", "leaky", "--schedule", "@yearly", "--secret", "TOKEN", "--json", "--", *HOSTILE)
    assert added.returncode == 0, added.stderr
    task = json.loads(added.stdout)
    assert task["secrets"] == ["TOKEN"]
    assert cli(d, "task", "run", task["id"]).returncode == 0
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        shown = cli(d, "task", "runs", task["id"], "--json")
        items = json.loads(shown.stdout)["items"]
        if items and items[0]["status"] != "running":
            break
        time.sleep(0.2)
    assert items[0]["status"] == "done" and items[0]["output"].startswith("[REDACTED:TOKEN]\n"), items
    for out in (added, shown, cli(d, "task", "show", task["id"]), cli(d, "logs", "-n", "500")):
        assert_hidden(out.stdout + out.stderr, f"`{' '.join(map(str, out.args[3:]))}`")
