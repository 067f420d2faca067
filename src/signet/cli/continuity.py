"""``signet checkpoints`` and ``signet summaries``: what continuity keeps of past sessions.

Checkpoints live in the database, so they are read through the daemon (which scopes them to
the caller). Session summaries are canonical as Markdown files under the workspace's
``memory/`` folder (signet.continuity.artifacts), so ``summaries list`` reads those files and
works with the daemon stopped; removing one goes through the daemon, which tombstones the
session in the same transaction so a rebuild never brings the summary back.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from datetime import datetime
from typing import Annotated, Any

import typer

from signet.cli.app import app
from signet.cli.client import DaemonClient
from signet.errors import InvalidRequest

_TOKEN = re.compile(r"[0-9a-f]{16}")
summaries_app = typer.Typer(help="Session summaries: list them, or remove a session's.", no_args_is_help=True)
app.add_typer(summaries_app, name="summaries")


def _when(stamp: Any) -> str:
    return str(stamp or "")[:19].replace("T", " ")


def _table(title: str, columns: tuple[str, ...], rows: Sequence[Sequence[str]]) -> None:
    from rich.console import Console
    from rich.table import Table

    t = Table(*columns, title=title)
    for row in rows:
        t.add_row(*row)
    Console().print(t)


@app.command()
def checkpoints(
    session_key: Annotated[
        str | None, typer.Argument(help="One session's checkpoints: HARNESS:SESSION_ID (e.g. claude-code:abc123).")
    ] = None,
    project: Annotated[str | None, typer.Option(help="Only this project's (without SESSION_KEY).")] = None,
    limit: Annotated[int, typer.Option("--limit", "-n", help="At most this many, newest first (1-500).")] = 50,
    full: Annotated[bool, typer.Option("--full", help="Print each checkpoint's whole content.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """Session checkpoints, newest first: every session's, one project's, or one session's."""
    if session_key is not None and project is not None:
        raise InvalidRequest("give a SESSION_KEY or --project, not both")
    if not 1 <= limit <= 500:
        raise InvalidRequest(f"--limit must be between 1 and 500, not {limit}")
    with DaemonClient() as client:
        if session_key is not None:
            found = client.continuity.session_checkpoints(session_key, limit=limit)
        else:
            found = client.continuity.checkpoints(project=project, limit=limit)
    if as_json:
        typer.echo(found.model_dump_json(indent=2))
        return
    items = found.checkpoints
    if not items:
        typer.echo("no checkpoints yet" + (f" for project {project!r}" if project else ""))
        return
    if full:
        for c in items:
            typer.echo(f"== {c.id[:8]}  {c.session_key}  {c.trigger}  turn {c.turn}  {_when(c.created_at)}")
            typer.echo(c.content.rstrip() + "\n")
        return
    rows = [
        (
            c.id[:8],
            _when(c.created_at),
            c.session_key,
            c.project or "-",
            c.trigger,
            str(c.turn),
            " ".join(c.content.split())[:60],
        )
        for c in items
    ]
    title = f"checkpoints of {session_key}" if session_key else "checkpoints"
    _table(title, ("id", "created", "session", "project", "trigger", "turn", "content"), rows)


def _summaries(agent: str | None) -> list[dict[str, Any]]:
    """The workspace's summary files, newest first, with what their front matter says."""
    from signet.continuity import artifacts
    from signet.workspace import default_workspace_path

    root = default_workspace_path()
    out: list[dict[str, Any]] = []
    for path in artifacts.summary_files(root):
        art = artifacts.parse(path)
        if art is None:
            continue
        owner = str(art.meta.get("agent_id") or "default")
        if agent is not None and owner != agent:
            continue
        out.append(
            {
                "session_token": art.meta["session_token"],
                "agent_id": owner,
                "session_key": art.meta.get("session_key"),
                "harness": art.meta.get("harness"),
                "project": art.meta.get("project"),
                "captured_at": _iso(art.meta.get("captured_at")),
                "path": artifacts.relative(root, path),
                "first_line": next((line for line in art.body.splitlines() if line.strip()), ""),
            }
        )
    out.sort(key=lambda s: str(s["captured_at"] or ""), reverse=True)
    return out


def _iso(value: Any) -> str | None:
    if isinstance(value, datetime):  # YAML reads an unquoted timestamp as a datetime
        return value.isoformat()
    return None if value is None else str(value)


@summaries_app.command("list")
def list_summaries(
    agent: Annotated[str | None, typer.Option("--agent", help="Only this agent's (default: every agent's).")] = None,
    limit: Annotated[int, typer.Option("--limit", "-n", help="At most this many, newest first.")] = 50,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """Session summaries in the workspace's memory/ folder, newest first (no daemon needed)."""
    if limit < 1:
        raise InvalidRequest(f"--limit must be at least 1, not {limit}")
    items = _summaries(agent)[:limit]
    if as_json:
        typer.echo(json.dumps(items, indent=2, ensure_ascii=False))
        return
    if not items:
        typer.echo("no session summaries yet")
        return
    rows = [
        (
            s["session_token"],
            _when(s["captured_at"]),
            s["agent_id"],
            str(s["session_key"] or "-"),
            str(s["project"] or "-"),
            str(s["first_line"])[:60],
        )
        for s in items
    ]
    _table("session summaries", ("token", "captured", "agent", "session", "project", "summary"), rows)
    typer.echo("remove a session's summaries with: signet summaries rm TOKEN")


@summaries_app.command("rm")
def remove_summaries(
    session_token: Annotated[str, typer.Argument(help="The session's token (16 hex digits, from `summaries list`).")],
    agent: Annotated[str, typer.Option("--agent", help="The agent the session belongs to.")] = "default",
    reason: Annotated[str | None, typer.Option(help="Why (kept with the tombstone).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """Delete a session's summary files and index rows, and tombstone the session so they never come back."""
    if not _TOKEN.fullmatch(session_token):
        raise InvalidRequest(
            f"{session_token[:40]!r} is not a session token (16 hex digits; `signet summaries list` shows them)"
        )
    with DaemonClient() as client:
        removed = client.continuity.remove_summaries(session_token, agent_id=agent, reason=reason)
    if as_json:
        typer.echo(removed.model_dump_json(indent=2))
        return
    for path in removed.removed_paths:
        typer.echo(f"removed {path}")
    typer.echo(f"session {removed.session_token} tombstoned: its summaries will not be restored")
