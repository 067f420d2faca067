"""PostgreSQL fixtures: one throwaway cluster per flavour for the session (tests.pgcluster).

- ``pg_cluster``  a running cluster, parametrised over both flavours (pgserver: PostgreSQL 18
                  with pgvector; debian15: the image's PostgreSQL 15, no pgvector)
- ``pg_url``      a fresh empty database on it for one test
"""

from __future__ import annotations

import pytest

from tests import pgcluster


@pytest.fixture(scope="session", params=pgcluster.FLAVOURS)
def pg_cluster(request: pytest.FixtureRequest) -> pgcluster.Cluster:
    try:
        return pgcluster.shared(str(request.param))
    except pgcluster.Unavailable as exc:
        pytest.skip(f"PostgreSQL ({request.param}) unavailable: {exc}")


@pytest.fixture
def pg_url(pg_cluster: pgcluster.Cluster) -> str:
    return pg_cluster.new_database()
