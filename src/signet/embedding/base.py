"""The embedder interface."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

Vectors = npt.NDArray[np.float32]


class EmbeddingError(RuntimeError):
    """The provider could not produce vectors (down, timed out, answered nonsense)."""


class Embedder(Protocol):
    """Turns texts into L2-normalised float32 vectors, one row per text."""

    provider: str
    model: str

    @property
    def dimensions(self) -> int | None: ...

    def load(self) -> None:
        """Do the slow start-up work (model load, reachability check). May raise."""

    def embed(self, texts: list[str]) -> Vectors:
        """One row per text. Any failure is raised as :class:`EmbeddingError`: callers (the
        background embedder, recall, modify, the pipeline) catch only that and carry on
        without vectors; anything else is a bug and surfaces as one."""
        ...


@runtime_checkable
class ReleasesMemory(Protocol):
    """An embedder that holds memory between calls (a local model's buffers) and can give it
    back; the background embedder asks once it has nothing left to embed. Separate from
    :class:`Embedder`, so plugins' embedders need not implement it."""

    def release_memory(self) -> None: ...


def normalize_rows(vectors: Vectors) -> Vectors:
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    out: Vectors = (vectors / norms).astype(np.float32, copy=False)
    return out


class VectorSink(Protocol):
    """Where the embedder puts the vectors it computes or loads: the in-memory index
    (signet.search.vectors.VectorIndex), which sits above the embedder in the layers."""

    def upsert_many(
        self, ids: list[str], vectors: Vectors, projects: Sequence[str | None], created: Sequence[str | None]
    ) -> None: ...

    def __len__(self) -> int: ...


class NoEmbedder:
    """Provider ``none``: no vectors, so recall is keyword-only. Registered like any embedder
    (signet.default_plugins.embedders), so configuration and setup treat it alike."""

    provider = "none"
    default_model = ""
    makes_vectors = False

    @classmethod
    def from_settings(cls, settings: object) -> Embedder:
        raise EmbeddingError("embedding provider is 'none': it makes no vectors")
