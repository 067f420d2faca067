"""``signet bench latency`` end to end in quick mode: a real daemon, real HTTP, the real model.

Only the report's shape and its correctness checks are asserted, never timings: speed is
measured by the benchmark itself (docs/benchmarks.md), not by tests.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
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
        f"recall_over_{b}_{p}" for b in ("fts5", "numpy", "brute_sum", "parts") for p in ("p50", "p95")
    } | {
        "fts5_over_keyword_index_p50",
        "fts5_over_keyword_index_p95",
        "rss_over_text_vectors_index",
        "rss_at_rest_over_text_vectors_index",
    }
    assert 0 < run["daemon_memory_kib_at_rest"] <= run["daemon_memory_kib_end"]["VmHWM"]
    assert set(run["targets"]) == {
        "recall_p95_under_40ms",
        "recall_p95_within_1_5x_of_its_parts",
        "remember_at_least_500_per_s",
        "db_within_3x_text_and_vectors",
        "rss_within_2x_text_vectors_index",
        "rss_at_rest_within_2x_text_vectors_index",
    }
    assert all(isinstance(v, bool) for v in run["targets"].values())
    # The vectors were cached: a second size reuses them as a prefix.
    assert list((tmp_path / "cache").glob("vectors-*-n120.npy"))


def test_latency_rejects_tiny_store_sizes() -> None:
    res = CliRunner().invoke(app, ["bench", "latency", "--memories", "100", "0"])
    assert res.exit_code == 2 and "at least 10" in res.output


def _tiny_locomo(path: Path) -> Path:
    """A LoCoMo-shaped file: two conversations, real-looking turns, a few questions."""
    turns = [
        "we drove up the coast road to Woodhaven last weekend and stopped at the old lighthouse, then walked"
        " along the cliffs for an hour before the rain came in and we had to run back to the car park",
        "my sister keeps asking whether the pottery class on Thursdays still has open seats, and I told her"
        " I would check with the teacher when I drop off the glazed bowls for the kiln on Monday morning",
        "the deploy failed again because the migration locked the sessions table for minutes while the old"
        " workers kept retrying their writes, so we rolled back and scheduled it for the quiet hours tonight",
        "I finally switched the team to the new build cache and the pipeline is twice as fast, although the"
        " first cold build after a dependency bump still takes as long as it used to before the change",
        "short",
    ]
    data = [
        {
            "conversation": {
                "speaker_a": "Kate",
                "speaker_b": "Sam",
                f"session_{s}": [
                    {"speaker": "Kate" if i % 2 else "Sam", "text": f"{t} ({c} {s})"} for i, t in enumerate(turns)
                ],
            },
            "qa": [{"question": f"Where did they drive in conversation {c}?", "category": 1}],
        }
        for c in range(3)
        for s in (1,)
    ]
    path.write_text(json.dumps(data))
    return path


def test_the_realistic_profile_keeps_threads_and_copies_lightly(tmp_path: Path) -> None:
    from signet.bench import realistic
    from signet.bench.latency import embed_bulk

    src = _tiny_locomo(tmp_path / "locomo.json")
    prof = realistic.build(20, locomo=src, longmemeval=None)
    assert realistic.build(9, locomo=src, longmemeval=None).samples == prof.samples[:9]  # prefix-stable
    assert len({s.content for s in prof.samples}) == 20  # every memory distinct (no dedup on store)
    originals = [s for s, c in zip(prof.samples, prof.copy, strict=True) if c == 0]
    assert len(originals) == len(prof.texts) == 15
    assert {s.source_id for s in originals} == {f"locomo:{c}:session_1" for c in range(3)}
    assert all(s.who in ("Kate", "Sam") and s.project.startswith("locomo-") for s in prof.samples)
    for s, b, c in zip(prof.samples, prof.base, prof.copy, strict=True):
        if c:  # one word dropped, its thread a copy of the original's; too short a turn is not copied
            assert "short" not in s.content
            assert len(s.content.split()) == len(prof.texts[b].split()) - 1 and s.source_id.endswith(f"#{c}")
    assert prof.questions == [f"Where did they drive in conversation {c}?" for c in range(3)]
    capped = realistic.build(20, locomo=src, longmemeval=None, max_distinct=4)
    assert (
        len(capped.texts) == 4 and set(capped.base) == {0, 1, 2, 3} and len({s.content for s in capped.samples}) == 20
    )

    embedded: list[int] = []

    def embed(texts: list[str]) -> Any:
        embedded.append(len(texts))
        return embed_bulk(texts, lambda *_: None)

    cache = tmp_path / "vcache"
    vecs, now = realistic.vectors(prof, 20, embed, cache, "local:all-MiniLM-L6-v2-int8")
    assert now == 15 and embedded == [15] and vecs.shape == (20, 384)
    again, now = realistic.vectors(prof, 20, embed, cache, "local:all-MiniLM-L6-v2-int8")
    assert now == 0 and embedded == [15] and np.array_equal(again, vecs)  # all from the cache
    norms = np.linalg.norm(vecs, axis=1)
    assert np.allclose(norms, 1.0, atol=1e-3)
    for i, (b, c) in enumerate(zip(prof.base, prof.copy, strict=True)):
        original = vecs[prof.base.index(b)]
        if c:  # near its original, not equal to it
            assert 0.95 < float(vecs[i] @ original) < 0.9999


def test_realistic_latency_quick_report_on_real_turns(tmp_path: Path) -> None:
    out = tmp_path / "latency.json"
    res = CliRunner().invoke(
        app,
        [
            "bench", "latency", "--memories", "150", "--quick", "--profile", "realistic",
            "--locomo", str(_tiny_locomo(tmp_path / "locomo.json")), "--vector-cache", str(tmp_path / "vc"), "--out", str(out),
        ],
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    (run,) = json.loads(out.read_text())["runs"]
    assert run["profile"] == "realistic" and run["memories"] == 150
    assert run["recall"]["n"] == 40 and run["recall"]["source_found_at_limit"] is None
    for key in ("recall_project_filter", "recall_time_filter"):
        assert run[key]["n"] == 40 and 0 < run[key]["p50"] <= run[key]["p95"]
    size = run["size"]
    assert size["text_bytes"] > 150 * 20 and size["db_bytes"] > size["text_bytes"]
    assert size["db_over_text"] == round(size["db_bytes"] / size["text_bytes"], 2)
    assert 0 < run["daemon_health_s"] <= run["daemon_api_s"] <= run["daemon_ready_s"]
    assert run["daemon_memory_kib_after_recall"]["VmRSS"] > 0 and run["daemon_memory_kib_end"]["VmHWM"] > 0
    assert run["remember"]["accepted"] == 200 and run["remember"]["errors"] == []
    assert run["seed"]["distinct_turns_embedded_now"] == 15 and run["seed"]["copies"] == 135


def test_the_realistic_profile_needs_the_files() -> None:
    res = CliRunner().invoke(app, ["bench", "latency", "--memories", "100", "--profile", "realistic"])
    assert res.exit_code == 2 and "--locomo and/or --longmemeval" in res.output


def test_bad_profile_options_are_one_readable_line() -> None:
    bogus = CliRunner().invoke(app, ["bench", "latency", "--memories", "100", "--profile", "bogus"])
    assert bogus.exit_code == 2 and "synthetic or realistic" in bogus.output
    zero = CliRunner().invoke(app, ["bench", "latency", "--memories", "100", "--distinct-turns", "0"])
    assert zero.exit_code == 2 and "--distinct-turns" in zero.output


def test_latency_measures_recall_with_the_graph_off_default_and_on(tmp_path: Path) -> None:
    """``--graph``: an LLM-shaped graph seeded for the store, the same questions asked with the
    graph's reads off, at the defaults and with traversal on (issue 18), in one run."""
    out = tmp_path / "latency.json"
    res = CliRunner().invoke(
        app,
        ["bench", "latency", "--memories", "60", "--quick", "--no-filters", "--graph", "--out", str(out)],
    )
    assert res.exit_code == 0, res.output
    assert "recall, graph on p95" in res.output and "graph default / off" in res.output
    (run,) = json.loads(out.read_text())["runs"]
    g = run["graph"]
    # every memory (60 seeded + 200 remembered) states one claim; an entity's claims cycle
    # through six keys, so most are superseded by a later value
    assert g["seeded"]["attributes"] == 260 and 0 < g["seeded"]["superseded"] < 260
    for arm in ("off", "default", "on"):
        assert g[arm]["n"] == 40 and 0 < g[arm]["p50"] <= g[arm]["p95"], arm
    assert set(g["on_over_off"]) == set(g["default_over_off"]) == {"p50", "p95", "p99"}


