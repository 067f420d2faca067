"""Running the daemon in the foreground: logging, pid file, uvicorn.

Only what listening needs is imported here and done before uvicorn listens (the settings, the
lock, the published identity, the log); the app is built behind the boot shell
(:mod:`signet.daemon.boot`), which answers ``/health`` with ``starting`` meanwhile."""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING

from signet.errors import SignetError, StorageError, StorageFull, free_mb
from signet.instance import DaemonLock, clear_migrating, mark_migrating, running, workspace_digest
from signet.workspace import Workspace

if TYPE_CHECKING:
    from signet.daemon.boot import Built, StderrGate

log = logging.getLogger("signet")


def configure_logging(
    ws: Workspace, *, to_stderr: bool = True, stderr_level: int = logging.INFO, stderr_gate: StderrGate | None = None
) -> Path:
    """JSON Lines into the workspace log (size-rotated, bounded: signet.ops.logs), the live
    broker behind ``/api/logs`` and ``/api/logs/stream``, and readable lines on stderr (through
    ``stderr_gate`` while the daemon starts)."""
    from signet.ops.logs import BROKER, TextFormatter, WorkspaceLogHandler

    cfg = ws.settings().daemon
    root = logging.getLogger()
    root.setLevel(logging.INFO)
    # A log line that cannot be written (full disk) must not print a traceback per line, or
    # crash anything: the condition is reported through /health instead.
    logging.raiseExceptions = False
    # httpx logs every request at INFO with its full URL (a provider's key may ride in the query
    # string), and the MCP tools' in-process calls would fill the log with them.
    for chatty in ("httpx", "httpcore"):
        logging.getLogger(chatty).setLevel(logging.WARNING)
    file_handler = WorkspaceLogHandler(ws.logs_dir, max_bytes=int(cfg.log_max_mb * 2**20), files=cfg.log_files)
    root.addHandler(file_handler)
    root.addHandler(BROKER)
    if to_stderr:
        stream = logging.StreamHandler()
        stream.setFormatter(TextFormatter())
        stream.setLevel(stderr_level)
        if stderr_gate is not None:
            stream.addFilter(stderr_gate)
            stderr_gate.handler = stream
        root.addHandler(stream)
    return Path(file_handler.baseFilename)


def write_pid(ws: Workspace) -> None:
    ws.daemon_dir.mkdir(parents=True, exist_ok=True)
    tmp = ws.pid_path.with_suffix(".tmp")
    tmp.write_text(str(os.getpid()), encoding="utf-8")
    tmp.replace(ws.pid_path)


def remove_pid(ws: Workspace) -> None:
    try:
        if ws.pid_path.read_text(encoding="utf-8").strip() == str(os.getpid()):
            ws.pid_path.unlink()
    except FileNotFoundError:
        return


MIN_FREE_MB = 16.0
"""Below this much free space the daemon does not start: SQLite needs room for its journal and
the log needs room for its lines, and a daemon that starts only to fail every write helps nobody."""


def preflight(ws: Workspace) -> None:
    """Refuse to start, in one line, on a workspace that cannot be written."""
    ws.root.mkdir(parents=True, exist_ok=True)
    free = free_mb(ws.root)
    if free < MIN_FREE_MB:
        raise StorageFull(
            f"disk full ({free:.1f} MB free) at {ws.root}; the daemon needs {MIN_FREE_MB:g} MB to "
            "start: free some space and start again"
        )
    if not os.access(ws.root, os.W_OK) or _read_only_fs(ws.root):
        raise StorageError(
            f"the workspace {ws.root} is read-only; check its permissions and mount, then start again",
            code="storage_read_only",
        )


def _read_only_fs(path: Path) -> bool:
    try:
        return bool(os.statvfs(path).f_flag & os.ST_RDONLY)
    except OSError:
        return False


