"""Daemon lifecycle: daemon (foreground), start, stop, restart, status, logs."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Annotated

import typer

from signet.address import base_url, resolve_address
from signet.cli.app import app
from signet.cli.client import DaemonClient
from signet.errors import DaemonUnavailable, SignetError
from signet.workspace import Workspace

HostOpt = Annotated[str | None, typer.Option("--host", help="Bind/connect address (env SIGNET_HOST).")]
PortOpt = Annotated[int | None, typer.Option("--port", help="Port (env SIGNET_PORT).", min=1, max=65535)]


def _pid(ws: Workspace) -> int | None:
    try:
        pid = int(ws.pid_path.read_text(encoding="utf-8").strip())
    except (FileNotFoundError, ValueError):
        return None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    except PermissionError:
        return pid
    return pid


@app.command()
def daemon(host: HostOpt = None, port: PortOpt = None) -> None:
    """Run the daemon in the foreground (logs to stderr and the workspace log)."""
    from signet.daemon.server import serve

    ws = Workspace.from_env()
    h, p = resolve_address(host, port)
    serve(ws, h, p)


def _wait_healthy(url: str, timeout: float) -> bool:
    client = DaemonClient(url, timeout=1.0)
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            try:
                client.get("/health")
                return True
            except DaemonUnavailable:
                time.sleep(0.1)
        return False
    finally:
        client.close()


@app.command()
def start(
    host: HostOpt = None, port: PortOpt = None,
    wait: Annotated[float, typer.Option(help="Seconds to wait for /health.")] = 20.0,
) -> None:
    """Start the daemon in the background (pid in .daemon/pid, logs in .daemon/logs/)."""
    ws = Workspace.from_env()
    running = _pid(ws)
    h, p = resolve_address(host, port)
    from signet.auth.install import check_bind

    check_bind(h, ws.settings())  # refuse a non-loopback bind in local mode before spawning
    url = base_url(h, p)
    if running is not None:
        typer.echo(f"signet daemon already running (pid {running}) at {url}")
        return
    ws.logs_dir.mkdir(parents=True, exist_ok=True)
    out = ws.logs_dir / "daemon.out"
    with out.open("ab") as fh:
        proc = subprocess.Popen(
            [sys.executable, "-m", "signet.cli.main", "daemon", "--host", h, "--port", str(p)],
            stdout=fh, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
            env={**os.environ, "SIGNET_WORKSPACE": str(ws.root)},
        )
    if not _wait_healthy(url, wait):
        code = proc.poll()
        tail = _tail(out, 5)
        raise SignetError(
            f"the daemon did not become healthy at {url}"
            + (f" (exited with {code})" if code is not None else "")
            + (f"; last log lines: {tail}" if tail else f"; see {out}")
        )
    typer.echo(f"signet daemon started (pid {proc.pid}) at {url}; workspace {ws.root}")


def _tail(path: Path, n: int) -> str:
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except FileNotFoundError:
        return ""
    return " | ".join(lines[-n:])


@app.command()
def stop(timeout: Annotated[float, typer.Option(help="Seconds to wait before SIGKILL.")] = 15.0) -> None:
    """Stop the background daemon."""
    ws = Workspace.from_env()
    pid = _pid(ws)
    if pid is None:
        typer.echo("signet daemon is not running")
        return
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.1)
    else:
        os.kill(pid, signal.SIGKILL)
    ws.pid_path.unlink(missing_ok=True)
    typer.echo(f"signet daemon stopped (pid {pid})")


@app.command()
def restart(host: HostOpt = None, port: PortOpt = None) -> None:
    """Stop, then start the daemon."""
    stop()
    start(host=host, port=port)


@app.command()
def status(
    host: HostOpt = None, port: PortOpt = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the raw status JSON.")] = False,
) -> None:
    """Daemon status: version, memories, embedding coverage, vector search."""
    client = DaemonClient(base_url(host, port))
    data = client.get("/api/status")
    if as_json:
        typer.echo(json.dumps(data, indent=2))
        return
    from rich.console import Console
    from rich.table import Table

    t = Table(show_header=False, box=None)
    emb = data["embedding"]
    mem = data["memories"]
    t.add_row("daemon", f"{client.url} pid {data['pid']} v{data['version']} up {data['uptime_s']:.0f}s")
    t.add_row("workspace", data["workspace"])
    t.add_row("memories", f"{mem['active']} active, {mem['deleted']} deleted, {mem['pinned']} pinned")
    runtime = f" via {emb['backend']}" if emb.get("backend") else ""
    t.add_row("embedding", f"{emb['provider']}:{emb['model']}{runtime} {emb['state']}, "
              f"{emb['embedded']}/{emb['total']} embedded ({emb['coverage']:.0%})")
    vs = data["vector_search"]
    t.add_row("vector search", "on" if vs["available"] else f"[bold red]OFF[/] ({vs['reason']})")
    kw = data.get("keyword_index") or {"state": "off"}
    rows = f"{kw['rows']:,} row" + ("" if kw["rows"] == 1 else "s")
    detail = f", {rows}, {kw['bytes'] / 2**20:.1f} MiB" if kw["state"] in ("ready", "drifted") else ""
    t.add_row("keyword index", f"in memory, {kw['state']}{detail}" if kw["state"] != "off" else "FTS5 (in-memory copy off)")
    for w in data["warnings"]:
        t.add_row("[yellow]warning[/]", w)
    Console().print(t)


@app.command()
def logs(
    lines: Annotated[int, typer.Option("-n", "--lines", min=1)] = 50,
    follow: Annotated[bool, typer.Option("-f", "--follow")] = False,
) -> None:
    """Show today's daemon log."""
    ws = Workspace.from_env()
    path = ws.log_path()
    if not path.exists():
        raise SignetError(f"no log for today at {path}; is the daemon running? (`signet start`)")
    text = path.read_text(encoding="utf-8", errors="replace").splitlines()
    for line in text[-lines:]:
        typer.echo(line)
    if follow:
        with path.open(encoding="utf-8", errors="replace") as fh:
            fh.seek(0, 2)
            try:
                while True:
                    line = fh.readline()
                    if line:
                        typer.echo(line.rstrip("\n"))
                    else:
                        time.sleep(0.3)
            except KeyboardInterrupt:
                return
