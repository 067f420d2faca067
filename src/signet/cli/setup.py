"""``signet setup``: create the workspace, idempotently; a wizard on a terminal.

On a terminal (and without ``--non-interactive``) the wizard (signet.cli.wizard) asks what
the flags did not say and shows a summary to confirm; nothing is written before that. The
answers, from the wizard or from flags, are applied by one function, so the same answers
make the same workspace either way.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Annotated

import typer

from signet import plugins
from signet.cli import ask, llm_detect, wizard
from signet.cli import daemon as daemon_cli
from signet.cli import dashboard as dashboard_cli
from signet.cli import service as service_cli
from signet.cli.app import app
from signet.cli.wizard import Choices
from signet.errors import SignetError
from signet.gitsync import repo as git_repo
from signet.harnesses import install as ops
from signet.harnesses.base import signet_argv
from signet.harnesses.merge import HarnessConfigError
from signet.launcher import agent_command, install_launcher
from signet.skills import links as skill_links
from signet.workspace import Workspace, default_workspace_path, setup_workspace


@app.command()
def setup(
    non_interactive: Annotated[
        bool, typer.Option("--non-interactive", "-y", help="Take defaults/flags, ask nothing.")
    ] = False,
    workspace: Annotated[
        str | None, typer.Option(help="Workspace directory (default $SIGNET_WORKSPACE, else ~/.agents).")
    ] = None,
    agent_name: Annotated[str | None, typer.Option(help="Your agent's name (default signet).")] = None,
    description: Annotated[
        str | None, typer.Option(help="One line about your agent: agent.yaml's agent.description and IDENTITY.md.")
    ] = None,
    user_name: Annotated[str | None, typer.Option(help="Your name, for USER.md.")] = None,
    embedding: Annotated[
        str | None, typer.Option(help="local (default) | ollama | openai | none | a plugin's embedder")
    ] = None,
    llm: Annotated[
        str | None,
        typer.Option(
            "--llm",
            "--extraction-provider",  # the spec's name for it
            help="Extraction LLM: any provider agent.yaml accepts (none, ollama, claude-code, codex, opencode, "
            "openai, anthropic, a plugin's) or auto (the default with --non-interactive: Ollama if it answers at "
            "--ollama-url, else none; never a paid harness CLI unasked). The wizard's default: a claude, codex or "
            "opencode CLI on PATH, in that order, else the same as auto",
        ),
    ] = None,
    ollama_url: Annotated[
        str,
        typer.Option(
            help="Where to look for a local Ollama (detection only asks GET /api/tags, half a second); written as "
            "the extraction endpoint when Ollama is chosen and this is not the default."
        ),
    ] = llm_detect.DEFAULT_OLLAMA_URL,
    search_alpha: Annotated[
        str | None,
        typer.Option(
            help="Search balance, agent.yaml's search.alpha: 0-1, the weight of meaning (vectors) against exact "
            "words (keyword/BM25) in recall. Default 0.7."
        ),
    ] = None,
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
        bool | None,
        typer.Option(
            "--git/--no-git",
            help="Make the workspace a git repository (a .gitignore keeps secrets and the database out). Default on.",
        ),
    ] = None,
    service: Annotated[
        bool | None,
        typer.Option(
            "--service/--no-service",
            help="Install the service that starts the daemon at login (as `signet service install`). Default off.",
        ),
    ] = None,
    start: Annotated[
        bool | None,
        typer.Option(
            "--start/--no-start",
            help="Start the daemon when setup is done (as `signet start`). Wizard default yes; --non-interactive: no.",
        ),
    ] = None,
    open_dashboard: Annotated[
        bool | None,
        typer.Option(
            "--open-dashboard/--no-open-dashboard",
            help="Then open the dashboard in the browser (as `signet dashboard`; $BROWSER is honoured). Wizard "
            "default yes when the daemon starts; --non-interactive: no.",
        ),
    ] = None,
) -> None:
    """Create $SIGNET_WORKSPACE (default ~/.agents): a wizard on a terminal. Never overwrites your files."""
    given = _given(workspace, agent_name, user_name, embedding, llm, harness, git, service)
    text = None if description is None else _flag(description.strip(), wizard.check_description, "--description")
    given.description = text if isinstance(text, str) else None
    given.search_alpha = None if search_alpha is None else _alpha_flag(search_alpha)
    given.start, given.open_dashboard = start, open_dashboard
    url = str(_flag(ollama_url, _check_url, "--ollama-url"))
    if not non_interactive and not ask.interactive():
        typer.secho("note: no terminal to ask on: taking the flags and the defaults (as --non-interactive)", err=True)
    choices = _defaults(given, url) if non_interactive or not ask.interactive() else _wizard(given, url)
    _apply(choices, install=install, launcher=launcher, ollama_url=url)


def _check_url(text: str) -> str:
    try:
        return llm_detect.check_ollama_url(text)
    except llm_detect.BadURL as exc:
        raise ask.Invalid(str(exc)) from None


def _alpha_flag(text: str) -> float:
    value = _flag(text.strip(), wizard.check_search_alpha, "--search-alpha")
    assert isinstance(value, float)
    return value


def _flag(value: str, check: Callable[[str], object], hint: str) -> object:
    try:
        return check(value)
    except ask.Invalid as exc:
        raise typer.BadParameter(str(exc), param_hint=hint) from None


def _given(
    workspace: str | None,
    agent_name: str | None,
    user_name: str | None,
    embedding: str | None,
    llm: str | None,
    harness: list[str] | None,
    git: bool | None,
    service: bool | None,
) -> Choices:
    """The flags, checked as the wizard checks its answers (a bad one: one line, exit 2)."""
    if harness:
        unknown = sorted(set(harness) - set(ops.all_harnesses()))
        if unknown:
            choices = ", ".join(sorted(ops.all_harnesses()))
            raise typer.BadParameter(f"unknown harness {unknown[0]!r} (choose from {choices})", param_hint="--harness")
    for kind, name, hint in (("embedding", embedding, "--embedding"), ("LLM", llm, "--llm")):
        if name is not None and (name != "auto" or kind != "LLM"):
            try:  # the plugin registry: a plugin's provider is a valid choice too
                plugins.check_provider(kind, name)
            except ValueError as exc:
                raise typer.BadParameter(str(exc), param_hint=hint) from None
    ws = _flag(workspace, wizard.check_workspace, "--workspace") if workspace is not None else None
    return Choices(
        workspace=ws if isinstance(ws, Path) else None,
        agent_name=str(_flag(agent_name, wizard.check_agent_name, "--agent-name")) if agent_name is not None else None,
        user_name=user_name if user_name is None else (user_name.strip() or None),
        harnesses=list(dict.fromkeys(harness)) if harness is not None else None,
        embedding=embedding,
        llm=llm,
        git=git,
        service=service,
    )


def _defaults(given: Choices, ollama_url: str) -> Choices:
    """Flags as given, the rest as documented: what the wizard offers, except that nothing is
    started or opened unless asked (a script goes on with `signet start` itself)."""
    if given.user_name is not None:
        _flag(given.user_name, wizard.check_user_name, "--user-name")
    return Choices(
        workspace=given.workspace or default_workspace_path(),
        agent_name=given.agent_name or "signet",
        description=given.description,
        user_name=given.user_name,
        harnesses=given.harnesses or [],
        embedding=given.embedding or "local",
        llm=_detect_llm(ollama_url) if given.llm in (None, "auto") else given.llm,
        search_alpha=0.7 if given.search_alpha is None else given.search_alpha,
        git=True if given.git is None else given.git,
        service=bool(given.service),
        start=bool(given.start),
        open_dashboard=bool(given.open_dashboard),
    )


def _wizard(given: Choices, ollama_url: str) -> Choices:
    """Ask, show the summary, confirm; Ctrl+C, end of input or "no" stop with nothing written."""
    if given.llm == "auto":
        given.llm = _detect_llm(ollama_url)
    try:
        choices = wizard.run(given, default_workspace_path(), ollama_url)
        ask.console.print()
        ask.console.print(wizard.summary(choices))
        go = ask.confirm("Write this setup", default=True)
    except ask.Cancelled as exc:
        typer.secho(f"setup cancelled ({exc}): nothing was written", err=True, fg="red")
        raise typer.Exit(130 if exc.interrupted else 1) from None
    if not go:
        typer.secho("setup cancelled: nothing was written", err=True, fg="red")
        raise typer.Exit(1)
    return choices


def _apply(c: Choices, *, install: bool, launcher: bool, ollama_url: str) -> None:
    """Write what ``c`` says, then start the daemon and open the dashboard if asked. The
    workspace is named in this process's environment first, so every step (harness files, the
    service unit, the daemon) uses the one that was chosen."""
    assert c.workspace is not None
    elsewhere = c.workspace != default_workspace_path()
    os.environ["SIGNET_WORKSPACE"] = str(c.workspace)
    ws = Workspace(c.workspace)
    if launcher:  # first: AGENTS.md and the harnesses' instructions name `signet` only if shells find it
        _link_launcher()
    report = setup_workspace(
        ws,
        agent_name=c.agent_name or "signet",
        user_name=c.user_name,
        embedding_provider=c.embedding or "local",
        harnesses=c.harnesses,
        llm_provider=c.llm or "none",
        signet_command=(command := agent_command(Path.home(), signet_argv())),
        description=c.description,
        search_alpha=0.7 if c.search_alpha is None else c.search_alpha,
        # an Ollama found somewhere else than its default is the one extraction then uses
        llm_endpoint=ollama_url if c.llm == "ollama" and ollama_url != llm_detect.DEFAULT_OLLAMA_URL else None,
    )
    for p in report.created:
        typer.echo(f"created {p}")
    for p in report.kept:
        typer.echo(f"kept    {p}")
    failed = [f"install {n}" for n in _install_harnesses(ws, c.harnesses or [])] if install else []
    if c.git:
        _init_git(ws)
    if c.service:
        try:
            service_cli.install(platform=None, manager=True, start=False)
        except SignetError as exc:
            typer.secho(f"service: not installed: {exc.message}", err=True, fg="red")
            failed.append("install the service (`signet service install`)")
    started = _start_and_open(c, failed)
    if started:
        typer.echo(f"workspace ready at {ws.root}; the daemon is running (`{command} stop` stops it)")
    else:
        typer.echo(f"workspace ready at {ws.root}; start the daemon with `{command} start`")
    if elsewhere:
        typer.secho(
            f'note: {ws.root} is not your default workspace; export SIGNET_WORKSPACE="{ws.root}" in your shell '
            "profile so `signet` commands use it",
            err=True,
            fg="yellow",
        )
    if failed:
        typer.secho(
            f"error: could not {', '.join(failed)} (see above); the workspace is ready",
            err=True,
            fg="red",
        )
        raise typer.Exit(1)


def _start_and_open(c: Choices, failed: list[str]) -> bool:
    """Start the daemon and open the dashboard as ``signet start`` and ``signet dashboard`` do
    (the same functions); a step that fails is said in one line and added to ``failed``.
    True when the daemon is running at the end."""
    started = False
    if c.start:
        try:
            daemon_cli.start(host=None, port=None, wait=20.0, accept_empty_database=False)
            started = True
        except SignetError as exc:
            typer.secho(f"start: the daemon did not start: {exc.message}", err=True, fg="red")
            failed.append("start the daemon (`signet start`)")
    if c.open_dashboard and (started or not c.start):
        try:
            dashboard_cli.dashboard(print_only=False)
        except SignetError as exc:
            typer.secho(f"dashboard: not opened: {exc.message}", err=True, fg="red")
            failed.append("open the dashboard (`signet dashboard`)")
    return started


def _detect_llm(ollama_url: str) -> str:
    """``--llm auto``: a local Ollama, else ``none`` (signet.cli.llm_detect says why never a
    harness CLI here), and what was found, said in one line (a CLI found is named, with the flag).

    With ``none``, pipeline jobs wait visibly (``signet pipeline status``) instead of failing
    against a server that is not there; docs/pipeline.md says how to switch a provider on later.
    """
    found = llm_detect.detect(ollama_url)
    if found.provider not in ("ollama", "none"):
        hint = f"; to extract with {found.provider}, run setup with --llm {found.provider}"
    else:
        hint = "" if found.local == "ollama" else "; see docs/pipeline.md to add one"
    typer.echo(f"extraction LLM: {found.local} ({found.said}{hint})")
    return found.local


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
