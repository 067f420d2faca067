"""The built-in embedders: the bundled local model, Ollama and OpenAI-compatible."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from signet.hookspecs import hookimpl


@hookimpl
def register_embedders(register: Callable[[str, Any], None]) -> None:
    # By reference: listing or validating provider names imports no model code.
    register("local", "signet.embedding.local:LocalEmbedder")
    register("ollama", "signet.embedding.remote:OllamaEmbedder")
    register("openai", "signet.embedding.remote:OpenAIEmbedder")
    register("none", "signet.embedding.base:NoEmbedder")
