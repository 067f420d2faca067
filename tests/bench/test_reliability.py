"""``signet bench reliability`` end to end in quick mode, on a small LoCoMo-format file: a real
daemon, real load, real idle sockets, real SIGKILLs and schemathesis against it.

The properties the benchmark reports that hold on any machine are asserted (nothing
acknowledged lost, no 5xx, full conformance, a store that checks clean, no keyword-index
churn); RSS and timings are figures for docs/reliability.md, never asserted here.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from signet.bench.conversations import load
from signet.bench.corpus import generate
from signet.cli.main import app


def locomo_file(tmp_path: Path, turns: int) -> Path:
    samples = generate(turns, seed=11)
    conv: dict[str, object] = {"speaker_a": "Ana", "speaker_b": "Bo"}
    for s in range(turns // 50):
        conv[f"session_{s + 1}_date_time"] = "1:56 pm on 8 May, 2023"
        conv[f"session_{s + 1}"] = [
            {"speaker": "Ana" if i % 2 else "Bo", "dia_id": f"D{s + 1}:{i}", "text": x.content}
            for i, x in enumerate(samples[s * 50 : (s + 1) * 50])
        ]
    qa = [{"question": x.question, "answer": "", "evidence": [], "category": 1} for x in samples[:40]]
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps([{"sample_id": "s1", "conversation": conv, "qa": qa}]))
    return path


def test_conversations_are_distinct_deterministic_and_split(tmp_path: Path) -> None:
    path = locomo_file(tmp_path, 200)
    a = load(150, locomo=path, longmemeval=None, spare=30)
    assert a == load(150, locomo=path, longmemeval=None, spare=30)
    assert len(a.turns) == 150 and len(a.spare) == 30 and not set(a.turns) & set(a.spare)
    assert len(a.questions) == 40 and all(t.startswith(("Ana: ", "Bo: ")) for t in a.turns)


@pytest.mark.long  # ~4 minutes: kills, soak and fuzz have their own tests in tests/core
def test_reliability_quick_report(tmp_path: Path) -> None:
    out = tmp_path / "reliability.json"
    res = CliRunner().invoke(
        app,
        [
            "bench",
            "reliability",
            "--locomo",
            str(locomo_file(tmp_path, 300)),
            "--quick",
            "--idle-connections",
            "150",
            "--out",
            str(out),
        ],
    )
    assert res.exit_code == 0, res.output
    assert "acknowledged writes" in res.output
    report = json.loads(out.read_text())
    soak, kills, fuzz = report["soak"], report["kills"], report["fuzz"]
    assert soak["load"]["requests"] > 0 and soak["load"]["server_errors_5xx"] == 0
    assert not soak["load"]["client_errors"]
    assert soak["idle_connections"]["open_on_server_median"] >= 150  # the flood was really held
    assert soak["keyword_index"]["rebuilds"] == 0
    assert soak["rss_mb_after_warmup"] > 0 and soak["rss_mb_end"] > 0
    assert kills["rounds"] == 2 and kills["acknowledged"] > 0 and kills["acknowledged_lost"] == 0
    assert kills["integrity_check"] == "ok" and kills["fts_integrity"] == "ok"
    assert kills["memories_without_history"] == 0 and kills["history_without_memory"] == 0
    assert fuzz["ran"] and fuzz["operations"] > 30 and fuzz["failures"] == 0, fuzz["failed"]
    assert set(report["verdict"]) >= {"passed", "no_acknowledged_write_lost", "rss_settles_within_1_2x"}


def test_reliability_needs_real_conversations() -> None:
    res = CliRunner().invoke(app, ["bench", "reliability", "--quick"])
    assert res.exit_code != 0 and "--locomo" in res.output
