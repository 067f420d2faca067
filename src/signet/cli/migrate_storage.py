"""``signet migrate-storage``: copy a store from SQLite to PostgreSQL, or back, and prove it.

The copy itself is :mod:`signet.store.transfer_storage`; this command names the two ends,
keeps the daemon away from the workspace's file while it runs (the daemon lock, as
``signet backup restore`` takes it), shows progress, and prints the per-table comparison.
A copy is only ever made into an empty target: there is no ``--force``, because the one
thing a migration must never do is overwrite a team's database after a typo in a URL.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from signet import instance
from signet.cli.app import app
from signet.errors import Conflict, InvalidRequest, SignetError
from signet.secrets.store import SecretStore
from signet.workspace import Workspace

if TYPE_CHECKING:  # they import psycopg, which only the postgres extra installs: see _require_postgres
    from signet.store.transfer_storage import AnyEnd, PostgresEnd, TransferReport

_PG_SCHEMES = ("postgresql://", "postgres://")


def _is_pg(spec: str) -> bool:
    return spec.lower().startswith(_PG_SCHEMES)


def _require_postgres() -> None:
    """The command needs the ``postgres`` extra (psycopg, sqlglot); the default install has
    neither, and every other command must start without them (this module is imported with
    the CLI), so the store modules that need them are imported only past this check."""
    try:
        import psycopg  # noqa: F401
        import psycopg_pool  # noqa: F401
        import sqlglot  # noqa: F401
    except ImportError as exc:
        raise InvalidRequest(
            f"signet migrate-storage needs PostgreSQL support ({exc.name or exc} is not installed): "
            "pip install 'signet-memory[postgres]'"
        ) from None


def _sqlite_path(spec: str, ws: Workspace) -> Path:
    from signet.store import pg_url

    if spec == "sqlite":
        return ws.database_path(ws.settings())
    if spec.startswith("sqlite:") and len(spec) > len("sqlite:"):
        return Path(spec[len("sqlite:") :]).expanduser().resolve()
    raise InvalidRequest(
        f"cannot tell what {pg_url.redact(spec)!r} is: give postgresql://… , sqlite:PATH, or sqlite (this workspace)"
    )


def _pg_end(spec: str, password: str, ws: Workspace) -> PostgresEnd:
    from signet.store import pg_url
    from signet.store.transfer_storage import PostgresEnd

    def secret(name: str) -> str | None:
        return SecretStore(ws.secrets_dir, ws.settings().secrets.key_store).values([name]).get(name)

    try:
        target = pg_url.resolve(spec, password, secret=secret)
    except pg_url.PasswordUnavailable as exc:
        raise InvalidRequest(str(exc)) from None
    except ValueError:  # libpq's parse error quotes the URL around the fault, password included
        raise InvalidRequest(
            "the PostgreSQL URL cannot be parsed: percent-encode special characters (space, @, :, /, ?, #, %) "
            "in its user and password, or leave the password out and use --password env:NAME"
        ) from None
    return PostgresEnd(target)


def _report(report: TransferReport) -> None:
    verb = "would copy" if report.dry_run else "copied"
    typer.echo(f"{verb} {report.rows} rows in {len(report.tables)} tables from {report.source} to {report.target}")
    if report.dry_run:
        for t in report.tables:
            typer.echo(f"  {t.name:<32} {t.source_rows:>9} rows")
    else:
        typer.echo(f"  {'table':<32} {'source':>9} {'target':>9}  sha256 (source / target)")
        for t in report.tables:
            mark = "same" if t.same else "DIFFERENT"
            typer.echo(
                f"  {t.name:<32} {t.source_rows:>9} {t.target_rows:>9}  {t.source_hash[:12]} / {t.target_hash[:12]}  {mark}"
            )
    typer.echo(f"not copied, rebuilt by the target: {', '.join(report.not_copied)}")


@app.command("migrate-storage")
def migrate_storage(
    to: Annotated[
        str,
        typer.Option(
            "--to", help="Where to copy to: postgresql://user@host:5432/db, or sqlite:PATH (a new SQLite file)."
        ),
    ],
    source: Annotated[
        str,
        typer.Option("--from", help="Where to copy from: sqlite (this workspace's store), sqlite:PATH, or a URL."),
    ] = "sqlite",
    password: Annotated[
        str | None,
        typer.Option(
            "--password",
            help="Where the PostgreSQL password comes from: env:NAME or secret:NAME (default: storage.password).",
        ),
    ] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Count and check both sides; write nothing.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="The report as one JSON object.")] = False,
) -> None:
    """Copy every table of the store to an empty PostgreSQL database (or a PostgreSQL store to
    a new SQLite file), then compare row counts and SHA-256 hashes per table. The daemon must
    be stopped; the target must be empty."""
    _require_postgres()
    from signet.store.transfer_storage import SqliteEnd, transfer

    ws = Workspace.from_env()
    ref = password if password is not None else ws.settings().storage.password
    if _is_pg(source) == _is_pg(to):
        raise InvalidRequest("one side must be SQLite and the other PostgreSQL (--from sqlite --to postgresql://…)")
    lite_spec = to if _is_pg(source) else source
    lite_path = _sqlite_path(lite_spec, ws)
    try:
        mine = ws.database_path(ws.settings())
    except SignetError:
        mine = None
    lock: instance.DaemonLock | None = None
    if mine is not None and lite_path == mine.resolve():
        if dry_run:
            if instance.running(ws.daemon_dir) is not None:
                raise Conflict("the daemon is running on this store: stop it first (`signet stop`)")
        else:
            lock = instance.DaemonLock(ws.daemon_dir)
            if not lock.acquire(wait=0.5):  # held for the copy: no daemon may write the store meanwhile
                raise Conflict(
                    "the daemon is running on this store: stop it first (`signet stop`), then run "
                    "`signet migrate-storage` again"
                )
    ends: list[AnyEnd] = []
    try:
        if _is_pg(source):
            src: AnyEnd = _pg_end(source, ref, ws)
            ends.append(src)
            dst: AnyEnd = SqliteEnd(lite_path, create=True, dry_run=dry_run)
            ends.append(dst)
        else:
            src = SqliteEnd(lite_path, create=False)
            ends.append(src)
            dst = _pg_end(to, ref, ws)
            ends.append(dst)
        console = Console(stderr=True)
        with Progress(
            TextColumn("[bold]copying {task.fields[table]}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=console,
            transient=False,
            disable=not console.is_terminal or as_json,
        ) as progress:
            task = progress.add_task("copy", total=None, table="")

            def on_plan(total: int) -> None:
                progress.update(task, total=total)

            def on_batch(table: str, n: int) -> None:
                progress.update(task, advance=n, table=table)

            report = transfer(src, dst, dry_run=dry_run, on_plan=on_plan, on_batch=on_batch)
    finally:
        for end in reversed(ends):
            end.close()
        if lock is not None:
            lock.release()
    if as_json:
        typer.echo(json.dumps(report.as_dict()))
    else:
        _report(report)
    if report.mismatched:
        raise Conflict(
            f"verification failed: {', '.join(report.mismatched)} differ between {report.source} and {report.target}"
            " (the target was written; drop it and copy again)"
        )
