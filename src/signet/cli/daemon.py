"""Daemon lifecycle: daemon (foreground), start, stop, restart, status (logs: signet.cli.logs)."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Annotated

import typer

from signet import instance
from signet.address import base_url, resolve_address
from signet.cli.app import app
from signet.errors import SignetError, WrongWorkspace
from signet.workspace import Workspace

HostOpt = Annotated[str | None, typer.Option("--host", help="Bind/connect address (env SIGNET_HOST).")]
PortOpt = Annotated[int | None, typer.Option("--port", help="Port (env SIGNET_PORT).", min=1, max=65535)]


AcceptEmpty = Annotated[
    bool,
    typer.Option(
        "--accept-empty-database",
        help="Start although the database that held memories is now missing or empty (a new, empty store).",
    ),
]


StderrLevel = Annotated[
    str,
    typer.Option(
        "--stderr-level",
        hidden=True,
        help="Least level written to stderr (`signet start` asks for warning: its stderr is a file).",
    ),
]


@app.command()
def daemon(
    host: HostOpt = None,
    port: PortOpt = None,
    accept_empty_database: AcceptEmpty = False,
    stderr_level: StderrLevel = "info",
) -> None:
    """Run the daemon in the foreground (logs to stderr and the workspace log)."""
    from signet.daemon.server import serve
    from signet.ops.logs import parse_level

    try:
        level = parse_level(stderr_level)
    except ValueError as exc:
        raise SignetError(str(exc)) from None
    ws = Workspace.from_env()
    h, p = resolve_address(host, port)
    serve(ws, h, p, stderr_level=level, accept_empty_database=accept_empty_database)


EXIT_GRACE_S = 5.0
"""How long `signet start` lets a daemon that stopped answering finish exiting before it calls
whatever answers at the address another program."""


def _abandon(proc: subprocess.Popen[bytes], ws: Workspace) -> None:
    """Stop a daemon this start spawned and gave up on, with anything it started, and remove
    the files it left: a failed start leaves no daemon that ``signet stop`` does not know."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
    instance.remove_stale(ws.daemon_dir)


def _port_taken(host: str, port: int, ws: Workspace) -> SignetError:
    """Why ``host:port`` is not ours: another workspace's daemon (which names its workspace to
    callers on this machine) or another program."""
    from signet.cli.client import DaemonClient

    taken = SignetError(f"port {port} on {host} is taken by another program; use --port or SIGNET_PORT")
    client = DaemonClient(base_url(host, port), timeout=3.0, workspace=ws.root)
    try:
        client.health()
    except WrongWorkspace as exc:
        return exc
    except SignetError:  # not a Signet daemon that answers
        return taken
    finally:
        client.close()
    return taken


