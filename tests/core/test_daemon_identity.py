"""The CLI never acts on the wrong process or the wrong workspace (real daemons, the real CLI).

A stale pid file is never signalled; ``signet start`` for workspace B on a port that A's
daemon holds fails in one line and leaves nothing running; every client of B (CLI, hook
command, MCP server) refuses to talk to A's daemon, and nothing of B reaches A's store.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import anyio
import httpx
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from signet import instance
from signet.workspace import Workspace
from tests.conftest import free_port, write_config

SECRET_SLEEP = 120


def cli(root: Path, port: int, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "SIGNET_WORKSPACE": str(root),
        "SIGNET_PORT": str(port),
        "SIGNET_HOST": "127.0.0.1",
        "HOME": str(root.parent / "home"),
    }
    return subprocess.run(
        [sys.executable, "-m", "signet.cli.entry", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        input=stdin,
    )


def setup(root: Path) -> None:
    r = cli(root, 1, "setup", "-y", "--embedding", "none", "--llm", "none")
    assert r.returncode == 0, r.stderr


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}").exists() and "zombie" not in Path(f"/proc/{pid}/status").read_text().lower()


@pytest.fixture
def unrelated() -> subprocess.Popen[bytes]:
    """A process that is not Signet's daemon, whose pid a stale record names."""
    proc = subprocess.Popen(["sleep", str(SECRET_SLEEP)])
    yield proc
    proc.kill()
    proc.wait()


def test_a_stale_record_is_never_signalled(tmp_path: Path, unrelated: subprocess.Popen[bytes]) -> None:
    root, port = tmp_path / "ws", free_port()
    setup(root)
    daemon_dir = root / ".daemon"
    daemon_dir.mkdir(exist_ok=True)
    # After a reboot the pid is reused: the record names a live process with that pid (even its
    # start time), but no daemon holds the workspace's lock.
    (daemon_dir / "pid").write_text(str(unrelated.pid))
    (daemon_dir / "daemon.json").write_text(
        json.dumps(
            {
                "pid": unrelated.pid,
                "start": instance.process_start(unrelated.pid),
                "workspace": str(root),
                "host": "127.0.0.1",
                "port": port,
                "secret": "0" * 64,
                "started_at": time.time(),
            }
        )
    )
    r = cli(root, port, "stop")
    assert r.returncode == 0 and "not running" in r.stdout and "not signalled" in r.stdout, r.stdout + r.stderr
    time.sleep(0.2)
    assert unrelated.poll() is None  # untouched
    assert not (daemon_dir / "daemon.json").exists() and not (daemon_dir / "pid").exists()
    (daemon_dir / "pid").write_text(str(unrelated.pid))  # and start is not fooled either
    r = cli(root, port, "start")
    try:
        assert r.returncode == 0 and "started" in r.stdout and "already" not in r.stdout, r.stdout + r.stderr
        inst = instance.running(daemon_dir)
        assert inst is not None and inst.pid != unrelated.pid
        assert instance.check_address("127.0.0.1", port, inst.secret) == "ours"
        assert "already running" in cli(root, port, "start").stdout
    finally:
        assert cli(root, port, "stop").returncode == 0
    assert unrelated.poll() is None
    assert instance.running(daemon_dir) is None and not instance.lock_held(daemon_dir)


