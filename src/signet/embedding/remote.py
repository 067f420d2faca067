"""Embedders served over HTTP: Ollama (``/api/embed``) and OpenAI-compatible (``/v1/embeddings``)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any

import httpx
import numpy as np

from signet.embedding.base import EmbeddingError, Vectors, normalize_rows

if TYPE_CHECKING:
    from signet.config import EmbeddingSettings


class _HttpEmbedder(ABC):
    provider = "http"
    default_base = ""

    def __init__(self, model: str, base_url: str | None, api_key: str | None, timeout: float) -> None:
        self.model = model
        self.base_url = (base_url or self.default_base).rstrip("/")
        self.api_key = api_key
        self.timeout = timeout
        self._dims: int | None = None

    @classmethod
    def from_settings(cls, settings: EmbeddingSettings) -> _HttpEmbedder:
        emb = cls(settings.model, settings.base_url, settings.api_key, settings.timeout)
        emb._dims = settings.dimensions
        return emb

    @property
    def dimensions(self) -> int | None:
        return self._dims

    def _post(self, path: str, body: dict[str, Any]) -> Any:
        headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
        url = f"{self.base_url}{path}"
        try:
            resp = httpx.post(url, json=body, headers=headers, timeout=self.timeout)
        except httpx.TimeoutException as exc:
            raise EmbeddingError(f"{self.provider} embedding timed out after {self.timeout}s at {url}") from exc
        except httpx.HTTPError as exc:
            raise EmbeddingError(f"{self.provider} embedding endpoint unreachable at {url}: {exc}") from exc
        if resp.status_code >= 400:
            raise EmbeddingError(f"{self.provider} embedding failed: HTTP {resp.status_code}: {resp.text[:200]}")
        try:
            return resp.json()
        except ValueError as exc:
            raise EmbeddingError(f"{self.provider} embedding answered with invalid JSON") from exc

    def load(self) -> None:
        vec = self.embed(["signet"])
        self._dims = int(vec.shape[1])

    def _finish(self, rows: Any, expected: int) -> Vectors:
        if not isinstance(rows, list) or len(rows) != expected:
            raise EmbeddingError(
                f"{self.provider} returned {len(rows) if isinstance(rows, list) else 0} vectors for {expected} texts"
            )
        try:
            arr = np.asarray(rows, dtype=np.float32)
        except (TypeError, ValueError) as exc:
            raise EmbeddingError(f"{self.provider} returned malformed vectors") from exc
        if arr.ndim != 2:
            raise EmbeddingError(f"{self.provider} returned malformed vectors")
        self._dims = int(arr.shape[1])
        return normalize_rows(arr)

    @abstractmethod
    def embed(self, texts: list[str]) -> Vectors:
        """Each subclass speaks its own wire protocol."""


class OllamaEmbedder(_HttpEmbedder):
    provider = "ollama"
    default_model = "nomic-embed-text"
    default_base = "http://127.0.0.1:11434"

    def embed(self, texts: list[str]) -> Vectors:
        data = self._post("/api/embed", {"model": self.model, "input": texts})
        rows = data.get("embeddings") if isinstance(data, dict) else None
        return self._finish(rows, len(texts))


class OpenAIEmbedder(_HttpEmbedder):
    provider = "openai"
    default_model = "text-embedding-3-small"
    default_base = "https://api.openai.com"

    def embed(self, texts: list[str]) -> Vectors:
        path = "/embeddings" if self.base_url.endswith("/v1") else "/v1/embeddings"
        data = self._post(path, {"model": self.model, "input": texts})
        items = data.get("data") if isinstance(data, dict) else None
        if not isinstance(items, list):
            raise EmbeddingError("openai embedding response has no 'data' list")
        ordered = sorted(items, key=lambda d: d.get("index", 0) if isinstance(d, dict) else 0)
        rows = [d.get("embedding") if isinstance(d, dict) else None for d in ordered]
        return self._finish(rows, len(texts))
