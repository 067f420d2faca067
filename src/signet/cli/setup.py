"""``signet setup``: create the workspace, idempotently."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from signet import plugins
from signet.cli.app import app
from signet.errors import SignetError
from signet.gitsync import repo as git_repo
from signet.harnesses import install as ops
from signet.harnesses.base import signet_argv
from signet.harnesses.merge import HarnessConfigError
from signet.launcher import agent_command, install_launcher
from signet.skills import links as skill_links
from signet.workspace import Workspace, setup_workspace


@app.command()
def setup(
    non_interactive: Annotated[
        bool, typer.Option("--non-interactive", "-y", help="Take defaults/flags, ask nothing.")
    ] = False,
    agent_name: Annotated[str | None, typer.Option(help="Your agent's name.")] = None,
    user_name: Annotated[str | None, typer.Option(help="Your name, for USER.md.")] = None,
    embedding: Annotated[str, typer.Option(help="local | ollama | openai | none | a plugin's embedder")] = "local",
    llm: Annotated[
        str,
        typer.Option(
            help="Extraction LLM: auto (Ollama if it answers on 127.0.0.1:11434, else none) | "
            "ollama | openai | anthropic | none | a plugin's provider"
        ),
    ] = "auto",
    harness: Annotated[
        list[str] | None, typer.Option(help="Harness to connect (repeatable): recorded and installed.")
    ] = None,
    install: Annotated[
        bool, typer.Option("--install/--no-install", help="Install the named harnesses (as `signet install`).")
    ] = True,
    launcher: Annotated[
        bool,
        typer.Option(
            "--launcher/--no-launcher",
            help="Link `signet` into ~/.local/bin (or $XDG_BIN_HOME), where shells and agents find commands.",
        ),
    ] = True,
    git: Annotated[
        bool,
        typer.Option(
            "--git/--no-git",
            help="Make the workspace a git repository (a .gitignore keeps secrets and the database out).",
        ),
    ] = True,
) -> None:
    """Create $SIGNET_WORKSPACE (default ~/.agents). Never overwrites your files."""
    if harness:
        unknown = sorted(set(harness) - set(ops.all_harnesses()))
        if unknown:
            choices = ", ".join(sorted(ops.all_harnesses()))
            raise typer.BadParameter(f"unknown harness {unknown[0]!r} (choose from {choices})", param_hint="--harness")
    for kind, name, hint in (("embedding", embedding, "--embedding"), ("LLM", llm, "--llm")):
        if name != "auto" or kind != "LLM":
            try:  # the plugin registry: a plugin's provider is a valid choice too
                plugins.check_provider(kind, name)
            except ValueError as exc:
                raise typer.BadParameter(str(exc), param_hint=hint) from None
    ws = Workspace.from_env()
    if not non_interactive:
        agent_name = agent_name or typer.prompt("Agent name", default="signet")
        user_name = user_name or typer.prompt("Your name", default="", show_default=False) or None
    if launcher:  # first: AGENTS.md and the harnesses' instructions name `signet` only if shells find it
        _link_launcher()
    report = setup_workspace(
        ws,
        agent_name=agent_name or "signet",
        user_name=user_name,
        embedding_provider=embedding,
        harnesses=harness,
        llm_provider=_detect_llm() if llm == "auto" else llm,
        signet_command=(command := agent_command(Path.home(), signet_argv())),
    )
    for p in report.created:
        typer.echo(f"created {p}")
    for p in report.kept:
        typer.echo(f"kept    {p}")
    failed = _install_harnesses(ws, harness or []) if install else []
    if git:
        _init_git(ws)
    typer.echo(f"workspace ready at {ws.root}; start the daemon with `{command} start`")
    if failed:
        typer.secho(
            f"error: could not install {', '.join(failed)} (see above); the workspace is ready", err=True, fg="red"
        )
        raise typer.Exit(1)


def _detect_llm() -> str:
    """``ollama`` when a local Ollama answers within half a second, else ``none``.

    Pipeline jobs then wait visibly (``signet pipeline status``) instead of failing against
    a server that is not there; docs/pipeline.md says how to switch a provider on later.
    """
    import httpx

    try:
        ok = httpx.get("http://127.0.0.1:11434/api/tags", timeout=0.5).status_code == 200
    except httpx.HTTPError:
        ok = False
    typer.echo(
        "extraction LLM: "
        + (
            "Ollama found on 127.0.0.1:11434"
            if ok
            else "none (no Ollama on 127.0.0.1:11434; see docs/pipeline.md to add one)"
        )
    )
    return "ollama" if ok else "none"


def _install_harnesses(ws: Workspace, names: list[str]) -> list[str]:
    """Install each harness; a broken user config is reported and skipped, never overwritten."""
    failed = []
    for name in dict.fromkeys(names):
        h = ops.get_harness(name)
        try:
            changes = ops.install(h, ops.make_context(ws.root))
        except HarnessConfigError as exc:
            typer.secho(
                f"{h.display_name}: not installed: {exc} - fix or move that file, then run `signet install {name}`",
                err=True,
                fg="red",
            )
            failed.append(name)
            continue
        wrote = any(c.action != "unchanged" for c in changes)
        skill_links.link_harness(ws.root, h.name)
        typer.echo(f"{h.display_name}: {'installed' if wrote else 'already installed'} (undo: signet uninstall {name})")
    return failed


def _init_git(ws: Workspace) -> None:
    """The workspace as a git repository (docs/git.md); a machine without git gets a note."""
    try:
        report = git_repo.init(ws.root, timeout=ws.settings().git.timeout_s)
    except SignetError as exc:
        typer.secho(f"note: the workspace is not a git repository: {exc.message}", err=True, fg="yellow")
        return
    said = "created" if report.created else "kept"
    typer.echo(f"git: {said} repository {ws.root}" + (" (committed)" if report.committed else ""))
    for path in report.untracked:
        typer.echo(f"git: untracked {path} (it stays on disk; .gitignore keeps it out of commits)")


def _link_launcher() -> None:
    """Put ``signet`` where shells find commands, and say where; a problem is a note, not a
    failure: everything works through the absolute path, which the note names."""
    argv = signet_argv()
    script = Path(argv[0]) if len(argv) == 1 else None
    absolute = " ".join(argv)
    try:
        done = install_launcher(Path.home(), script)
    except OSError as exc:
        typer.secho(
            f"note: could not link `signet` into a command directory ({exc.strerror or exc}); run {absolute}",
            err=True,
            fg="yellow",
        )
        return
    if done.action == "unsupported":
        typer.secho(f"note: no `signet` script beside {argv[0]}; run Signet as {absolute}", err=True, fg="yellow")
        return
    if done.action == "kept":
        typer.secho(
            f"note: {done.path} is another program ({done.found}), left as it is; agents are told to run "
            f"{done.target}; remove it and run `signet setup` again to link this Signet there",
            err=True,
            fg="yellow",
        )
        return
    said = {
        "created": f"launcher: {done.path} -> {done.target}",
        "unchanged": f"launcher: {done.path} already runs {done.target}",
        "replaced": f"launcher: {done.path} -> {done.target} (replaced a broken link to {done.found})",
    }
    typer.echo(said[done.action])
    if not done.on_path:
        typer.secho(
            f'note: {done.path.parent} is not on your PATH; add it (export PATH="{done.path.parent}:$PATH" in your '
            f"shell profile) or run {done.target}; agents are told the full path meanwhile",
            err=True,
            fg="yellow",
        )
