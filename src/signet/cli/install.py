"""Harness commands: ``signet install``, ``signet uninstall``, ``signet harnesses``.

These edit files in the user's home directly (no daemon needed); see docs/harnesses.md
for what each harness gets and how it is removed.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from signet.cli.app import app
from signet.harnesses import install as ops
from signet.harnesses.merge import Change, HarnessConfigError
from signet.skills import links as skill_links
from signet.workspace import Workspace

SYMBOLS = {
    "created": "+",
    "updated": "~",
    "unchanged": "=",
    "restored": "<",
    "removed": "-",
    "stripped": "~",
    "skipped": "!",
}


def _fail(message: str) -> typer.Exit:
    typer.secho(f"error: {message}", err=True, fg="red")
    return typer.Exit(1)


def _print_changes(changes: list[Change]) -> None:
    for c in changes:
        typer.echo(f"  {SYMBOLS.get(c.action, '?')} {c.action:<9} {c.path}  ({c.description})")


@app.command(
    "hook",
    context_settings={"allow_extra_args": True, "ignore_unknown_options": True, "help_option_names": []},
)
def hook(ctx: typer.Context) -> None:
    """Run a harness hook: EVENT --harness NAME [--project DIR] [--budget N]; JSON on stdin.

    Installers write this command into each harness's config. (The `signet` script runs it
    without loading this CLI, so it starts in tens of milliseconds.)
    """
    from signet.cli.hook import main

    raise typer.Exit(main(list(ctx.args)))


@app.command()
def install(
    harness: Annotated[str, typer.Argument(help="claude-code, codex, opencode, openclaw, cursor or windsurf.")],
    project: Annotated[
        Path | None, typer.Option(help="Project directory, for harnesses with project rules (cursor, windsurf).")
    ] = None,
) -> None:
    """Connect a harness to Signet: hooks, MCP server and instructions, merged into its config."""
    ws = Workspace.from_env().root
    try:
        h = ops.get_harness(harness)
        changes = ops.install(h, ops.make_context(ws, project=project))
    except ops.UnknownHarness as exc:
        raise _fail(str(exc)) from None
    except HarnessConfigError as exc:
        raise _fail(f"{exc} - fix or move that file, then run `signet install {harness}` again") from None
    wrote = any(c.action not in ("unchanged",) for c in changes)
    typer.echo(f"{h.display_name}: {'installed' if wrote else 'already installed, nothing changed'}")
    _print_changes(changes)
    linked = skill_links.link_harness(ws, h.name)  # the workspace's skills, in the harness's skills folder
    if any(c.action == "linked" for c in linked):
        typer.echo(f"linked {sum(c.action == 'linked' for c in linked)} skill(s) into {h.display_name}")
    if wrote:
        typer.echo(f"Restart {h.display_name} to load it. Undo with `signet uninstall {harness}`.")


@app.command()
def uninstall(harness: Annotated[str, typer.Argument(help="A harness installed with `signet install`.")]) -> None:
    """Remove Signet from a harness, restoring its files to exactly what they were."""
    ws = Workspace.from_env().root
    try:
        h = ops.get_harness(harness)
        unlinked = skill_links.unlink_harness(ws, h.name)  # while the ledger still says where they are
        changes = ops.uninstall(h, ws)
    except (ops.UnknownHarness, ops.NotInstalled) as exc:
        raise _fail(str(exc)) from None
    typer.echo(f"{h.display_name}: uninstalled")
    if unlinked:
        typer.echo(f"unlinked {len(unlinked)} skill(s) from {h.display_name}")
    _print_changes(changes)


@app.command()
def harnesses(as_json: Annotated[bool, typer.Option("--json")] = False) -> None:
    """Which harnesses are installed, and whether each file still holds Signet's part."""
    ws = Workspace.from_env().root
    rows = [ops.status(h, ws) for h in ops.all_harnesses().values()]
    if as_json:
        typer.echo(json.dumps(rows, indent=2))
        return
    table = Table(title="Harnesses")
    table.add_column("harness")
    table.add_column("status")
    table.add_column("files")
    for r in rows:
        state = "installed" if r["complete"] else ("incomplete" if r["installed"] else "not installed")
        files = "\n".join(
            f"{'✓' if f['present'] else ('·' if not r['installed'] else '✗')} {f['path']}" for f in r["files"]
        )
        table.add_row(r["name"], state, files)
    Console().print(table)
