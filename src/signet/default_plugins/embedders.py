"""The built-in embedders: the bundled local model, Ollama and OpenAI-compatible."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from signet.hookspecs import hookimpl


@hookimpl
def register_embedders(register: Callable[[str, Any], None]) -> None:
    # Imported lazily by the factories so listing providers never loads torch.
    from signet.embedding import local, remote

    register("local", local.LocalEmbedder.from_settings)
    register("ollama", remote.OllamaEmbedder.from_settings)
    register("openai", remote.OpenAIEmbedder.from_settings)
