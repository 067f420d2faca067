"""``signet eval`` end to end: the shipped sample file against a real daemon with the real
embedding model, its per-query ranks and the baseline comparison checked against recall asked
directly; capture from ratings; malformed files are one readable line and a non-zero exit."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from signet.search.evaluation import load_cases, parse_cases
from signet.workspace import Workspace
from tests.conftest import DaemonProcess
from tests.lifecycle.test_surfaces import cli

SAMPLE = Path(__file__).resolve().parents[2] / "docs" / "eval-sample.yaml"

MEMORIES = [
    "The staging database listens on port 5433 (not the default)",
    "Production deploys go out on Tuesday afternoons, never on Fridays",
    "Priya reviews every migration before it is merged",
    "Use pnpm, never npm, in the web repository",
    "Run make test-fast for the quick local test suite; make test runs everything",
    "Nightly backups are written to s3://acme-backups/nightly and kept 30 days",
    "The login page broke because the session cookie had the wrong domain",
    "We prefer structured JSON logs over plain text lines",
    "The office plant needs water on Fridays",
    "Lunch orders go in before 11:30",
]


def ranks_by_hand(d: DaemonProcess, query: str, expect: str, alpha: float | None, depth: int) -> int | None:
    body: dict[str, object] = {"query": query, "limit": depth, "track_access": False}
    if alpha is not None:
        body["alpha"] = alpha
    with d.client() as api:
        results = api.post("/api/memory/recall", json=body).json()["results"]
    return next((i for i, r in enumerate(results, 1) if expect.casefold() in r["content"].casefold()), None)


@pytest.mark.slow
def test_eval_on_the_sample_file(
    make_workspace: Callable[..., Workspace], start_daemon: Callable[..., DaemonProcess], tmp_path: Path
) -> None:
    ws = make_workspace(memory={"pipelineV2": {"telemetry": {"memorySearchQaEnabled": True}}})
    d = start_daemon(ws)
    d.wait_embedder()
    with d.client() as api:
        for text in MEMORIES:
            assert api.post("/api/memory/remember", json={"content": text}).status_code == 200
    d.wait_embedder()
    spec = load_cases(SAMPLE)

    out = json.loads(cli(d, "eval", str(SAMPLE), "--json"))
    assert out["k"] == spec.k and len(out["queries"]) == len(spec.cases)
    for case, got in zip(spec.cases, out["queries"], strict=True):
        assert got["query"] == case.query
        for mode, alpha in (("live", None), ("keyword", 0.0), ("vector", 1.0)):
            assert got["ranks"][mode] == ranks_by_hand(d, case.query, case.expect[0], alpha, spec.depth), (case, mode)
    live = out["summary"]["live"]
    assert live["found"] == len(spec.cases) and live["mrr"] >= 0.8  # every sample query finds its memory
    # a paraphrase without shared words is the keyword baseline's miss: the comparison shows it
    assert out["summary"]["keyword"][f"recall@{spec.k}"] < live[f"recall@{spec.k}"]

    shown = cli(d, "eval", str(SAMPLE))
    assert "rank of the first expected memory" in shown and "compared with the baselines" in shown
    assert "keyword only" in shown and "vector only" in shown and f"recall@{spec.k}" in shown
    assert spec.cases[0].query[:40] in shown

    # capture: a positive rating of a recalled memory becomes a case for that query
    with d.client() as api:
        hit = api.post("/api/memory/recall", json={"query": "who looks at schema changes"}).json()["results"][0]
        rated = {"session_id": "s1", "ratings": [{"memory_id": hit["id"], "feedback": "positive"}]}
        assert api.post("/api/feedback", json=rated).status_code == 200
    captured = tmp_path / "mine.yaml"
    said = cli(d, "eval", str(captured), "--capture", "--json")  # stdout, then stderr
    assert said.endswith(f"captured 1 cases into {captured}\n")
    scored = json.loads(said[: said.rindex("}") + 1])
    cases = load_cases(captured).cases
    assert [(c.query, c.expect_ids) for c in cases] == [("who looks at schema changes", [hit["id"]])]
    assert scored["queries"][0]["ranks"]["live"] == 1
    assert "exists" in cli(d, "eval", str(captured), "--capture", ok=False)

    # malformed files: one readable line, non-zero exit
    bad = tmp_path / "bad.yaml"
    for text, says in (
        ("cases: [query: x", "not valid YAML"),
        ("cases:\n  - query: where\n", "cases[0]"),
        ("cases:\n  - expect: [a]\n", "cases[0].query"),
        ("cases: []\n", "cases"),
        ("k: 0\ncases:\n  - {query: q, expect: [a]}\n", "k"),
        ("just a string\n", "expected a mapping"),
    ):
        bad.write_text(text)
        said = cli(d, "eval", str(bad), ok=False)
        assert said.startswith("error: ") and says in said and said.count("\n") == 1, said
    assert "no such file" in cli(d, "eval", str(tmp_path / "missing.yaml"), ok=False)


def test_case_file_rules() -> None:
    spec = parse_cases('[{"query": "q", "expect_ids": ["abc"]}]')  # JSON, a bare list
    assert spec.k == 5 and spec.cases[0].expect_ids == ["abc"]
    with pytest.raises(Exception, match="depth"):
        parse_cases("k: 10\ndepth: 5\ncases: [{query: q, expect: [a]}]")
    with pytest.raises(Exception, match="surprise"):
        parse_cases("cases: [{query: q, expect: [a], surprise: 1}]")
