"""``signet doctor``: the daemon's health report, with what to do about each finding;
``--fix`` runs the maintenance worker's plan once, in execute mode, and says what it did."""

from __future__ import annotations

import getpass
import json
from typing import Annotated, Any

import typer

from signet.cli.app import app
from signet.cli.client import DaemonClient
from signet.config import top_level_near_miss, unknown_top_level_keys
from signet.errors import DaemonUnavailable, SignetError
from signet.workspace import Workspace

FIX_TIMEOUT_S = 600.0
"""A cycle may rebuild the keyword indexes of a large store: give it time."""


@app.command()
def doctor(
    as_json: Annotated[bool, typer.Option("--json")] = False,
    fix: Annotated[
        bool,
        typer.Option(
            "--fix",
            help="Run the maintenance plan once in execute mode (through the repair gate), print what it did, "
            "then the report. Through the daemon when it runs, else in this process.",
        ),
    ] = False,
) -> None:
    """Check the daemon's health: queue, storage, index, providers, mutations; and agent.yaml."""
    ws = Workspace.from_env()
    settings = ws.settings()  # an unreadable agent.yaml is one line and exit 1
    unknown = unknown_top_level_keys(settings)
    near = {key: miss for key in unknown if (miss := top_level_near_miss(key)) is not None}
    cycle: dict[str, Any] | None = None
    if fix:
        cycle, report = _fix(ws)
    else:
        report = DaemonClient().get_json("/api/diagnostics")
    if as_json:
        out = {**report, "config": {"unknown_top_level_keys": unknown, "did_you_mean": near}}
        if cycle is not None:
            out["fix"] = cycle
        typer.echo(json.dumps(out, indent=2))
        return
    from rich.console import Console
    from rich.markup import escape

    console = Console()
    colour = {"healthy": "green", "degraded": "yellow", "unhealthy": "red"}
    if cycle is not None:
        _print_fix(console, cycle)
    console.print(f"[bold {colour[report['status']]}]{report['status']}[/] (score {report['score']:.2f})")
    for name, d in report["domains"].items():
        console.print(f"  [{colour[d['status']]}]{d['status']:<9}[/] {name:<9} {d['score']:.2f}")
        for finding in d["findings"]:
            console.print(f"      - {escape(finding)}")
    if unknown:
        keys = ", ".join(f"{k} (did you mean {near[k]}?)" if k in near else k for k in unknown)
        console.print(
            f"  [yellow]note[/]      agent.yaml has top-level keys Signet does not read (kept for other tools): {keys}"
        )
    if report["status"] == "unhealthy":
        raise typer.Exit(1)


def _fix(ws: Workspace) -> tuple[dict[str, Any], dict[str, Any]]:
    """One execute cycle and the report after it: through the daemon, or (when none runs) in
    this process with the daemon's lock held, so no daemon starts on the files meanwhile."""
    client = DaemonClient(timeout=FIX_TIMEOUT_S)
    try:
        cycle = client.post_json("/api/repair/maintenance/run", {"mode": "execute"})
        return cycle, client.get_json("/api/diagnostics")
    except DaemonUnavailable as exc:
        if "not running" not in exc.message:
            raise
    from dataclasses import asdict

    from signet import instance
    from signet.ops.diagnostics import diagnose
    from signet.ops.repairs import Caller
    from signet.runtime import Runtime

    lock = instance.DaemonLock(ws.daemon_dir)
    if not lock.acquire(wait=0.5):
        raise SignetError("the daemon is starting or does not answer: wait for it, or stop it, then try again")
    try:
        rt = Runtime(ws).start()
        try:
            done = rt.maintenance.run_cycle("execute", Caller(f"cli:{getpass.getuser()}", "operator"))
            report = rt.maintenance.note(diagnose(rt))
        finally:
            rt.stop()
    finally:
        lock.release()
    return asdict(done), report


STATUS_COLOUR = {
    "done": "green",
    "noop": "dim",
    "planned": "cyan",
    "refused": "yellow",
    "failed": "red",
    "halted": "red",
}


def _print_fix(console: Any, cycle: dict[str, Any]) -> None:
    from rich.markup import escape

    plan = cycle["plan"]
    if not plan:
        console.print("fix: nothing to repair")
        return
    ran = sum(1 for p in plan if p["status"] in ("done", "noop"))
    console.print(
        f"fix: {ran} of {len(plan)} repairs run (score {cycle['score_before']:.2f} -> {cycle['score_after']:.2f})"
    )
    for p in plan:
        colour = STATUS_COLOUR.get(p["status"], "white")
        console.print(f"  [{colour}]{p['status']:<8}[/] {p['action']:<16} {escape(p['result'] or p['finding'])}")
