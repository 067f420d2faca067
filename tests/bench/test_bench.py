"""Benchmarks on small built files (keyword-only store: fast) and a LoCoMo slice when present."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from signet.bench import locomo, longmemeval
from signet.bench.harness import bench_runtime
from signet.bench.metrics import all_at, hit_at, mrr, ndcg_at, percentile, recall_at
from signet.cli.main import app

LOCOMO = Path("/work/shared/bench-data/locomo10.json")


def test_metrics() -> None:
    ranked = ["a", "b", "c", "d"]
    assert recall_at(ranked, {"b", "z"}, 2) == 0.5
    assert hit_at(ranked, {"c"}, 2) == 0.0 and hit_at(ranked, {"c"}, 3) == 1.0
    assert all_at(ranked, {"a", "b"}, 2) == 1.0 and all_at(ranked, set(), 2) == 0.0
    assert mrr(ranked, {"c"}) == pytest.approx(1 / 3)
    assert ndcg_at(ranked, {"a"}, 5) == 1.0
    assert percentile([1.0, 2.0, 3.0, 4.0], 50) == 2.0 and percentile([], 95) == 0.0


def _locomo_file(tmp_path: Path) -> Path:
    conv = {
        "speaker_a": "Ana",
        "speaker_b": "Bo",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [
            {"speaker": "Ana", "dia_id": "D1:1", "text": "I adopted a greyhound called Pixel last week."},
            {"speaker": "Bo", "dia_id": "D1:2", "text": "Lovely! I started pottery classes in Lisbon."},
        ],
        "session_2_date_time": "10:00 am on 20 June, 2023",
        "session_2": [
            {"speaker": "Ana", "dia_id": "D2:1", "text": "Pixel loves the beach.", "blip_caption": "a dog on sand"},
            {"speaker": "Bo", "dia_id": "D2:2", "text": "My pottery teacher moved to Porto."},
        ],
    }
    qa = [
        {"question": "What is the name of Ana's greyhound?", "answer": "Pixel", "evidence": ["D1:1"], "category": 4},
        {"question": "Where did Bo take pottery classes?", "answer": "Lisbon", "evidence": ["D1:2"], "category": 1},
        {"question": "Who moved to Porto?", "answer": "teacher", "evidence": [], "category": 2},
        {"question": "adversarial", "adversarial_answer": "x", "evidence": ["D1:1"], "category": 5},
    ]
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps([{"sample_id": "s1", "conversation": conv, "qa": qa}]))
    return path


def test_locomo_small_file(tmp_path: Path) -> None:
    convs = locomo.load(_locomo_file(tmp_path))
    assert len(convs[0].turns) == 4 and len(convs[0].questions) == 3  # category 5 left out
    assert "[shared a photo: a dog on sand]" in convs[0].turns[2].content
    assert convs[0].turns[2].when is not None and convs[0].turns[2].when.month == 6
    rep = locomo.run(_locomo_file(tmp_path), embedding="none")
    assert rep.questions == 2 and rep.skipped_no_evidence == 1 and rep.turns == 4
    assert rep.overall["recall@5"] == 1.0
    assert set(rep.per_category) == {"single-hop", "multi-hop"}


def _lme_file(tmp_path: Path) -> Path:
    items = [
        {
            "question_id": "q1",
            "question_type": "single-session-user",
            "question": "What breed is my dog?",
            "answer": "beagle",
            "question_date": "2023/06/01 (Thu) 10:00",
            "haystack_session_ids": ["answer_s1", "s2"],
            "haystack_dates": ["2023/05/01 (Mon) 09:00", "2023/05/02 (Tue) 09:00"],
            "haystack_sessions": [
                [
                    {"role": "user", "content": "My dog is a beagle named Rex.", "has_answer": True},
                    {"role": "assistant", "content": "Beagles are great."},
                ],
                [{"role": "user", "content": "I need a recipe for lentil soup."}],
            ],
            "answer_session_ids": ["answer_s1"],
        },
        {
            "question_id": "q2",
            "question_type": "single-session-user",
            "question": "What soup recipe did I ask for?",
            "answer": "lentil",
            "question_date": "2023/06/01 (Thu) 10:00",
            "haystack_session_ids": ["answer_s1", "s2"],
            "haystack_dates": ["2023/05/01 (Mon) 09:00", "2023/05/02 (Tue) 09:00"],
            "haystack_sessions": [
                [{"role": "user", "content": "My dog is a beagle named Rex."}],
                [{"role": "user", "content": "I need a recipe for lentil soup."}],
            ],
            "answer_session_ids": ["s2"],
        },
        {
            "question_id": "q3_abs",
            "question_type": "x",
            "question": "?",
            "answer": "",
            "haystack_session_ids": [],
            "haystack_sessions": [],
            "answer_session_ids": [],
        },
    ]
    path = tmp_path / "lme.json"
    path.write_text(json.dumps(items))
    return path


def test_longmemeval_small_file(tmp_path: Path) -> None:
    rep = longmemeval.run(_lme_file(tmp_path), embedding="none")
    assert rep["questions"] == 2 and rep["skipped"] == 1
    # Both questions share sessions: each must be answered from its own haystack.
    assert rep["overall"]["recall_all@5"] == 1.0 and rep["overall"]["ndcg@5"] == 1.0


def test_cli_locomo_json(tmp_path: Path) -> None:
    out = CliRunner().invoke(app, ["bench", "locomo", str(_locomo_file(tmp_path)), "--embedding", "none", "--json"])
    assert out.exit_code == 0, out.output
    assert json.loads(out.output)["questions"] == 2


@pytest.mark.skipif(not LOCOMO.exists(), reason="LoCoMo data not present")
def test_locomo_slice() -> None:
    rep = locomo.run(LOCOMO, embedding="none", limit_conversations=1, limit_questions=40)
    assert rep.questions > 30
    assert rep.overall["recall@10"] > 0.3


def test_cli_longmemeval_out_file_has_the_documented_shape(tmp_path: Path) -> None:
    out_file = tmp_path / "results.jsonl"
    res = CliRunner().invoke(
        app, ["bench", "longmemeval", str(_lme_file(tmp_path)), "--embedding", "none", "--out", str(out_file), "--json"]
    )
    assert res.exit_code == 0, res.output
    assert json.loads(res.output)["questions"] == 2
    rows = [json.loads(line) for line in out_file.read_text().splitlines()]
    assert [r["question_id"] for r in rows] == ["q1", "q2"]  # the abstention question is left out
    assert all(set(r) == {"question_id", "question_type", "ranked_session_ids"} for r in rows)
    # Original session ids, distinct, best first: each question's own answer session leads.
    assert rows[0]["ranked_session_ids"][0] == "answer_s1" and rows[1]["ranked_session_ids"][0] == "s2"
    assert all(len(r["ranked_session_ids"]) == len(set(r["ranked_session_ids"])) for r in rows)


def test_longmemeval_recalls_at_the_question_date(tmp_path: Path) -> None:
    items = json.loads(_lme_file(tmp_path).read_text())[:1]
    items[0]["question_date"] = "2023/05/01 (Mon) 12:00"  # before the soup session of 05/02
    items[0]["question"] = "lentil soup recipe"
    items[0]["answer_session_ids"] = ["s2"]
    path = tmp_path / "early.json"
    path.write_text(json.dumps(items))
    rows: list[dict[str, Any]] = []
    with bench_runtime("none") as rt:
        rep = longmemeval.evaluate(items, rt, rankings=rows)
    assert "s2" not in rows[0]["ranked_session_ids"] and rep["overall"]["recall_any@10"] == 0.0


def test_cli_rejects_a_file_in_the_wrong_layout(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"not": "a list"}))
    res = CliRunner().invoke(app, ["bench", "longmemeval", str(bad), "--embedding", "none"])
    assert res.exit_code == 2 and "not a LongMemEval file" in res.output
    bad.write_text(json.dumps([{"no": "conversation"}]))
    res = CliRunner().invoke(app, ["bench", "locomo", str(bad), "--embedding", "none"])
    assert res.exit_code == 2 and "not a LoCoMo file" in res.output


def test_progress_is_reported(tmp_path: Path) -> None:
    seen: dict[str, tuple[int, int]] = {}
    locomo.run(_locomo_file(tmp_path), embedding="none", progress=lambda t, d, n: seen.__setitem__(t, (d, n)))
    assert seen["store conversations"] == (1, 1) and seen["questions"] == (3, 3)
