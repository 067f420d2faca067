"""``signet bench embed`` on a few texts: both backends measured, same vectors. Shape only, never timings."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from signet.cli.main import app


def test_embed_bench_compares_the_backends(tmp_path: Path) -> None:
    out = tmp_path / "embed.json"
    res = CliRunner().invoke(
        app, ["bench", "embed", "--queries", "6", "--docs", "10", "--batch", "4", "--rounds", "2", "--out", str(out)]
    )
    assert res.exit_code == 0, res.output
    report = json.loads(out.read_text())
    assert report["options"]["backends"] == ["torch", "onnx"]
    torch, onnx = report["backends"]["torch"], report["backends"]["onnx"]
    for row in (torch, onnx):
        assert row["single_p50_ms"] > 0 and row["single_p95_ms"] >= row["single_p50_ms"]
        assert row["batch_texts_per_s"] > 0
    assert torch["max_abs_diff_vs_torch"] == 0.0 and onnx["max_abs_diff_vs_torch"] < 1e-5


def test_embed_bench_rejects_an_unknown_backend() -> None:
    res = CliRunner().invoke(app, ["bench", "embed", "--backend", "tensorflow"])
    assert res.exit_code == 2 and "choose torch or onnx" in res.output
