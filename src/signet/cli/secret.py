"""``signet secret put|list|has|delete|exec``: the workspace's encrypted secrets.

These work on the workspace directly, like ``signet token``: the store is a file of this
workspace and its key is the user's (keyring or key file), so an admin at this machine can
manage secrets with the daemon down, and a value never crosses HTTP. ``exec`` runs through
the same service as ``POST /api/secrets/exec`` (the allow-list, the timeout, the redaction,
the audit row), in this process. A value is read from a hidden prompt or from stdin, never
from the command line: arguments end up in shell history and in every user's ``ps``.
"""

from __future__ import annotations

import getpass
import json
import sys
from typing import Annotated

import typer

from signet.cli.app import app
from signet.errors import InvalidRequest, NotFound
from signet.secrets.names import check_name, check_value
from signet.secrets.service import SecretsService
from signet.secrets.store import SecretStore
from signet.secrets.store import reader as secret_reader
from signet.store.choose import build_store
from signet.workspace import Workspace

secret_app = typer.Typer(
    help="Encrypted secrets for commands the agent runs but never sees: put, list, has, delete, exec.",
    no_args_is_help=True,
)
app.add_typer(secret_app, name="secret")

ARGV_REFUSED = (
    "secret values are never taken from the command line (shell history and `ps` would show them); "
    "run `signet secret put NAME` and type it at the prompt, or pipe it on stdin"
)
TIMEOUT_EXIT = 124
"""Exit status when the command was killed at its timeout (as coreutils' ``timeout``)."""


def _store(ws: Workspace) -> SecretStore:
    return SecretStore(ws.secrets_dir, ws.settings().secrets.key_store)


def _read_value() -> str:
    if sys.stdin.isatty():
        value = getpass.getpass("Value (hidden): ")
        if getpass.getpass("Again: ") != value:
            raise InvalidRequest("the two values differ; nothing was stored")
        return value
    value = sys.stdin.read()
    if value.endswith("\r\n"):
        return value[:-2]
    return value[:-1] if value.endswith("\n") else value  # `echo VALUE |` adds one


@secret_app.command("put")
def put(
    name: Annotated[str, typer.Argument(help="The secret's name (an environment variable name, e.g. GITHUB_TOKEN).")],
    value: Annotated[list[str] | None, typer.Argument(hidden=True, show_default=False)] = None,
    value_option: Annotated[str | None, typer.Option("--value", hidden=True, show_default=False)] = None,
) -> None:
    """Store a secret: the value from a hidden prompt, or from stdin when it is piped."""
    if value or value_option is not None:
        raise InvalidRequest(ARGV_REFUSED)
    check_name(name)
    secret = check_value(_read_value())
    created = _store(Workspace.from_env()).put(name, secret)
    typer.echo(f"{'stored' if created else 'replaced'} secret {name}")


@secret_app.command("list")
def list_cmd(as_json: Annotated[bool, typer.Option("--json", help="Names and times as JSON.")] = False) -> None:
    """The secrets' names (never their values)."""
    entries = _store(Workspace.from_env()).entries()
    if as_json:
        typer.echo(
            json.dumps([{"name": e.name, "created_at": e.created_at, "updated_at": e.updated_at} for e in entries])
        )
        return
    if not entries:
        typer.echo("no secrets (add one with `signet secret put NAME`)")
    for e in entries:
        typer.echo(f"{e.name}\tupdated {e.updated_at}")


@secret_app.command("has")
def has(name: Annotated[str, typer.Argument(help="The secret's name.")]) -> None:
    """Exit 0 when the secret exists, 1 (with one line) when it does not."""
    if not _store(Workspace.from_env()).has(name):
        raise NotFound(f"no secret named {name}")
    typer.echo(f"{name} is set")


@secret_app.command("delete")
def delete(name: Annotated[str, typer.Argument(help="The secret's name.")]) -> None:
    """Remove a secret."""
    _store(Workspace.from_env()).delete(name)
    typer.echo(f"deleted secret {name}")


@secret_app.command("exec", context_settings={"allow_interspersed_args": False, "ignore_unknown_options": True})
def exec_cmd(
    command: Annotated[list[str], typer.Argument(help="The command and its arguments (after `--`).")],
    secret: Annotated[
        list[str], typer.Option("--secret", "-s", help="A secret to inject as the environment variable of its name.")
    ],
    timeout: Annotated[
        float | None,
        typer.Option("--timeout", help="Seconds before it is killed (default secrets.exec.timeoutSeconds)."),
    ] = None,
) -> None:
    """Run an allowed command (secrets.exec.allow) with secrets in its environment; its output
    is printed redacted and it exits with the command's status (124 on timeout)."""
    ws = Workspace.from_env()
    settings = ws.settings()
    store = SecretStore(ws.secrets_dir, settings.secrets.key_store)
    with build_store(ws, settings, secret_reader(ws.secrets_dir, settings.secrets.key_store)) as db:
        service = SecretsService(db, store, settings.secrets.exec, ws.root, origin="cli")
        prepared = service.prepare(command, [check_name(n) for n in secret], timeout, f"cli:{getpass.getuser()}")
        run = service.run(prepared)
    sys.stdout.write(run.stdout)
    sys.stdout.flush()
    sys.stderr.write(run.stderr)
    if run.truncated:
        typer.secho(
            f"note: output cut at secrets.exec.maxOutputBytes ({settings.secrets.exec.max_output_bytes})", err=True
        )
    if run.status == "timeout":
        typer.secho(f"error: {run.error}", err=True, fg="red")
        raise typer.Exit(TIMEOUT_EXIT)
    if run.status != "done" or run.exit_code is None:
        typer.secho(f"error: {run.error or run.status}", err=True, fg="red")
        raise typer.Exit(1)
    code = run.exit_code
    raise typer.Exit(code if code >= 0 else 128 - code)
