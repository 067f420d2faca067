"""``signet backup``: back the database up now, list the backups, restore one.

A backup only reads the database (SQLite's online backup API), so it is taken directly from
the file whether the daemon runs or not, with the workspace's ``backup`` settings. A restore
replaces the file, so it needs the daemon stopped: it takes the daemon's lock, as
``signet repair`` does, and refuses while a daemon holds it."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from signet import instance
from signet.cli.app import app
from signet.errors import SignetError
from signet.store.backup import backup_dir, backup_file, find_backup, list_backups, restore_backup
from signet.store.choose import require_sqlite
from signet.store.integrity import StoreRecord
from signet.workspace import Workspace

backup_app = typer.Typer(
    help="Back the database up now (`signet backup`), list the backups, restore one.",
    invoke_without_command=True,
)
app.add_typer(backup_app, name="backup")


def _mb(n: int) -> str:
    return f"{n / 1e6:.1f} MB"


@backup_app.callback()
def backup(
    ctx: typer.Context,
    reason: Annotated[str, typer.Option("--reason", help="A word or two, kept in the file name.")] = "manual",
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Back the database up now (safe while the daemon runs), then remove the oldest backups
    beyond backup.keep. Refused when it would leave less than backup.min_free_mb free."""
    if ctx.invoked_subcommand is not None:
        return
    ws = Workspace.from_env()
    settings = ws.settings()
    require_sqlite(
        settings, "signet backup", "use the server's backups: pg_dump, or your provider's point-in-time recovery"
    )
    path = ws.database_path(settings)
    cfg = settings.backup
    result = backup_file(path, reason=reason, keep=cfg.keep, min_free_mb=cfg.min_free_mb)
    if as_json:
        typer.echo(json.dumps({"backup": result.backup.as_dict(), "removed": result.removed}))
        return
    typer.echo(f"backed up {path} to {result.backup.path} ({_mb(result.backup.size_bytes)}, verified)")
    if result.removed:
        typer.echo(
            f"removed {len(result.removed)} old backup(s) (backup.keep is {cfg.keep}): {', '.join(result.removed)}"
        )


@backup_app.command("list")
def list_cmd(as_json: Annotated[bool, typer.Option("--json")] = False) -> None:
    """The backups beside the database, oldest first."""
    ws = Workspace.from_env()
    settings = ws.settings()
    directory = backup_dir(ws.database_path(settings))
    found = list_backups(directory)
    if as_json:
        typer.echo(json.dumps({"directory": str(directory), "backups": [b.as_dict() for b in found]}))
        return
    if not found:
        typer.echo(f"no backups in {directory}; `signet backup` takes one")
        return
    typer.echo(f"{len(found)} backup(s) in {directory} (backup.keep is {settings.backup.keep}), oldest first:")
    for b in found:
        typer.echo(f"  {b.name}  {b.created_at}  {_mb(b.size_bytes)}  {b.reason}")


@backup_app.command("restore")
def restore_cmd(
    name: Annotated[str, typer.Argument(help="A backup's name from `signet backup list`, or a path to a backup file.")],
) -> None:
    """Put a backup in place of the database (the daemon must be stopped). The database it
    replaces is kept beside it (memories.db.pre-restore-TIME)."""
    ws = Workspace.from_env()
    settings = ws.settings()
    require_sqlite(settings, "signet backup restore", "restore with pg_restore or psql from a pg_dump")
    path = ws.database_path(settings)
    source = find_backup(path, name)
    lock = instance.DaemonLock(ws.daemon_dir)
    if not lock.acquire(wait=0.5):  # held for the restore: no daemon may open the file meanwhile
        raise SignetError(
            "the daemon is running: stop it first (`signet stop`), then run `signet backup restore "
            f"{name}` and start it again with `signet start`"
        )
    try:
        report = restore_backup(source, path, min_free_mb=settings.backup.min_free_mb)
        StoreRecord(ws.daemon_dir).save(report.memories)  # the restored count is what to expect now
    finally:
        lock.release()
    kept = f"; the database it replaced is kept at {report.previous}" if report.previous else ""
    typer.echo(
        f"restored {source.name} ({report.memories} memories) to {path}{kept}; start the daemon with `signet start`"
    )
