"""Which daemon serves a workspace, known for sure (not guessed from a pid file).

For its whole life the daemon holds an exclusive ``flock`` on ``.daemon/daemon.lock`` and
publishes ``.daemon/daemon.json`` (mode 0600): its pid, the kernel's start time of that pid,
the workspace, the address it listens on and a random secret. A client trusts a pid only
when the lock is held *and* that pid still has the recorded start time (pids are reused
after a reboot); it trusts an address only when the daemon there answers
``/health?challenge=…`` with ``HMAC(secret, challenge)``, which only the process that wrote
this workspace's file can compute.

Every client that talks to a daemon on loopback (CLI, hook command, SDK, MCP server) also
sends :data:`WORKSPACE_HEADER`, a digest of its workspace path; a daemon serving another
workspace refuses the request (409 ``wrong_workspace``) instead of storing one workspace's
memories in another. Standard library only: the hook command imports this before every
prompt.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import hmac
import http.client
import ipaddress
import json
import os
import secrets
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Literal

LOCK_FILE = "daemon.lock"
INSTANCE_FILE = "daemon.json"
MIGRATING_FILE = "migrating.json"
"""Written by a starting daemon while it backs up and migrates an older database: `signet
start` waits for it instead of giving up on a daemon that is busy, not hung."""
WORKSPACE_HEADER = "X-Signet-Workspace"
CHALLENGE_MAX = 128
"""Longest ``challenge`` /health accepts (hex characters)."""


def workspace_digest(root: Path) -> str:
    """What clients send in :data:`WORKSPACE_HEADER`: a digest, so the path itself never
    travels in a request."""
    return hashlib.sha256(str(root.expanduser().resolve()).encode("utf-8")).hexdigest()[:32]


def workspace_header(host: str, root: Path) -> dict[str, str]:
    """What a client working in ``root`` sends to the daemon at ``host``: the workspace digest
    for a daemon on this machine, nothing for a remote (team) daemon, which serves another
    workspace by design, or when ``SIGNET_SKIP_WORKSPACE_CHECK`` is set."""
    if not is_loopback(host) or os.environ.get("SIGNET_SKIP_WORKSPACE_CHECK"):
        return {}
    return {WORKSPACE_HEADER: workspace_digest(root)}


def proof(secret: str, challenge: str) -> str:
    return hmac.new(secret.encode("utf-8"), challenge.encode("utf-8"), hashlib.sha256).hexdigest()


def process_start(pid: int) -> int | None:
    """The kernel's start time of ``pid`` (clock ticks since boot), None if unknown or gone
    (a zombie, which nobody may have reaped yet, counts as gone).

    A pid and its start time name one process: a reused pid has another start time."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
    except OSError:
        return None
    try:
        fields = stat.rsplit(")", 1)[1].split()
        return None if fields[0] in ("Z", "X") else int(fields[19])
    except (IndexError, ValueError):
        return None


def is_loopback(host: str) -> bool:
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


@dataclass(frozen=True)
class Instance:
    """What a running daemon publishes about itself in ``daemon.json``."""

    pid: int
    start: int | None
    workspace: str
    host: str
    port: int
    secret: str
    started_at: float

    def alive(self) -> bool:
        """The recorded process is still the one that wrote the file.

        Where the kernel tells start times (/proc), the pid must still have the recorded one. A
        daemon that could not record one (no /proc, e.g. macOS) is judged by its pid alone:
        callers ask only while the workspace's lock is held, and the lock holder is the process
        that wrote the file, so a reused pid can fool this only in the instant between a killed
        daemon's successor taking the lock and publishing its own file."""
        if self.start is not None:
            return process_start(self.pid) == self.start
        if Path("/proc/self/stat").exists():  # /proc works here, so the writer had no start time: not ours
            return False
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:  # exists, owned by someone else
            return True
        return True


class DaemonLock:
    """The daemon's side: the lock, held for the process's lifetime, and the published file."""

    def __init__(self, daemon_dir: Path) -> None:
        self.dir = daemon_dir
        self._fd: int | None = None
        self.instance: Instance | None = None

    def acquire(self, wait: float = 2.0) -> bool:
        """Take the lock (retrying briefly: a client may be probing it); False when another
        live daemon holds it."""
        self.dir.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.dir / LOCK_FILE, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        deadline = time.monotonic() + wait
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as exc:
                if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN) or time.monotonic() > deadline:
                    os.close(fd)
                    return False
                time.sleep(0.05)
                continue
            self._fd = fd
            return True

    def publish(self, workspace: Path, host: str, port: int) -> Instance:
        """Write ``daemon.json`` (0600, atomically) for this process."""
        pid = os.getpid()
        inst = Instance(
            pid=pid,
            start=process_start(pid),
            workspace=str(workspace.expanduser().resolve()),
            host=host,
            port=port,
            secret=secrets.token_hex(32),
            started_at=time.time(),
        )
        tmp = self.dir / f".{INSTANCE_FILE}.{pid}.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(asdict(inst), fh)
        tmp.replace(self.dir / INSTANCE_FILE)
        self.instance = inst
        return inst

    def release(self) -> None:
        """Remove the file (if it is still ours) and drop the lock."""
        if self.instance is not None:
            current = read_instance(self.dir)
            if current is not None and current.pid == self.instance.pid:
                (self.dir / INSTANCE_FILE).unlink(missing_ok=True)
            self.instance = None
        if self._fd is not None:
            os.close(self._fd)  # closing the descriptor releases the flock
            self._fd = None


