"""``signet bench latency`` end to end in quick mode: a real daemon, real HTTP, the real model.

Only the report's shape and its correctness checks are asserted, never timings: speed is
measured by the benchmark itself (docs/benchmarks.md), not by tests.
"""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from signet.bench.corpus import generate
from signet.bench.latency import pick_queries
from signet.cli.main import app


def test_corpus_is_deterministic_distinct_and_questions_are_not_copies() -> None:
    a, b = generate(500, seed=3), generate(500, seed=3)
    assert a == b
    assert generate(200, seed=3) == a[:200]  # prefix-stable: cached vectors of a larger run are reusable
    assert len({s.content.lower() for s in a}) == 500
    assert all(s.question.lower() not in s.content.lower() for s in a)
    queries = pick_queries(a, 50, seed=3)
    assert len({q for q, _ in queries}) == 50
    assert generate(500, seed=4) != a


def test_latency_quick_report(tmp_path: Path) -> None:
    out = tmp_path / "latency.json"
    res = CliRunner().invoke(
        app,
        ["bench", "latency", "--memories", "120", "--quick", "--cache-dir", str(tmp_path / "cache"), "--out", str(out)],
    )
    assert res.exit_code == 0, res.output
    assert "recall over HTTP p95" in res.output
    report = json.loads(out.read_text())
    assert report["benchmark"] == "latency" and report["machine"]["cpus"] >= 1
    (run,) = report["runs"]
    assert run["memories"] == 120 and run["seed"]["vectors_from_cache"] is False
    rec = run["recall"]
    assert rec["n"] == 40 and rec["methods"] == ["hybrid"]  # the query embedding was part of every recall
    assert 0 < rec["p50"] <= rec["p95"] <= rec["p99"]
    assert rec["source_found_at_limit"] >= 0.5  # questions about stored memories find them
    base = run["baselines"]
    assert base["fts5"]["n"] == 40 and base["fts5"]["mean_rows"] > 0
    # The in-memory keyword index answers every question with exactly FTS5's top 50.
    kw = base["keyword_index"]
    assert kw["n"] == 40 and kw["same_as_fts5"] == 40 and kw["postings"] > 0 and kw["build_s"] >= 0
    assert base["numpy"]["rows"] == 120 and base["numpy"]["dims"] == 384
    assert base["query_embedding"]["n"] == 40
    rem = run["remember"]
    assert rem["sent"] == rem["accepted"] == 200 and rem["errors"] == []
    assert rem["accepted_per_s"] > 0 and rem["server_cpu_ms_per_remember"] > 0
    assert set(run["ratios"]) == {
        f"recall_over_{b}_{p}" for b in ("fts5", "numpy", "brute_sum") for p in ("p50", "p95")
    } | {"fts5_over_keyword_index_p50", "fts5_over_keyword_index_p95"}
    assert set(run["targets"]) == {"recall_p95_under_40ms", "remember_at_least_500_per_s"}
    assert all(isinstance(v, bool) for v in run["targets"].values())
    # The vectors were cached: a second size reuses them as a prefix.
    assert list((tmp_path / "cache").glob("vectors-*-n120.npy"))


def test_latency_rejects_tiny_store_sizes() -> None:
    res = CliRunner().invoke(app, ["bench", "latency", "--memories", "100", "0"])
    assert res.exit_code == 2 and "at least 10" in res.output
