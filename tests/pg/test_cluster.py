"""The throwaway clusters themselves: they start, answer, and have what each flavour promises."""

from __future__ import annotations

import psycopg

from tests.pgcluster import Cluster


def test_cluster_answers_and_reports_its_extensions(pg_cluster: Cluster, pg_url: str) -> None:
    with psycopg.connect(pg_url, autocommit=True) as conn:
        version = conn.execute("SHOW server_version_num").fetchone()
        assert version is not None
        available = {r[0] for r in conn.execute("SELECT name FROM pg_available_extensions").fetchall()}
    assert int(version[0]) >= 150000
    assert ("vector" in available) is pg_cluster.has_vector
    assert pg_cluster.started_s < 60


def test_tcp_needs_the_password(pg_cluster: Cluster) -> None:
    if pg_cluster.port is None:  # the pgserver flavour listens on a trusted unix socket only
        return
    url = pg_cluster.url_for("postgres", password=False)
    try:
        psycopg.connect(url, connect_timeout=5).close()
    except psycopg.OperationalError as exc:
        assert "password" in str(exc)
    else:
        raise AssertionError("a TCP connection without the password was accepted")
