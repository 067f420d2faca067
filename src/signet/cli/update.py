"""``signet update check|run``: a newer Signet on the package index, and installing it with
pip into this environment (docs/updates.md). These work without the daemon; after an install
a running daemon is restarted, so it runs the new code."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Annotated

import typer

from signet import instance
from signet.cli.app import app
from signet.errors import SignetError
from signet.updates.service import UpdateService, restart_argv
from signet.workspace import Workspace

update_app = typer.Typer(help="Updates from the package index: check, run.", no_args_is_help=True)
app.add_typer(update_app, name="update")


def _service(ws: Workspace) -> UpdateService:
    return UpdateService(ws.settings().update, ws.root)


@update_app.command("check")
def check(as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False) -> None:
    """Whether the index has a newer version (exit 0 either way; an unreachable index exits 1)."""
    found = _service(Workspace.from_env()).check()
    if as_json:
        typer.echo(json.dumps(found.model_dump(), indent=2))
    if found.error is not None:
        raise SignetError(found.error)
    if as_json:
        return
    if found.available:
        typer.echo(f"{found.package} {found.latest} is available (installed: {found.current}); `signet update run`")
    else:
        typer.echo(f"{found.package} {found.current} is up to date (the index has {found.latest})")


@update_app.command("run")
def run(
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Install without asking.")] = False,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Resolve and download with pip, install nothing.")] = False,
    restart: Annotated[bool, typer.Option("--restart/--no-restart", help="Restart a running daemon after.")] = True,
) -> None:
    """Install the newest version with pip, then restart the daemon if it runs."""
    ws = Workspace.from_env()
    updates = _service(ws)
    found = updates.check()
    if found.error is not None:
        raise SignetError(found.error)
    if not found.available or found.latest is None:
        typer.echo(f"{found.package} {found.current} is up to date (the index has {found.latest})")
        return
    if not yes and not dry_run:
        if not sys.stdin.isatty():
            raise SignetError(f"{found.package} {found.latest} is available; run `signet update run --yes` to install")
        if not typer.confirm(f"Install {found.package} {found.latest} (installed: {found.current})?"):
            raise typer.Exit(1)
    done = updates.run(found.latest, dry_run=dry_run, restart=False)
    if dry_run:
        typer.echo(f"{done.package} {done.version} resolves; nothing installed (dry run)")
        return
    typer.echo(f"installed {done.package} {done.version}")
    if restart and instance.running(ws.daemon_dir) is not None:
        subprocess.run(restart_argv(ws.root), check=False)  # a new interpreter: the new code
