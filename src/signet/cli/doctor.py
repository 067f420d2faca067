"""``signet doctor``: the daemon's health report, with what to do about each finding."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from signet.cli.app import app
from signet.cli.client import DaemonClient


@app.command()
def doctor(as_json: Annotated[bool, typer.Option("--json")] = False) -> None:
    """Check the daemon's health: queue, storage, index, providers, mutations."""
    report = DaemonClient().get("/api/diagnostics")
    if as_json:
        typer.echo(json.dumps(report, indent=2))
        return
    from rich.console import Console

    console = Console()
    colour = {"healthy": "green", "degraded": "yellow", "unhealthy": "red"}
    console.print(f"[bold {colour[report['status']]}]{report['status']}[/] (score {report['score']:.2f})")
    for name, d in report["domains"].items():
        console.print(f"  [{colour[d['status']]}]{d['status']:<9}[/] {name:<9} {d['score']:.2f}")
        for finding in d["findings"]:
            console.print(f"      - {finding}")
    if report["status"] == "unhealthy":
        raise typer.Exit(1)