def test_a_kept_store_is_reused_and_its_remember_step_still_writes_new_memories(tmp_path: Path) -> None:
    """``--store``: the first run seeds and keeps the workspace, the second measures the same
    store without seeding it again, and its remember step still stores new memories (not
    repeats of the first run's)."""
    store = tmp_path / "stores"
    args = ["bench", "latency", "--memories", "60", "--quick", "--no-filters", "--cache-dir", str(tmp_path / "c")]
    runs = []
    for i in range(2):
        out = tmp_path / f"run{i}.json"
        res = CliRunner().invoke(app, [*args, "--store", str(store), "--out", str(out)])
        assert res.exit_code == 0, res.output
        (run,) = json.loads(out.read_text())["runs"]
        runs.append(run)
    first, second = runs
    assert first["store"] == {
        "path": str(store / "synthetic-60" / "ws"), "reused": False, "run": 1, "memories_added_by_earlier_runs": 0
    }  # fmt: skip
    assert second["store"]["reused"] is True and second["store"]["run"] == 2
    assert second["store"]["memories_added_by_earlier_runs"] == 200
    assert second["seed"]["store_s"] == first["seed"]["store_s"] > 0  # not seeded again
    assert second["remember"]["accepted"] == 200 and second["remember"]["errors"] == []
    assert second["size"]["db_bytes"] > first["size"]["db_bytes"]  # the first run's remembers are in it
    assert _live_memories(store / "synthetic-60" / "ws") == 60 + 200 + 200
    # A store seeded under other options (here: an older corpus) is seeded afresh in its place.
    marker = store / "synthetic-60" / "seeded.json"
    facts = json.loads(marker.read_text())
    marker.write_text(json.dumps({**facts, "key": {**facts["key"], "corpus": -1}}))
    out = tmp_path / "again.json"
    res = CliRunner().invoke(app, [*args, "--store", str(store), "--out", str(out)])
    assert res.exit_code == 0, res.output
    (third,) = json.loads(out.read_text())["runs"]
    assert third["store"]["reused"] is False and third["store"]["run"] == 1
    assert _live_memories(store / "synthetic-60" / "ws") == 60 + 200


