"""``signet setup``: create the workspace, idempotently."""

from __future__ import annotations

from typing import Annotated

import typer

from signet.cli.app import app
from signet.workspace import Workspace, setup_workspace


@app.command()
def setup(
    non_interactive: Annotated[bool, typer.Option("--non-interactive", "-y", help="Take defaults/flags, ask nothing.")] = False,
    agent_name: Annotated[str | None, typer.Option(help="Your agent's name.")] = None,
    user_name: Annotated[str | None, typer.Option(help="Your name, for USER.md.")] = None,
    embedding: Annotated[str, typer.Option(help="local | ollama | openai | none")] = "local",
    harness: Annotated[list[str] | None, typer.Option(help="Harnesses you use (repeatable).")] = None,
) -> None:
    """Create $SIGNET_WORKSPACE (default ~/.agents). Never overwrites your files."""
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
    typer.echo(f"workspace ready at {ws.root}; start the daemon with `signet start`")
