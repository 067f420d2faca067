"""The daemon listens before its app is built (signet.daemon.boot), without lying about it.

Real daemons on loopback and the real CLI. ``SIGNET_TEST_BOOT_DELAY`` holds the build a few
seconds so "during the build" is a window a test can act in, not a race: /health says
``starting`` (with the proof, and the route's validation), a request sent meanwhile is answered
by the real app once it exists, `signet start` returns only once the app serves, a build that
fails exits non-zero with its one line, and a stop during the build leaves nothing behind.
"""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

from signet import instance
from signet.models import RememberRequest
from signet.workspace import Workspace
from tests.conftest import free_port, start_runtime

DELAY = "4"
"""Seconds the build is held: long enough for every step a test takes "during the build"."""


def env(ws: Workspace, port: int) -> dict[str, str]:
    return {
        **os.environ,
        "SIGNET_WORKSPACE": str(ws.root),
        "SIGNET_PORT": str(port),
        "SIGNET_HOST": "127.0.0.1",
        "SIGNET_TEST_BOOT_DELAY": DELAY,
    }


def signet(ws: Workspace, port: int, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "signet.cli.entry", *args],
        capture_output=True,
        text=True,
        env=env(ws, port),
        timeout=120,
    )


@pytest.fixture
def spawn() -> Iterator[Callable[[Workspace, int], subprocess.Popen[str]]]:
    """``signet daemon`` in the foreground with the build held; stderr kept apart (its lines are
    what a user sees); every process is stopped at teardown."""
    procs: list[subprocess.Popen[str]] = []

    def start(ws: Workspace, port: int) -> subprocess.Popen[str]:
        proc = subprocess.Popen(
            [sys.executable, "-m", "signet.cli.entry", "daemon", "--host", "127.0.0.1", "--port", str(port)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            text=True,
            env=env(ws, port),
        )
        procs.append(proc)
        return proc

    yield start
    for proc in procs:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def first_health(proc: subprocess.Popen[str], url: str, timeout: float = 30.0) -> httpx.Response:
    """The first answer of /health (whatever it says)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.stderr.read() if proc.stderr else proc.returncode
        try:
            return httpx.get(f"{url}/health", timeout=1)
        except httpx.HTTPError:
            time.sleep(0.02)
    raise AssertionError(f"no /health answer within {timeout}s")


def wait_status(url: str, want: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    status = None
    while time.monotonic() < deadline:
        status = httpx.get(f"{url}/health", timeout=5).json().get("status")
        if status == want:
            return
        time.sleep(0.05)
    raise AssertionError(f"/health still {status!r} after {timeout}s")


class InFlight:
    """A request sent now, answered whenever the daemon answers it (a thread waits for it)."""

    def __init__(self, method: str, url: str, **kwargs: Any) -> None:
        self.response: httpx.Response | None = None
        self.error: Exception | None = None

        def send() -> None:
            try:
                self.response = httpx.request(method, url, timeout=60, **kwargs)
            except httpx.HTTPError as exc:
                self.error = exc

        self._thread = threading.Thread(target=send)
        self._thread.start()

    def result(self) -> httpx.Response:
        self._thread.join(timeout=90)
        assert self.response is not None, self.error
        return self.response


def bad_challenges(url: str) -> list[tuple[int, Any]]:
    return [
        (r.status_code, r.json())
        for r in (httpx.get(f"{url}/health", params={"challenge": c}, timeout=30) for c in ("xyz", "a" * 200, ""))
    ]


def test_health_says_starting_until_the_app_serves(
    make_workspace: Callable[..., Workspace], spawn: Callable[[Workspace, int], subprocess.Popen[str]]
) -> None:
    ws, port = make_workspace(embedding="none"), free_port()
    url = f"http://127.0.0.1:{port}"
    proc = spawn(ws, port)
    first = first_health(proc, url)
    assert first.status_code == 200 and first.json() == {"status": "starting"}, first.text
    published = instance.read_instance(ws.daemon_dir)
    assert published is not None and published.pid == proc.pid and instance.lock_held(ws.daemon_dir)
    challenge = secrets.token_hex(16)
    proved = httpx.get(f"{url}/health", params={"challenge": challenge}, timeout=5).json()
    assert proved == {"status": "starting", "proof": instance.proof(published.secret, challenge)}
    assert instance.check_health("127.0.0.1", port, published.secret) == ("ours", "starting")
    starting_refusals = bad_challenges(url)
    assert [code for code, _ in starting_refusals] == [422, 422, 422], starting_refusals

    # Sent while the app is being built: each waits, and the real app answers it.
    remember = InFlight("POST", f"{url}/api/memory/remember", json={"content": "written while the daemon started"})
    missing = InFlight("GET", f"{url}/api/no-such-route")
    foreign = InFlight("GET", f"{url}/health", headers={instance.WORKSPACE_HEADER: "0" * 32})
    rebound = InFlight("GET", f"{url}/health", headers={"Host": "attacker.example"})
    time.sleep(0.5)
    assert httpx.get(f"{url}/health", timeout=5).json() == {"status": "starting"}  # still building
    status = signet(ws, port, "status")
    assert status.returncode == 0 and "is starting" in status.stdout, status.stdout + status.stderr

    r = remember.result()
    assert r.status_code == 200 and r.json()["id"], r.text
    r = missing.result()
    assert r.status_code == 404 and r.json()["code"] == "not_found", r.text  # the app's 404, not the shell's
    r = foreign.result()
    assert r.status_code == 409 and r.json()["code"] == "wrong_workspace", r.text
    r = rebound.result()
    assert r.status_code == 403 and r.json()["reason"] == "host_not_allowed", r.text

    wait_status(url, "ok")
    proved = httpx.get(f"{url}/health", params={"challenge": challenge}, timeout=5).json()
    assert proved == {"status": "ok", "proof": instance.proof(published.secret, challenge)}
    assert bad_challenges(url) == starting_refusals  # the shell refused exactly as the route does
    assert instance.read_instance(ws.daemon_dir) == published  # published once, before listening
    recalled = httpx.post(f"{url}/api/memory/recall", json={"query": "daemon started"}, timeout=30).json()
    assert [m["content"] for m in recalled["results"]] == ["written while the daemon started"]
    status = signet(ws, port, "status")
    assert status.returncode == 0 and "memories" in status.stdout and "is starting" not in status.stdout, status.stdout


def test_start_returns_once_the_app_serves(make_workspace: Callable[..., Workspace]) -> None:
    ws, port = make_workspace(embedding="none"), free_port()
    url = f"http://127.0.0.1:{port}"
    began = time.monotonic()
    r = signet(ws, port, "start")
    try:
        assert r.returncode == 0 and "started" in r.stdout, r.stdout + r.stderr
        assert time.monotonic() - began > float(DELAY)  # it waited through the held build ...
        assert httpx.get(f"{url}/health", timeout=5).json() == {"status": "ok"}  # ... to the app
    finally:
        assert signet(ws, port, "stop").returncode == 0
    assert instance.read_instance(ws.daemon_dir) is None and not instance.lock_held(ws.daemon_dir)


@pytest.mark.sqlite_only("an emptied SQLite file is the failure provoked")
def test_a_build_that_fails_exits_with_its_one_line(
    make_workspace: Callable[..., Workspace], spawn: Callable[[Workspace, int], subprocess.Popen[str]]
) -> None:
    ws, port = make_workspace(embedding="none"), free_port()
    url = f"http://127.0.0.1:{port}"
    rt = start_runtime(ws)
    rt.service.remember(RememberRequest(content="the one memory this store held"))
    rt.stop()  # records that the database held 1 memory
    db = ws.database_path()
    for side in ("-wal", "-shm"):
        db.with_name(db.name + side).unlink(missing_ok=True)
    db.write_bytes(b"")
    line = (
        f"the database at {db} is missing or empty, but it held 1 memories; restore it from a backup, "
        "or accept an empty store with `signet start --accept-empty-database`"
    )

    proc = spawn(ws, port)
    first = first_health(proc, url)
    assert first.json() == {"status": "starting"}, first.text  # it listens, and says it is not ready
    waiting = InFlight("GET", f"{url}/api/memories")
    assert proc.wait(timeout=60) == 1
    assert proc.stderr is not None and proc.stderr.read().strip().splitlines() == [f"error: {line}"]
    r = waiting.result()
    assert r.status_code == 503 and r.json() == {"error": line, "code": "storage_emptied"}, r.text
    assert not ws.pid_path.exists() and instance.read_instance(ws.daemon_dir) is None
    assert not instance.lock_held(ws.daemon_dir)
    assert db.stat().st_size == 0  # nothing was created over it

    started = signet(ws, port, "start")  # the CLI reports the failure, and leaves nothing running
    assert started.returncode == 1 and started.stderr.strip().splitlines() == [
        f"error: the daemon exited with 1 before it started at {url}; last log lines: error: {line}"
    ], started.stderr
    assert instance.read_instance(ws.daemon_dir) is None and not instance.lock_held(ws.daemon_dir)


@pytest.mark.parametrize("how", ["SIGTERM", "signet stop"])
def test_a_stop_during_the_build_leaves_nothing_behind(
    how: str, make_workspace: Callable[..., Workspace], spawn: Callable[[Workspace, int], subprocess.Popen[str]]
) -> None:
    """A bare SIGTERM (a service manager's stop) shows what the daemon cleans up itself;
    `signet stop` that it waits for the daemon instead of killing it."""
    ws, port = make_workspace(embedding="none"), free_port()
    url = f"http://127.0.0.1:{port}"
    proc = spawn(ws, port)
    assert first_health(proc, url).json() == {"status": "starting"}
    assert ws.pid_path.read_text().strip() == str(proc.pid) and instance.running(ws.daemon_dir) is not None
    waiting = InFlight("GET", f"{url}/api/memories")
    time.sleep(0.3)
    if how == "SIGTERM":
        proc.send_signal(signal.SIGTERM)
    else:
        stopped = signet(ws, port, "stop")  # SIGTERM to the lock holder, then it waits for the lock
        assert stopped.returncode == 0 and f"stopped (pid {proc.pid})" in stopped.stdout, stopped.stderr
    assert proc.wait(timeout=30) == -signal.SIGTERM  # not killed: it stopped by itself
    r = waiting.result()
    assert r.status_code == 503 and r.json()["code"] == "daemon_stopping", r.text
    assert proc.stderr is not None and "Traceback" not in proc.stderr.read()
    assert not ws.pid_path.exists() and instance.read_instance(ws.daemon_dir) is None
    assert not instance.lock_held(ws.daemon_dir)
    logged = "\n".join(p.read_text() for p in ws.logs_dir.glob("daemon-*.log"))
    assert "the runtime is not started" in logged and "signet daemon stopped" in logged
