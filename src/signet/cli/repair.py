"""``signet repair``: get back what a damaged database still holds (``--recover``), or compact
a store made before incremental auto-vacuum (``--vacuum``). Both need the daemon stopped."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Annotated

import typer

from signet import instance
from signet.cli.app import app
from signet.errors import SignetError
from signet.store.choose import require_sqlite
from signet.workspace import Workspace


@app.command()
def repair(
    recover: Annotated[
        bool,
        typer.Option("--recover", help="Copy every readable row of a damaged database into a fresh one and swap them."),
    ] = False,
    vacuum: Annotated[
        bool,
        typer.Option(
            "--vacuum",
            help="Compact the database and switch it to incremental auto-vacuum (space freed by purges goes back).",
        ),
    ] = False,
) -> None:
    """Repair the workspace's database while the daemon is stopped (the damaged file is kept)."""
    if vacuum and not recover:
        _vacuum(Workspace.from_env())
        return
    if not recover:
        raise SignetError(
            "say what to repair: `signet repair --recover` rebuilds a damaged database from what it still holds; "
            "`signet repair --vacuum` compacts it"
        )
    from signet.store.integrity import StoreRecord
    from signet.store.integrity import recover as recover_database

    ws = Workspace.from_env()
    require_sqlite(
        ws.settings(), "signet repair --recover", "the server recovers its own pages; restore a pg_dump if data is lost"
    )
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
        orphaned = _clean_orphans(path)
    finally:
        lock.release()
    rows = sum(report.tables.values())
    skipped = sum(report.skipped.values())
    typer.echo(
        f"recovered {memories} memories ({rows} rows in {len(report.tables)} tables)"
        + (f"; {skipped} unreadable rows skipped" if skipped else "")
        + (f"; {orphaned} rows of memories that could not be recovered removed" if orphaned else "")
        + f"; the damaged file is kept at {report.damaged_copy}; start the daemon with `signet start`"
    )


def _clean_orphans(path: Path) -> int:
    """Vectors, graph links, jobs, injection log and ratings of the memories a damaged page took
    with it point at nothing in the recovered store: removed (signet.ops.orphans), so the
    store starts clean instead of with a fault for the maintenance worker."""
    from signet.ops import orphans
    from signet.store.database import connect

    conn = connect(path)
    total = 0
    try:
        while True:
            conn.execute("BEGIN IMMEDIATE")
            try:
                removed = sum(orphans.clean(conn).values())
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            total += removed
            if not removed:
                return total
    finally:
        conn.close()


def _vacuum(ws: Workspace) -> None:
    from signet.store import space
    from signet.store.database import connect

    require_sqlite(ws.settings(), "signet repair --vacuum", "PostgreSQL's autovacuum reclaims space (or run VACUUM)")
    path = ws.database_path()
    if not path.is_file():
        raise SignetError(f"no database at {path}: nothing to compact")
    lock = instance.DaemonLock(ws.daemon_dir)
    if not lock.acquire(wait=0.5):
        raise SignetError("the daemon is running: stop it first (`signet stop`), then run `signet repair --vacuum`")
    try:
        free = shutil.disk_usage(path.parent).free
        size = path.stat().st_size
        if free < size:
            raise SignetError(
                f"compacting needs about {size >> 20} MB free beside the database; {free >> 20} MB are: free some space"
            )
        conn = connect(path)
        try:
            mode = space.convert(conn)
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        finally:
            conn.close()
    finally:
        lock.release()
    typer.echo(f"compacted {path}: {size >> 20} MB -> {path.stat().st_size >> 20} MB; auto-vacuum {mode}")
