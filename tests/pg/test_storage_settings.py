"""``storage:`` in agent.yaml and the PostgreSQL password: read from where it is named, never shown."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from signet.config import parse_settings
from signet.errors import ConfigError, StorageError
from signet.secrets.store import SecretStore
from signet.store.pg_url import PasswordUnavailable, redact, resolve, scrub
from signet.store.postgres import PostgresDatabase
from signet.workspace import Workspace
from tests.pgcluster import Cluster

SECRET = "hunter2-Zq9!x"


def test_sqlite_is_the_default() -> None:
    s = parse_settings({})
    assert s.storage.backend == "sqlite" and s.storage.url is None
    assert s.storage.password == "env:SIGNET_PG_PASSWORD"


def test_postgres_needs_a_url() -> None:
    with pytest.raises(ConfigError, match=r"storage\.url"):
        parse_settings({"storage": {"backend": "postgres"}})


@pytest.mark.parametrize(
    "url",
    [f"mysql://admin:{SECRET}@db/x", f"http://admin:{SECRET}@db/x", f"admin:{SECRET}@db/x"],
)
def test_a_wrong_url_is_refused_without_echoing_it(url: str) -> None:
    with pytest.raises(ConfigError) as err:
        parse_settings({"storage": {"backend": "postgres", "url": url}})
    assert SECRET not in str(err.value) and "postgresql://" in str(err.value)


@pytest.mark.parametrize("ref", ["hunter2", "file:/etc/shadow", "env:", "secret:../../x", "env:A B"])
def test_the_password_is_a_reference_never_a_value(ref: str) -> None:
    with pytest.raises(ConfigError, match=r"storage\.password"):
        parse_settings({"storage": {"backend": "postgres", "url": "postgresql://db/x", "password": ref}})


def test_settings_never_print_the_url() -> None:
    s = parse_settings({"storage": {"backend": "postgres", "url": f"postgresql://u:{SECRET}@db/x"}})
    assert SECRET not in repr(s) and SECRET not in str(s) and SECRET not in repr(s.storage)


def test_choosing_postgres_builds_the_postgres_store_without_the_password_in_sight(tmp_path: Path) -> None:
    from signet.store.choose import build_store
    from signet.store.postgres import PostgresDatabase

    ws = Workspace(tmp_path)
    s = parse_settings({"storage": {"backend": "postgres", "url": f"postgresql://u:{SECRET}@db/x", "poolSize": 3}})
    store = build_store(ws, s)
    assert isinstance(store, PostgresDatabase) and store.pool_size == 3
    assert store.target.password == SECRET and SECRET not in repr(store) and SECRET not in store.target.conninfo
    assert SECRET not in str(store.describe())


def test_a_missing_named_secret_is_one_line_naming_it(tmp_path: Path) -> None:
    from signet.secrets.store import reader
    from signet.store.choose import build_store

    s = parse_settings({"storage": {"backend": "postgres", "url": "postgresql://u@db/x", "password": "secret:TEAM_PG"}})
    ws = Workspace(tmp_path)
    with pytest.raises(ConfigError, match="signet secret put TEAM_PG"):
        build_store(ws, s, reader(ws.secrets_dir, "file"))


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        (f"postgresql://u:{SECRET}@db:5432/x", "postgresql://u:***@db:5432/x"),
        (f"postgresql://db/x?password={SECRET}&sslmode=require", "postgresql://db/x?password=***&sslmode=require"),
        ("postgresql://u@db/x", "postgresql://u@db/x"),
    ],
)
def test_redact(url: str, shown: str) -> None:
    assert redact(url) == shown
    assert SECRET not in scrub(f"could not connect to {url}", SECRET)


def test_the_password_comes_from_the_environment() -> None:
    t = resolve("postgresql://u@db:5432/x", "env:MY_PG_PW", environ={"MY_PG_PW": SECRET})
    assert t.password == SECRET and SECRET not in t.conninfo and SECRET not in repr(t)
    assert resolve("postgresql://u@db/x", "env:MY_PG_PW", environ={}).password is None


def test_the_password_comes_from_the_secret_store(tmp_path: Path) -> None:
    store = SecretStore(tmp_path / ".secrets", "file")
    store.put("PG_PASSWORD", SECRET)

    def lookup(name: str) -> str | None:
        return store.values([name])[name] if store.has(name) else None

    assert resolve("postgresql://u@db/x", "secret:PG_PASSWORD", secret=lookup).password == SECRET
    with pytest.raises(PasswordUnavailable, match="signet secret put OTHER"):
        resolve("postgresql://u@db/x", "secret:OTHER", secret=lookup)


def test_an_inline_password_is_moved_out_of_the_conninfo() -> None:
    t = resolve(f"postgresql://u:{SECRET}@db/x", "env:NOT_USED", environ={"NOT_USED": "other"})
    assert t.password == SECRET and SECRET not in t.conninfo


@pytest.mark.parametrize("tail", ["wrong'; DROP TABLE memories; --@db/x", "has space@db/x", "%zz@db/x"])
def test_a_url_libpq_cannot_parse_is_refused_without_its_password(tail: str) -> None:
    """libpq's parse error quotes the URL around the fault: none of it may be shown."""
    url = f"postgresql://u:{SECRET}{tail}"
    with pytest.raises(ValueError) as caught:
        resolve(url, "env:NOT_USED", environ={})
    assert SECRET not in str(caught.value) and "DROP" not in str(caught.value) and "percent-encode" in str(caught.value)


def _tcp(cluster: Cluster) -> Cluster:
    if cluster.port is None or cluster.password is None:
        pytest.skip("this flavour listens on a trusted unix socket: no password to leak")
    return cluster


def test_a_real_server_is_reached_with_the_password_from_the_environment(pg_cluster: Cluster, pg_url: str) -> None:
    cluster = _tcp(pg_cluster)
    bare = cluster.url_for(pg_url.rsplit("/", 1)[1], password=False)
    assert "postgres@127.0.0.1" in bare
    with PostgresDatabase(resolve(bare, "env:PGPW", environ={"PGPW": str(cluster.password)})) as db:
        assert db.read(lambda c: c.execute("SELECT 1").fetchone()[0]) == 1


def test_a_wrong_password_is_never_logged_or_shown(pg_cluster: Cluster, caplog: pytest.LogCaptureFixture) -> None:
    cluster = _tcp(pg_cluster)
    url = f"postgresql://postgres:{SECRET}@127.0.0.1:{cluster.port}/postgres"
    caplog.set_level(logging.DEBUG)
    db = PostgresDatabase(resolve(url, "env:UNUSED"))
    with pytest.raises(StorageError) as err:
        db.open()
    shown = f"{err.value} {err.value.message} {err.value!r} {db!r} {caplog.text}"
    assert "password authentication failed" in str(err.value)
    assert SECRET not in shown