def _live_memories(root: Path) -> int:
    from signet.store.sqlite import sqlite3
    from signet.workspace import Workspace

    conn = sqlite3.connect(Workspace(root).database_path())
    try:
        (count,) = conn.execute("SELECT COUNT(*) FROM memories WHERE deleted_at IS NULL").fetchone()
    finally:
        conn.close()
    return int(count)


def test_the_graph_run_is_not_measured_on_a_kept_store(tmp_path: Path) -> None:
    res = CliRunner().invoke(app, ["bench", "latency", "--memories", "60", "--graph", "--store", str(tmp_path)])
    assert res.exit_code == 2 and "without --store" in res.output


def test_an_interrupted_seeding_goes_on_where_it_stopped(tmp_path: Path) -> None:
    """Chunks commit whole: the stored prefix is found by their content hashes, and seeding
    again from there stores exactly the rest, once."""
    from signet.bench.latency import SEED_CHUNK, seed_workspace, seeded_prefix
    from signet.workspace import Workspace

    samples = generate(2 * SEED_CHUNK + 345, seed=5)
    rng = np.random.default_rng(5)
    vecs = rng.standard_normal((len(samples), 384)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    root = tmp_path / "ws"
    seed_workspace(root, samples[: 2 * SEED_CHUNK], vecs[: 2 * SEED_CHUNK], lambda *_: None)  # then "killed"
    db = Workspace(root).database_path()
    assert seeded_prefix(db, samples) == 2 * SEED_CHUNK
    assert seeded_prefix(db, samples[:SEED_CHUNK]) == SEED_CHUNK
    seed_workspace(root, samples, vecs, lambda *_: None, start=2 * SEED_CHUNK)
    assert seeded_prefix(db, samples) == len(samples)
    assert _live_memories(root) == len(samples)
    try:
        seed_workspace(root, samples, vecs, lambda *_: None, start=SEED_CHUNK + 1)
    except ValueError as exc:
        assert "chunk" in str(exc)
    else:
        raise AssertionError("a start inside a chunk was accepted")


def test_a_kept_store_whose_seeding_did_not_finish_is_completed_not_reseeded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from signet.bench import latency

    real = latency.seed_workspace

    def killed_after_one_chunk(root: Path, samples: list[Any], vectors: Any, *args: Any, **kw: Any) -> None:
        real(root, samples[: latency.SEED_CHUNK], vectors[: latency.SEED_CHUNK], *args, **kw)
        raise RuntimeError("seeding killed")

    store = tmp_path / "stores"
    args = ["bench", "latency", "--memories", "1500", "--quick", "--no-filters", "--cache-dir", str(tmp_path / "c")]
    args += ["--store", str(store)]
    with monkeypatch.context() as m:
        m.setattr(latency, "seed_workspace", killed_after_one_chunk)
        res = CliRunner().invoke(app, [*args, "--out", str(tmp_path / "a.json")])
    assert res.exit_code != 0 and not (store / "synthetic-1500" / "seeded.json").exists()
    assert _live_memories(store / "synthetic-1500" / "ws") == latency.SEED_CHUNK
    res = CliRunner().invoke(app, [*args, "--out", str(tmp_path / "b.json")])
    assert res.exit_code == 0, res.output
    (run,) = json.loads((tmp_path / "b.json").read_text())["runs"]
    assert run["seed"]["resumed_at"] == latency.SEED_CHUNK and run["store"]["reused"] is False
    assert _live_memories(store / "synthetic-1500" / "ws") == 1500 + 200  # nothing seeded twice
    # A seeding started under other options is not resumed: the store is seeded afresh.
    (store / "synthetic-1500" / "seeded.json").unlink()
    (store / "synthetic-1500" / "seeding.json").write_text(json.dumps({"key": {"memories": 1500, "corpus": -1}}))
    res = CliRunner().invoke(app, [*args, "--out", str(tmp_path / "c.json")])
    assert res.exit_code == 0, res.output
    (run,) = json.loads((tmp_path / "c.json").read_text())["runs"]
    assert "resumed_at" not in run["seed"]
    assert _live_memories(store / "synthetic-1500" / "ws") == 1500 + 200
