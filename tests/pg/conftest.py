"""PostgreSQL fixtures: one throwaway cluster per flavour for the session (tests.pgcluster).

- ``pg_cluster``  a running cluster, parametrised over both flavours (pgserver: PostgreSQL 18
                  with pgvector; debian15: the image's PostgreSQL 15, no pgvector)
- ``pg_url``      a fresh empty database on it for one test
- ``stores``      a factory of open stores on that one database: each one daemon's
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from signet.store.pg_url import resolve
from signet.store.postgres import PostgresDatabase
from tests import pgcluster

NO_PASSWORD = "env:SIGNET_TEST_NO_SUCH_VAR"
"""A password variable nobody sets: the test URLs carry theirs inline."""


@pytest.fixture(scope="session", params=pgcluster.FLAVOURS)
def pg_cluster(request: pytest.FixtureRequest) -> pgcluster.Cluster:
    try:
        return pgcluster.shared(str(request.param))
    except pgcluster.Unavailable as exc:
        pytest.skip(f"PostgreSQL ({request.param}) unavailable: {exc}")


@pytest.fixture
def pg_url(pg_cluster: pgcluster.Cluster) -> str:
    return pg_cluster.new_database()


@pytest.fixture
def stores(pg_url: str) -> Iterator[Callable[[], PostgresDatabase]]:
    made: list[PostgresDatabase] = []

    def make() -> PostgresDatabase:
        db = PostgresDatabase(resolve(pg_url, NO_PASSWORD)).open()
        made.append(db)
        return db

    yield make
    for db in made:
        db.close()