@app.command()
def start(
    host: HostOpt = None,
    port: PortOpt = None,
    wait: Annotated[
        float,
        typer.Option(help="Seconds to wait for the daemon to answer (longer while it migrates an older database)."),
    ] = 20.0,
    accept_empty_database: AcceptEmpty = False,
) -> None:
    """Start the daemon in the background (identity in .daemon/daemon.json, logs in .daemon/logs/).

    Done only when the daemon at the address proves it is this workspace's (signet.instance) and
    has started (``/health`` ok or degraded, not ``starting``: it listens before its app is
    built, signet.daemon.boot); a start that fails stops what it spawned and leaves no daemon
    behind."""
    ws = Workspace.from_env()
    h, p = resolve_address(host, port)
    from signet.auth.bind import check_bind

    check_bind(h, ws.settings())  # refuse a non-loopback bind in local mode before spawning
    from signet.daemon.server import preflight

    preflight(ws)  # a full disk or a read-only workspace: said here, in one line, before spawning
    url = base_url(h, p)
    current = instance.running(ws.daemon_dir)
    if current is not None:
        if instance.check_address(current.host, current.port, current.secret) == "ours":
            typer.echo(
                f"signet daemon already running (pid {current.pid}) at "
                f"{base_url(current.host, current.port)}; workspace {ws.root}"
            )
            return
        raise SignetError(
            f"this workspace's daemon (pid {current.pid}) holds its lock but does not answer at "
            f"{current.host}:{current.port}; see `signet logs`, or stop it with `signet stop`"
        )
    instance.remove_stale(ws.daemon_dir)  # a dead daemon's record: its pid is never signalled
    if instance.check_address(h, p, None) != "none":
        raise _port_taken(h, p, ws)
    ws.logs_dir.mkdir(parents=True, exist_ok=True)
    out = ws.logs_dir / "daemon.out"
    with out.open("ab") as fh:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "signet.cli.entry",
                "daemon",
                "--host",
                h,
                "--port",
                str(p),
                # daemon.out keeps what goes wrong (start-up failures, crashes), not a second,
                # unrotated copy of the log, which is in .daemon/logs/daemon-DAY.log
                "--stderr-level",
                "warning",
                *(["--accept-empty-database"] if accept_empty_database else []),
            ],
            stdout=fh,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            env={**os.environ, "SIGNET_WORKSPACE": str(ws.root)},
        )
    deadline = time.monotonic() + wait
    told = False
    seen: str | None = None  # what its /health said last, once it answered with the proof
    while True:
        code = proc.poll()
        if code is not None:
            instance.remove_stale(ws.daemon_dir)
            if instance.check_address(h, p, None) != "none":  # it lost the port to someone else
                raise _port_taken(h, p, ws)
            tail = _tail(out, 5)
            raise SignetError(
                f"the daemon exited with {code} before it started at {url}"
                + (f"; last log lines: {tail}" if tail else f"; see {out}")
            )
        mine = instance.read_instance(ws.daemon_dir)
        if mine is not None and mine.pid == proc.pid:
            answer, seen = instance.check_health(h, p, mine.secret)
            if answer == "ours" and seen in ("ok", "degraded"):
                break
            if answer == "other":
                # A daemon whose start failed closes its connections as it exits (signet.daemon.boot):
                # a dropped connection is then its exit, reported above with its line, not a stranger.
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(timeout=EXIT_GRACE_S)
                if proc.poll() is not None:
                    continue
                _abandon(proc, ws)
                raise _port_taken(h, p, ws)
        if time.monotonic() > deadline:
            versions = instance.migrating(ws.daemon_dir, proc.pid)
            if versions is not None:  # busy backing up and migrating a large store, not hung
                if not told:
                    typer.echo(
                        f"the daemon is backing up and migrating the database to schema {max(versions)} "
                        f"({ws.root}); a large store takes minutes, waiting (Ctrl-C leaves it running)",
                        err=True,
                    )
                    told = True
                deadline = time.monotonic() + wait  # the rest of the start-up gets its own --wait
                time.sleep(0.2)
                continue
            _abandon(proc, ws)
            tail = _tail(out, 5)
            what = "finish starting" if seen == "starting" else "answer"
            raise SignetError(
                f"the daemon did not {what} at {url} within {wait:g}s; it was stopped"
                + (f"; last log lines: {tail}" if tail else f"; see {out}")
            )
        time.sleep(0.1)
    typer.echo(f"signet daemon started (pid {proc.pid}) at {url}; workspace {ws.root}")


def _tail(path: Path, n: int) -> str:
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except FileNotFoundError:
        return ""
    return " | ".join(lines[-n:])