def mark_migrating(daemon_dir: Path, versions: list[int]) -> None:
    """Say (for `signet start`) that this process is backing up and migrating the database."""
    daemon_dir.mkdir(parents=True, exist_ok=True)
    tmp = daemon_dir / f".{MIGRATING_FILE}.{os.getpid()}.tmp"
    tmp.write_text(json.dumps({"pid": os.getpid(), "versions": versions, "since": time.time()}), encoding="utf-8")
    tmp.replace(daemon_dir / MIGRATING_FILE)


def clear_migrating(daemon_dir: Path) -> None:
    """Remove this process's migration marker (another process's is left alone)."""
    if migrating(daemon_dir, os.getpid()) is not None:
        (daemon_dir / MIGRATING_FILE).unlink(missing_ok=True)


def migrating(daemon_dir: Path, pid: int) -> list[int] | None:
    """The schema versions process ``pid`` is migrating the database to, or None when it is
    not migrating (no marker, or a marker left by another process)."""
    try:
        data = json.loads((daemon_dir / MIGRATING_FILE).read_text(encoding="utf-8"))
        if int(data["pid"]) != pid:
            return None
        return [int(v) for v in data["versions"]]
    except (OSError, ValueError, TypeError, KeyError):
        return None


def read_instance(daemon_dir: Path) -> Instance | None:
    try:
        data = json.loads((daemon_dir / INSTANCE_FILE).read_text(encoding="utf-8"))
        return Instance(**{k: data[k] for k in Instance.__dataclass_fields__})
    except (OSError, ValueError, TypeError, KeyError):
        return None


def lock_held(daemon_dir: Path) -> bool:
    """Whether a live process holds the daemon lock (probed with a shared, non-blocking lock)."""
    try:
        fd = os.open(daemon_dir / LOCK_FILE, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError as exc:
        return exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN)
    finally:
        os.close(fd)
    return False


def running(daemon_dir: Path) -> Instance | None:
    """This workspace's daemon: the lock is held and the recorded pid is the process that
    wrote the file. None otherwise (files left by a killed daemon, a reused pid)."""
    inst = read_instance(daemon_dir)
    if inst is None or not lock_held(daemon_dir) or not inst.alive():
        return None
    return inst


def remove_stale(daemon_dir: Path) -> Instance | None:
    """Delete ``daemon.json`` and ``pid`` when no daemon holds the lock; returns what the stale
    file said (so the caller can say which pid it did *not* signal)."""
    if lock_held(daemon_dir):
        return None
    inst = read_instance(daemon_dir)
    for name in (INSTANCE_FILE, "pid"):
        with contextlib.suppress(FileNotFoundError):
            (daemon_dir / name).unlink()
    return inst


Answer = Literal["ours", "other", "none"]


def check_address(host: str, port: int, secret: str | None, *, timeout: float = 2.0) -> Answer:
    """Who answers at ``host:port``: ``ours`` (a valid proof for ``secret``), ``other`` (a
    daemon of another workspace, or any other program), or ``none`` (nothing listens)."""
    return check_health(host, port, secret, timeout=timeout)[0]


def check_health(host: str, port: int, secret: str | None, *, timeout: float = 2.0) -> tuple[Answer, str | None]:
    """:func:`check_address`, and the status the daemon gave: ``ok`` or ``degraded`` once it
    serves, ``starting`` while it builds its app (signet.daemon.boot); None without one (a start
    that failed answers 503 with its error, and the proof)."""
    challenge = secrets.token_hex(16)
    conn = http.client.HTTPConnection(host.strip("[]"), port, timeout=timeout)
    try:
        conn.request("GET", f"/health?challenge={challenge}")
        resp = conn.getresponse()
        body = resp.read(65536)
    except ConnectionRefusedError:
        return "none", None
    except (OSError, http.client.HTTPException):
        return "other", None
    finally:
        conn.close()
    try:
        data = json.loads(body)
    except ValueError:
        return "other", None
    if not isinstance(data, dict):
        return "other", None
    got, status = data.get("proof"), data.get("status")
    if secret is not None and isinstance(got, str) and hmac.compare_digest(got, proof(secret, challenge)):
        return "ours", status if isinstance(status, str) else None
    return "other", None


def wrong_workspace_message(port: int, served: str | None, mine: Path) -> str:
    """The one line every client prints when its port serves another workspace."""
    other = f"workspace {served}" if served else "another workspace"
    return f"port {port} serves {other}, not {mine}; use --port or SIGNET_PORT"