def serve(
    ws: Workspace,
    host: str,
    port: int,
    *,
    log_to_stderr: bool = True,
    stderr_level: int = logging.INFO,
    accept_empty_database: bool = False,
) -> None:
    """Run until SIGINT/SIGTERM. The daemon listens before its app is built (signet.daemon.boot):
    ``/health`` says ``starting`` until the app and its runtime have started, and the model and
    the indexes load in the background after that.

    The daemon holds the workspace's lock for its lifetime and publishes its identity
    (signet.instance) before it listens, so even its ``starting`` answer carries the proof: a
    second daemon for the same workspace refuses to start, and clients trust this process only
    through the lock and the /health proof, never a bare pid file. A start that fails after the
    daemon listens (an emptied or unreadable database, an unreachable PostgreSQL) raises here,
    once uvicorn has stopped, with the same one line as before it listened."""
    import uvicorn

    from signet.auth.bind import LOOPBACK_NAMES, check_bind
    from signet.daemon import connections
    from signet.daemon.boot import BootShell, Built, StderrGate

    settings = ws.settings()
    check_bind(host, settings)  # local mode (no tokens) listens on loopback only
    preflight(ws)
    lock = DaemonLock(ws.daemon_dir)
    if not lock.acquire():
        inst = running(ws.daemon_dir)
        where = f" (pid {inst.pid} at {inst.host}:{inst.port})" if inst is not None else ""
        raise SignetError(
            f"a Signet daemon already serves {ws.root}{where}; stop it first with `signet stop`", code="already_running"
        )
    gate = StderrGate() if log_to_stderr else None
    configure_logging(ws, to_stderr=log_to_stderr, stderr_level=stderr_level, stderr_gate=gate)
    # Published before the daemon listens: its "starting" answer proves whose daemon it is.
    published = lock.publish(ws.root, host, port)
    write_pid(ws)  # informational only (other tools read it); nothing in Signet trusts it

    released = False

    def release() -> None:
        # uvicorn re-raises SIGTERM after shutdown, so a ``finally`` after run() may never
        # execute: clean up from the lifespan, which always completes first (also when the
        # port turns out to be taken: uvicorn shuts the lifespan down, then exits). When the
        # runtime ran, last of all (Runtime.after_stop): `signet stop` waits for the lock, so it
        # must not return before the memory count is recorded and the database closed.
        nonlocal released
        if released:
            return
        released = True
        remove_pid(ws)
        lock.release()
        log.info("signet daemon stopped")

    def build() -> Built:
        """In the boot shell's thread, while the daemon answers ``starting``."""
        from signet.daemon.app import create_app
        from signet.runtime import Runtime
        from signet.secrets.store import reader as secret_reader
        from signet.store.choose import build_store

        # bind_host: a name the Host header may carry (signet.auth)
        runtime = Runtime(ws, settings, bind_host=host, accept_empty_database=accept_empty_database)
        runtime.instance = published
        runtime.check_store()  # an emptied database: one line, and nothing started
        # The same store as the runtime's, opened once alone: a SQLite migration backs up first; a
        # PostgreSQL server that cannot be reached or refuses the password is one line here.
        probe = build_store(ws, runtime.settings, secret_reader(ws.secrets_dir, runtime.settings.secrets.key_store))
        # A large store's backup and migration take minutes: the marker tells `signet start` this
        # daemon is busy, not hung (killing it would roll the migration back, every start again).
        probe.on_migrate = lambda versions: mark_migrating(ws.daemon_dir, versions)
        try:
            probe.open()  # a database that cannot be opened (full disk, damaged beyond opening): one line
            probe.close()
        finally:
            clear_migrating(ws.daemon_dir)
        runtime.after_stop.append(lambda _: release())
        # The vector and keyword indexes load once the app has started (Runtime.defer_loaders):
        # their threads read every memory and would slow the start itself.
        runtime.defer_loaders = True
        return Built(create_app(runtime), runtime.start_loaders)

    shell = BootShell(
        build,
        secret=published.secret,
        workspace_digest=workspace_digest(ws.root),
        hosts=(*LOOPBACK_NAMES, host),
        cleanup=release,
        gate=gate,
    )
    cfg = settings.daemon
    limits = connections.configure(
        connections.Limits(
            header_timeout=cfg.header_timeout_s,
            body_timeout=cfg.body_timeout_s,
            keep_alive=cfg.keep_alive_s,
            max_connections=cfg.max_connections,
            max_requests=cfg.max_requests,
        )
    )
    log.info("signet daemon starting on http://%s:%d (workspace %s)", host, port, ws.root)
    config = uvicorn.Config(
        shell,
        host=host,
        port=port,
        log_config=None,
        access_log=False,
        timeout_graceful_shutdown=10,
        http=connections.GuardedProtocol,
        timeout_keep_alive=limits.keep_alive,
    )
    server = uvicorn.Server(config)
    shell.server = server
    server.run()
    if shell.error is not None:  # the build or the app's start-up failed: uvicorn has stopped
        release()
        raise shell.error
