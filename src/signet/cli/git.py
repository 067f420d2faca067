"""``signet git init|status|config|pull|push|sync``: the workspace as a git repository, synced
with a remote (docs/git.md).

These run git on the workspace directly, like ``signet skill``: they work with the daemon
down. A conflict is one line naming the files and exits 1; the files stay as they were.
"""

from __future__ import annotations

import json
from typing import Annotated

import typer

from signet.cli.app import app
from signet.gitsync import repo
from signet.gitsync.models import GitResult
from signet.gitsync.sync import GitSync
from signet.workspace import Workspace

git_app = typer.Typer(help="Git sync of the workspace: init, status, config, pull, push, sync.", no_args_is_help=True)
app.add_typer(git_app, name="git")

JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON.")]


def _sync() -> GitSync:
    ws = Workspace.from_env()
    return GitSync(ws.root, ws.settings().git)


def _result(res: GitResult, as_json: bool) -> None:
    if as_json:
        typer.echo(json.dumps(res.model_dump(), indent=2))
        return
    if res.committed:
        typer.echo("committed local changes")
    typer.echo(f"{res.detail} (at {res.head[:12]})")


@git_app.command("init")
def init() -> None:
    """Make the workspace a git repository with a .gitignore for secrets and the database."""
    ws = Workspace.from_env()
    report = repo.init(ws.root, timeout=ws.settings().git.timeout_s)
    typer.echo(f"{'created' if report.created else 'kept'} git repository {ws.root}")
    if report.gitignore:
        typer.echo(f".gitignore: added {', '.join(report.gitignore)}")
    for path in report.untracked:
        typer.echo(f"untracked {path} (it stays on disk; git no longer commits it)")
    if report.committed:
        typer.echo("committed the workspace")


@git_app.command("status")
def status(as_json: JsonOpt = False) -> None:
    """Branch, remote, changed files, commits ahead and behind, conflicts."""
    st = _sync().status()
    if as_json:
        typer.echo(json.dumps(st.model_dump(), indent=2))
        return
    if not st.repository:
        typer.echo("the workspace is not a git repository (run `signet git init`)")
        return
    typer.echo(f"branch: {st.branch or '(detached)'}")
    typer.echo(f"remote: {st.remote} {st.url or '(not configured: signet git config --url URL)'}")
    if st.ahead is not None:
        typer.echo(f"ahead {st.ahead}, behind {st.behind} (as of the last fetch)")
    typer.echo(f"changed: {len(st.changed)} file(s)" + (f": {', '.join(st.changed[:10])}" if st.changed else ""))
    if st.conflicts:
        typer.echo(f"conflicts: {', '.join(st.conflicts)}")
    if st.last_commit:
        typer.echo(f"last commit: {st.last_commit.sha[:12]} {st.last_commit.date} {st.last_commit.message}")


@git_app.command("config")
def config(
    url: Annotated[str | None, typer.Option("--url", help="Point the remote at this URL.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Show the remote, or set its URL with --url."""
    sync = _sync()
    cfg = sync.set_url(url) if url is not None else sync.config()
    if as_json:
        typer.echo(json.dumps(cfg.model_dump(), indent=2))
        return
    typer.echo(f"remote: {cfg.remote}\nurl: {cfg.url or '(none)'}\nbranch: {cfg.branch or '(current)'}")


@git_app.command("pull")
def pull(as_json: JsonOpt = False) -> None:
    """Commit local changes, then merge the remote's (a conflict is reported, never resolved)."""
    _result(_sync().pull(), as_json)


@git_app.command("push")
def push(as_json: JsonOpt = False) -> None:
    """Commit local changes, then push them (never forced)."""
    _result(_sync().push(), as_json)


@git_app.command("sync")
def sync(as_json: JsonOpt = False) -> None:
    """Pull, then push."""
    _result(_sync().sync(), as_json)
