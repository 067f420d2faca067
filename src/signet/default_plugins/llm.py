"""The built-in LLM providers: Ollama, OpenAI-compatible, Anthropic, and ``none``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from signet.hookspecs import hookimpl


@hookimpl
def register_llm_providers(register: Callable[[str, Any], None]) -> None:
    from signet.pipeline.llm import http

    register("ollama", http.OllamaProvider.from_settings)
    register("openai", http.OpenAIProvider.from_settings)
    register("anthropic", http.AnthropicProvider.from_settings)
    register("none", http.NoProvider.from_settings)
