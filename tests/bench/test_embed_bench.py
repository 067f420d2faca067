"""``signet bench embed`` on a few texts: every variant measured, vectors compared. Shape only, never timings."""

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
    assert report["options"]["backends"] == ["torch", "onnx", "int8"]
    torch, onnx, int8 = (report["backends"][name] for name in ("torch", "onnx", "int8"))
    for row in (torch, onnx, int8):
        assert row["single_p50_ms"] > 0 and row["single_p95_ms"] >= row["single_p50_ms"]
        assert row["batch_texts_per_s"] > 0
    assert torch["max_abs_diff_vs_torch"] == 0.0 and onnx["max_abs_diff_vs_torch"] < 1e-5
    # int8 weights: close, not equal (cosine > 0.99 per text, tests/core/test_int8_embedder.py).
    assert 1e-5 < int8["max_abs_diff_vs_torch"] < 0.05


def test_embed_bench_rejects_an_unknown_backend() -> None:
    res = CliRunner().invoke(app, ["bench", "embed", "--backend", "tensorflow"])
    assert res.exit_code == 2 and "choose torch, onnx, int8" in res.output
