"""``signet setup``: create the workspace, idempotently."""

from __future__ import annotations

from typing import Annotated

import typer

from signet.cli.app import app
from signet.harnesses import install as ops
from signet.harnesses.merge import HarnessConfigError
from signet.workspace import Workspace, setup_workspace


@app.command()
def setup(
    non_interactive: Annotated[bool, typer.Option("--non-interactive", "-y", help="Take defaults/flags, ask nothing.")] = False,
    agent_name: Annotated[str | None, typer.Option(help="Your agent's name.")] = None,
    user_name: Annotated[str | None, typer.Option(help="Your name, for USER.md.")] = None,
    embedding: Annotated[str, typer.Option(help="local | ollama | openai | none")] = "local",
    harness: Annotated[
        list[str] | None, typer.Option(help="Harness to connect (repeatable): recorded and installed.")
    ] = None,
    install: Annotated[
        bool, typer.Option("--install/--no-install", help="Install the named harnesses (as `signet install`).")
    ] = True,
) -> None:
    """Create $SIGNET_WORKSPACE (default ~/.agents). Never overwrites your files."""
    if harness:
        unknown = sorted(set(harness) - set(ops.all_harnesses()))
        if unknown:
            choices = ", ".join(sorted(ops.all_harnesses()))
            raise typer.BadParameter(f"unknown harness {unknown[0]!r} (choose from {choices})", param_hint="--harness")
    if embedding not in ("local", "ollama", "openai", "none"):
        raise typer.BadParameter("choose local, ollama, openai or none", param_hint="--embedding")
    ws = Workspace.from_env()
    if not non_interactive:
        agent_name = agent_name or typer.prompt("Agent name", default="signet")
        user_name = user_name or typer.prompt("Your name", default="", show_default=False) or None
    report = setup_workspace(ws, agent_name=agent_name or "signet", user_name=user_name,
                             embedding_provider=embedding, harnesses=harness)
    for p in report.created:
        typer.echo(f"created {p}")
    for p in report.kept:
        typer.echo(f"kept    {p}")
    failed = _install_harnesses(ws, harness or []) if install else []
    typer.echo(f"workspace ready at {ws.root}; start the daemon with `signet start`")
    if failed:
        typer.secho(f"error: could not install {', '.join(failed)} (see above); the workspace is ready", err=True,
                    fg="red")
        raise typer.Exit(1)


def _install_harnesses(ws: Workspace, names: list[str]) -> list[str]:
    """Install each harness; a broken user config is reported and skipped, never overwritten."""
    failed = []
    for name in dict.fromkeys(names):
        h = ops.get_harness(name)
        try:
            changes = ops.install(h, ops.make_context(ws.root))
        except HarnessConfigError as exc:
            typer.secho(f"{h.display_name}: not installed: {exc} - fix or move that file, then run "
                        f"`signet install {name}`", err=True, fg="red")
            failed.append(name)
            continue
        wrote = any(c.action != "unchanged" for c in changes)
        typer.echo(f"{h.display_name}: {'installed' if wrote else 'already installed'} (undo: signet uninstall {name})")
    return failed