def test_a_killed_daemon_leaves_a_record_nobody_trusts(tmp_path: Path) -> None:
    root, port = tmp_path / "ws", free_port()
    setup(root)
    assert cli(root, port, "start").returncode == 0
    inst = instance.running(root / ".daemon")
    assert inst is not None
    os.kill(inst.pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    # The group leader turns zombie before its other threads have let go of the lock.
    while (alive(inst.pid) or instance.lock_held(root / ".daemon")) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert (root / ".daemon" / "daemon.json").exists()  # left behind ...
    assert instance.running(root / ".daemon") is None  # ... and not trusted: the lock died with it
    r = cli(root, port, "status")
    assert r.returncode != 0 and "not running" in r.stderr
    r = cli(root, port, "start")
    try:
        assert r.returncode == 0 and "started" in r.stdout, r.stderr
    finally:
        cli(root, port, "stop")


def test_another_workspace_on_the_port_is_refused_by_every_client(tmp_path: Path) -> None:
    a, b, port = tmp_path / "a", tmp_path / "b", free_port()
    setup(a)
    setup(b)
    assert cli(a, port, "start").returncode == 0
    try:
        assert cli(a, port, "remember", "alpha owns this store").returncode == 0
        a_inst = instance.running(a / ".daemon")
        assert a_inst is not None
        line = f"port {port} serves workspace {a.resolve()}, not {b}; use --port or SIGNET_PORT"

        # start: fails in one line and leaves nothing of B running or recorded.
        r = cli(b, port, "start")
        assert r.returncode != 0 and r.stderr.strip().splitlines() == [f"error: {line}"], r.stderr
        assert instance.read_instance(b / ".daemon") is None and not instance.lock_held(b / ".daemon")
        left = {p.name for p in (b / ".daemon").iterdir()} if (b / ".daemon").exists() else set()
        assert left <= {"logs"}, left
        assert not [p for p in Path("/proc").glob("[0-9]*") if _runs_in(p, b)]
        assert instance.check_address("127.0.0.1", port, a_inst.secret) == "ours"  # A still serves

        # Every later command of B refuses instead of writing into A.
        for args in (("remember", "beta must not land in alpha"), ("recall", "alpha"), ("status",)):
            r = cli(b, port, *args)
            assert r.returncode != 0 and r.stderr.strip().splitlines() == [f"error: {line}"], (args, r.stderr)

        # The hook command: exit 0 (never break the harness), one line, nothing sent; a
        # session's transcript is kept on disk for B's own daemon.
        r = cli(
            b,
            port,
            "hook",
            "user-prompt-submit",
            "--harness",
            "claude-code",
            stdin=json.dumps({"session_id": "s1", "prompt": "what do we use for beta?", "cwd": str(tmp_path)}),
        )
        assert r.returncode == 0 and line in r.stderr, r.stderr
        r = cli(
            b,
            port,
            "hook",
            "session-end",
            "--harness",
            "claude-code",
            stdin=json.dumps(
                {
                    "session_id": "s2",
                    "cwd": str(tmp_path),
                    "turns": [
                        {"role": "user", "content": "beta decision: ship on friday"},
                        {"role": "assistant", "content": "noted"},
                    ],
                }
            ),
        )
        assert r.returncode == 0 and line in r.stderr and "transcript kept" in r.stderr, r.stderr

        # The MCP server of B (as a harness runs it): its tools answer with the refusal.
        async def store_via_mcp() -> str:
            params = StdioServerParameters(
                command=sys.executable,
                args=["-m", "signet.cli.entry", "mcp"],
                env={
                    "SIGNET_WORKSPACE": str(b),
                    "SIGNET_PORT": str(port),
                    "SIGNET_HOST": "127.0.0.1",
                    "PATH": os.environ.get("PATH", ""),
                },
            )
            async with Client(params) as c:
                res = await c.call_tool("memory_store", {"content": "beta via mcp"})
                assert res.is_error
                return json.dumps([getattr(x, "text", "") for x in res.content])

        assert "serves workspace" in anyio.run(store_via_mcp)

        # Nothing of B reached A's store.
        with httpx.Client(base_url=f"http://127.0.0.1:{port}") as c:
            contents = [m["content"] for m in c.get("/api/memories", params={"limit": 100}).json()["items"]]
        assert contents == ["alpha owns this store"]
    finally:
        assert cli(a, port, "stop").returncode == 0


def _runs_in(proc_dir: Path, root: Path) -> bool:
    """A Signet daemon process whose workspace is ``root``."""
    try:
        env = (proc_dir / "environ").read_bytes().split(b"\0")
        cmd = (proc_dir / "cmdline").read_bytes()
    except OSError:
        return False
    return b"signet.cli.entry" in cmd and f"SIGNET_WORKSPACE={root}".encode() in env


def test_a_port_held_by_another_program_and_a_slow_start_leave_nothing(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    setup(root)
    with socket.socket() as s:  # not Signet, not even HTTP
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        r = cli(root, port, "start")
        assert r.returncode != 0, r.stdout
        assert r.stderr.strip().splitlines() == [
            f"error: port {port} on 127.0.0.1 is taken by another program; use --port or SIGNET_PORT"
        ], r.stderr
    # A daemon that does not answer in time is stopped, not left to take the port later.
    port = free_port()
    r = cli(root, port, "start", "--wait", "0.05")
    assert r.returncode != 0 and "did not answer" in r.stderr and "it was stopped" in r.stderr, r.stderr
    assert not [p for p in Path("/proc").glob("[0-9]*") if _runs_in(p, root)]
    assert instance.read_instance(root / ".daemon") is None and not instance.lock_held(root / ".daemon")
    assert instance.check_address("127.0.0.1", port, None) == "none"


def test_the_health_proof_is_this_workspace_s(tmp_path: Path) -> None:
    root, port = tmp_path / "ws", free_port()
    setup(root)
    assert cli(root, port, "start").returncode == 0
    try:
        inst = instance.running(root / ".daemon")
        assert inst is not None
        assert (root / ".daemon" / "daemon.json").stat().st_mode & 0o777 == 0o600
        assert instance.check_address("127.0.0.1", port, inst.secret) == "ours"
        assert instance.check_address("127.0.0.1", port, "f" * 64) == "other"
        h = httpx.get(f"http://127.0.0.1:{port}/health", params={"challenge": "ab12"}).json()
        assert h == {"status": "ok", "proof": instance.proof(inst.secret, "ab12")}
        bad = httpx.get(f"http://127.0.0.1:{port}/health", params={"challenge": "not hex"})
        assert bad.status_code == 422 and "error" in bad.json()
        # A second daemon for the same workspace refuses to start (the lock is held).
        r = cli(root, free_port(), "daemon")
        assert r.returncode != 0 and "already serves" in r.stderr and str(inst.pid) in r.stderr
    finally:
        cli(root, port, "stop")


def test_a_team_daemon_does_not_name_its_workspace_to_another(tmp_path: Path) -> None:
    """In team mode /api/status needs a token, so the refusal does not name the workspace either
    (only /health is public): B's client is told "another workspace"."""
    a, b, port = tmp_path / "a", tmp_path / "b", free_port()
    setup(a)
    setup(b)
    write_config(Workspace(a), auth={"mode": "team"})
    assert cli(a, port, "start").returncode == 0
    try:
        line = f"port {port} serves another workspace, not {b}; use --port or SIGNET_PORT"
        r = cli(b, port, "start")
        assert r.returncode != 0 and r.stderr.strip().splitlines() == [f"error: {line}"], r.stderr
        r = cli(b, port, "remember", "beta must not land in alpha")
        assert r.returncode != 0 and r.stderr.strip().splitlines() == [f"error: {line}"], r.stderr
        refused = httpx.post(
            f"http://127.0.0.1:{port}/api/memory/remember",
            json={"content": "x"},
            headers={instance.WORKSPACE_HEADER: instance.workspace_digest(b)},
        )
        assert refused.status_code == 409 and refused.json()["code"] == "wrong_workspace"
        assert "workspace" not in refused.json() and str(a.resolve()) not in refused.text
    finally:
        assert cli(a, port, "stop").returncode == 0


def test_a_record_is_trusted_only_for_the_process_that_wrote_it(unrelated: subprocess.Popen[bytes]) -> None:
    """The pid and the kernel's start time name one process; a pid alone (a record without a
    start time on a machine that has /proc) names nobody."""
    me = instance.Instance(
        pid=os.getpid(),
        start=instance.process_start(os.getpid()),
        workspace="/w",
        host="127.0.0.1",
        port=1,
        secret="0" * 64,
        started_at=0.0,
    )
    assert me.start is not None and me.alive()
    reused = instance.Instance(**{**me.__dict__, "pid": unrelated.pid})  # same start time, another pid
    assert not reused.alive()
    assert not instance.Instance(**{**me.__dict__, "start": me.start + 1}).alive()
    assert not instance.Instance(**{**me.__dict__, "start": None}).alive()


def test_start_waits_for_a_daemon_migrating_an_older_store(tmp_path: Path) -> None:
    """A large store's backup and migration outlast --wait: start must wait for the busy
    daemon, not kill it (the migration would roll back, and every later start again)."""
    import sqlite3
    import threading

    from signet.store.database import connect
    from signet.store.migrations import MIGRATIONS, applied_versions, migrate

    root, port = tmp_path / "ws", free_port()
    setup(root)
    ws = Workspace(root)
    db = ws.database_path(ws.settings())
    for leftover in db.parent.glob(db.name + "*"):
        leftover.unlink()
    latest = max(m.version for m in MIGRATIONS)
    old = connect(db)
    migrate(old, [m for m in MIGRATIONS if m.version < latest])  # the store as the last release left it
    old.close()
    # Another connection holds the write lock: the migration cannot finish until it lets go,
    # like a migration of a large store that takes minutes.
    holder = sqlite3.connect(str(db), isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    env = {**os.environ, "SIGNET_WORKSPACE": str(root), "SIGNET_PORT": str(port), "HOME": str(tmp_path / "home")}
    # --wait must outlast the daemon's own start-up to the migration (imports, opening the
    # store: 1-3 s on a loaded machine), or start gives up before the daemon can say it migrates.
    wait_s = 5
    spawned = time.monotonic()
    proc = subprocess.Popen(
        [sys.executable, "-m", "signet.cli.entry", "start", "--wait", str(wait_s)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    said: list[str] = []
    reader = threading.Thread(target=lambda: said.extend(proc.stderr or []), daemon=True)
    reader.start()
    try:
        deadline = time.monotonic() + 60
        while not any("migrating the database" in line for line in said):
            assert proc.poll() is None, f"start gave up: {said}"
            assert time.monotonic() < deadline, f"start never said it waits for the migration: {said}"
            time.sleep(0.1)
        time.sleep(max(0.0, spawned + wait_s + 1.5 - time.monotonic()))  # well past --wait: still waiting
        assert proc.poll() is None, said
        assert instance.migrating(root / ".daemon", _daemon_pid(root)) == [latest]
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    out, _ = proc.communicate(timeout=120)
    reader.join(timeout=5)
    assert proc.returncode == 0, said
    assert "signet daemon started" in out
    assert [line for line in said if line.strip()] == [
        f"the daemon is backing up and migrating the database to schema {latest} ({root}); a large store "
        "takes minutes, waiting (Ctrl-C leaves it running)\n"
    ]
    assert not (root / ".daemon" / instance.MIGRATING_FILE).exists()
    check = connect(db, readonly=True)
    try:
        assert latest in applied_versions(check)
    finally:
        check.close()
    assert list((db.parent / "backups").glob("*pre-migration*")), "the store was backed up before the migration"
    r = cli(root, port, "stop")
    assert r.returncode == 0, r.stderr


def _daemon_pid(root: Path) -> int:
    """The pid of the `signet daemon` process serving ``root`` (not yet published)."""
    for proc_dir in Path("/proc").glob("[0-9]*"):
        if _runs_in(proc_dir, root):
            try:
                cmd = (proc_dir / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if b"daemon" in cmd:
                return int(proc_dir.name)
    raise AssertionError("no daemon process")