@app.command()
def stop(timeout: Annotated[float, typer.Option(help="Seconds to wait before SIGKILL.")] = 15.0) -> None:
    """Stop this workspace's daemon: only the process that holds the workspace's lock and
    still has the start time it recorded (a pid file alone is never trusted)."""
    ws = Workspace.from_env()
    inst = instance.running(ws.daemon_dir)
    if inst is None:
        stale = instance.remove_stale(ws.daemon_dir)
        note = (
            f" (removed the record of pid {stale.pid}, which is no longer Signet's daemon; it was not signalled)"
            if stale is not None
            else ""
        )
        typer.echo(f"signet daemon is not running{note}")
        return
    os.kill(inst.pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while instance.lock_held(ws.daemon_dir) and inst.alive() and time.monotonic() < deadline:
        time.sleep(0.1)
    if inst.alive():  # still the same process (pid and start time): it did not stop in time
        os.kill(inst.pid, signal.SIGKILL)
    deadline = time.monotonic() + 10  # its lock goes with its last thread
    while instance.lock_held(ws.daemon_dir) and time.monotonic() < deadline:
        time.sleep(0.05)
    instance.remove_stale(ws.daemon_dir)
    typer.echo(f"signet daemon stopped (pid {inst.pid})")


@app.command()
def restart(host: HostOpt = None, port: PortOpt = None) -> None:
    """Stop, then start the daemon."""
    stop()
    start(host=host, port=port)


@app.command()
def status(
    host: HostOpt = None,
    port: PortOpt = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the raw status JSON.")] = False,
) -> None:
    """Daemon status: version, memories, embedding coverage, vector search (or that it is
    still starting: it answers /health before its app is built)."""
    from signet.cli.client import DaemonClient

    client = DaemonClient(base_url(host, port))
    if not as_json and client.health().status == "starting":  # --json waits for the app instead
        typer.echo(f"signet daemon at {client.url} is starting (building its app); ask again in a moment")
        return
    data = client.status().model_dump(mode="json")
    if as_json:
        typer.echo(json.dumps(data, indent=2))
        return
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    t = Table(show_header=False, box=None)
    emb = data["embedding"]
    mem = data["memories"]
    t.add_row("daemon", f"{client.url} pid {data['pid']} v{data['version']} up {data['uptime_s']:.0f}s")
    t.add_row("workspace", data["workspace"])
    t.add_row("memories", f"{mem['active']} active, {mem['deleted']} deleted, {mem['pinned']} pinned")
    runtime = f" via {emb['backend']}" if emb.get("backend") else ""
    t.add_row(
        "embedding",
        f"{emb['provider']}:{emb['model']}{runtime} {emb['state']}, "
        f"{emb['embedded']}/{emb['total']} embedded ({emb['coverage']:.0%})",
    )
    vs = data["vector_search"]
    t.add_row("vector search", "on" if vs["available"] else f"[bold red]OFF[/] ({vs['reason']})")
    kw = data.get("keyword_index") or {"state": "off"}
    rows = f"{kw['rows']:,} row" + ("" if kw["rows"] == 1 else "s")
    detail = f", {rows}, {kw['bytes'] / 2**20:.1f} MiB" if kw["state"] in ("ready", "drifted") else ""
    t.add_row(
        "keyword index", f"in memory, {kw['state']}{detail}" if kw["state"] != "off" else "FTS5 (in-memory copy off)"
    )
    intake = data.get("intake")
    if intake and (intake["pending"] or intake["failed"]):  # only when there is something to say
        failed = f", {intake['failed']} could not be stored" if intake["failed"] else ""
        t.add_row(
            "remember intake",
            f"{intake['pending']:,} accepted, being stored (oldest {intake['oldest_pending_s']:.1f} s){failed}",
        )
    store = data.get("store")
    if store:
        pool = store["pool"]
        who = f" as {store['user']}" if store.get("user") else ""
        t.add_row(
            "store",
            f"{store['backend']} {escape(store['location'])}{who}, connections {pool['in_use']} in use "
            f"of {pool['open']} open (max {pool['max']}), {pool['waiting']} waiting",
        )
    st = data.get("storage")
    if st:
        ratio = f", {st['amplification']:.1f}x its text + vectors" if st["amplification"] else ""
        free = f", {st['free_bytes'] / 2**20:.1f} MiB free" if st["free_bytes"] >= 2**20 else ""
        # only a SQLite file keeps purged pages; PostgreSQL's autovacuum is the server's
        hint = (
            " (signet repair --vacuum gives purged space back)"
            if st["auto_vacuum"] not in ("incremental", "postgres")
            else ""
        )
        t.add_row("database", f"{st['file_bytes'] / 2**20:.1f} MiB{ratio}{free}{hint}")
    llm = data.get("llm")
    if llm:
        model = f":{llm['model']}" if llm["model"] else ""
        line = f"{llm['provider']}{model} {llm['state']}"
        if llm["waiting_jobs"]:
            line += f", {llm['waiting_jobs']} jobs {llm['waiting_for'] or 'waiting'}"
        t.add_row("LLM", line)
        if llm["reason"]:
            t.add_row("", f"[yellow]{escape(llm['reason'])}[/]")
        for key, use in (llm.get("budget") or {}).items():
            if isinstance(use, dict) and use.get("limit"):
                t.add_row("", f"budget {key.replace('_', ' ')}: {use['used']:,}/{use['limit']:,}")
    for w in data["warnings"]:
        t.add_row("[yellow]warning[/]", w)
    Console().print(t)
