"""``signet repair --recover``: get back what a damaged database still holds."""

from __future__ import annotations

from typing import Annotated

import typer

from signet import instance
from signet.cli.app import app
from signet.errors import SignetError
from signet.workspace import Workspace


@app.command()
def repair(
    recover: Annotated[
        bool,
        typer.Option("--recover", help="Copy every readable row of a damaged database into a fresh one and swap them."),
    ] = False,
) -> None:
    """Repair the workspace's database while the daemon is stopped (the damaged file is kept)."""
    if not recover:
        raise SignetError(
            "say what to repair: `signet repair --recover` rebuilds a damaged database from what it still holds"
        )
    from signet.store.integrity import StoreRecord
    from signet.store.integrity import recover as recover_database

    ws = Workspace.from_env()
    path = ws.database_path()
    if not path.is_file() or path.stat().st_size == 0:
        raise SignetError(f"no database to recover at {path}; restore it from a backup")
    lock = instance.DaemonLock(ws.daemon_dir)
    if not lock.acquire(wait=0.5):  # held for the repair: no daemon may open the file meanwhile
        raise SignetError("the daemon is running: stop it first (`signet stop`), then run `signet repair --recover`")
    try:
        report = recover_database(path)
        memories = report.tables.get("memories", 0)
        StoreRecord(ws.daemon_dir).save(memories)
    finally:
        lock.release()
    rows = sum(report.tables.values())
    skipped = sum(report.skipped.values())
    typer.echo(
        f"recovered {memories} memories ({rows} rows in {len(report.tables)} tables)"
        + (f"; {skipped} unreadable rows skipped" if skipped else "")
        + f"; the damaged file is kept at {report.damaged_copy}; start the daemon with `signet start`"
    )
