"""``signet task list|add|show|run|runs|rm``: scheduled tasks, through the running daemon
(it owns the scheduler; docs/tasks.md)."""

from __future__ import annotations

import json
from typing import Annotated, Any
from urllib.parse import quote

import typer

from signet.cli.app import app
from signet.cli.client import DaemonClient
from signet.errors import InvalidRequest

task_app = typer.Typer(help="Scheduled tasks: list, add, show, run, runs, rm.", no_args_is_help=True)
app.add_typer(task_app, name="task")


def _path(task_id: str, tail: str = "") -> str:
    return f"/api/tasks/{quote(task_id, safe='')}{tail}"


def _echo(data: Any, as_json: bool, line: str) -> None:
    typer.echo(json.dumps(data, indent=2) if as_json else line)


@task_app.command("list")
def list_cmd(as_json: Annotated[bool, typer.Option("--json")] = False) -> None:
    """Every task: id, schedule, next run, what it runs."""
    tasks = DaemonClient().get_json("/api/tasks")["tasks"]
    if as_json:
        typer.echo(json.dumps(tasks, indent=2))
        return
    if not tasks:
        typer.echo("no tasks (add one with `signet task add`)")
    for t in tasks:
        state = "running" if t["running"] else f"next {t['next_run_at']}" if t["enabled"] else "disabled"
        typer.echo(f"{t['id']}  {t['name']}  [{t['schedule']}]  {state}")


@task_app.command("add")
def add(
    name: Annotated[str, typer.Argument(help="A name for the task.")],
    schedule: Annotated[str, typer.Option("--schedule", help="Cron ('*/5 * * * *', UTC) or 'every 30s|5m|2h|1d'.")],
    command: Annotated[list[str] | None, typer.Argument(help="The command and its arguments (after `--`).")] = None,
    harness: Annotated[str | None, typer.Option("--harness", help="claude-code, codex or opencode.")] = None,
    prompt: Annotated[str | None, typer.Option("--prompt", help="The prompt the harness runs.")] = None,
    cwd: Annotated[str | None, typer.Option("--cwd", help="Absolute directory to run in.")] = None,
    timeout: Annotated[float | None, typer.Option("--timeout", help="Seconds before a run is killed.")] = None,
    secret: Annotated[
        list[str] | None,
        typer.Option(
            "--secret", help="A secret (signet secret put) its runs get as an environment variable (repeatable)."
        ),
    ] = None,
    disabled: Annotated[bool, typer.Option("--disabled", help="Save it without scheduling it.")] = False,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Schedule a command (on tasks.allow) or a harness prompt: `signet task add NAME --schedule
    'every 1h' -- make backup`, or `--harness claude-code --prompt '…'`."""
    if not command and harness is None:
        raise InvalidRequest("give a command after `--`, or --harness and --prompt")
    body: dict[str, Any] = {"name": name, "schedule": schedule, "enabled": not disabled}
    if command:
        body["command"] = command
    if harness is not None:
        body.update(harness=harness, prompt=prompt)
    if cwd is not None:
        body["cwd"] = cwd
    if timeout is not None:
        body["timeout_s"] = timeout
    if secret:
        body["secrets"] = secret
    task = DaemonClient().post_json("/api/tasks", body)
    _echo(task, as_json, f"added task {task['id']} ({task['name']}), next run {task['next_run_at']}")


@task_app.command("show")
def show(task_id: Annotated[str, typer.Argument(help="The task's id.")]) -> None:
    """A task as JSON."""
    typer.echo(json.dumps(DaemonClient().get_json(_path(task_id)), indent=2))


@task_app.command("run")
def run(task_id: Annotated[str, typer.Argument(help="The task's id.")]) -> None:
    """Start a run now (refused while one is running)."""
    started = DaemonClient().post_json(_path(task_id, "/run"))
    typer.echo(f"started run {started['id']} of task {task_id}")


@task_app.command("runs")
def runs(
    task_id: Annotated[str, typer.Argument(help="The task's id.")],
    limit: Annotated[int, typer.Option("--limit")] = 20,
    offset: Annotated[int, typer.Option("--offset")] = 0,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """The task's run history, newest first."""
    data = DaemonClient().get_json(_path(task_id, "/runs"), limit=limit, offset=offset)
    if as_json:
        typer.echo(json.dumps(data, indent=2))
        return
    for r in data["items"]:
        code = "" if r["exit_code"] is None else f" exit {r['exit_code']}"
        when = r["started_at"] or r["scheduled_for"]
        typer.echo(f"{r['id'][:12]}  {when}  {r['trigger']}  {r['status']}{code}  {r['error'] or ''}".rstrip())
    typer.echo(f"{len(data['items'])} of {data['total']} runs")


@task_app.command("rm")
def rm(task_id: Annotated[str, typer.Argument(help="The task's id.")]) -> None:
    """Remove a task and its run history."""
    DaemonClient().delete_json(_path(task_id))
    typer.echo(f"removed task {task_id}")
