"""``signet doctor``: the daemon's health report, with what to do about each finding."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from signet.cli.app import app
from signet.cli.client import DaemonClient
from signet.config import top_level_near_miss, unknown_top_level_keys
from signet.workspace import Workspace


@app.command()
def doctor(as_json: Annotated[bool, typer.Option("--json")] = False) -> None:
    """Check the daemon's health: queue, storage, index, providers, mutations; and agent.yaml."""
    settings = Workspace.from_env().settings()  # an unreadable agent.yaml is one line and exit 1
    unknown = unknown_top_level_keys(settings)
    near = {key: miss for key in unknown if (miss := top_level_near_miss(key)) is not None}
    report = DaemonClient().get_json("/api/diagnostics")
    if as_json:
        typer.echo(
            json.dumps({**report, "config": {"unknown_top_level_keys": unknown, "did_you_mean": near}}, indent=2)
        )
        return
    from rich.console import Console

    console = Console()
    colour = {"healthy": "green", "degraded": "yellow", "unhealthy": "red"}
    console.print(f"[bold {colour[report['status']]}]{report['status']}[/] (score {report['score']:.2f})")
    for name, d in report["domains"].items():
        console.print(f"  [{colour[d['status']]}]{d['status']:<9}[/] {name:<9} {d['score']:.2f}")
        for finding in d["findings"]:
            console.print(f"      - {finding}")
    if unknown:
        keys = ", ".join(f"{k} (did you mean {near[k]}?)" if k in near else k for k in unknown)
        console.print(
            f"  [yellow]note[/]      agent.yaml has top-level keys Signet does not read (kept for other tools): {keys}"
        )
    if report["status"] == "unhealthy":
        raise typer.Exit(1)
