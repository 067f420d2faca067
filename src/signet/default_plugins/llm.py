"""The built-in LLM providers: the harness CLIs (Claude Code, Codex, OpenCode), Ollama,
OpenAI-compatible, Anthropic, and ``none``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from signet.hookspecs import hookimpl


@hookimpl
def register_llm_providers(register: Callable[[str, Any], None]) -> None:
    register("ollama", "signet.pipeline.llm.http:OllamaProvider")
    register("openai", "signet.pipeline.llm.http:OpenAIProvider")
    register("anthropic", "signet.pipeline.llm.http:AnthropicProvider")
    register("claude-code", "signet.pipeline.llm.cli:ClaudeCodeProvider")
    register("codex", "signet.pipeline.llm.cli:CodexProvider")
    register("opencode", "signet.pipeline.llm.cli:OpenCodeProvider")
    register("none", "signet.pipeline.llm.http:NoProvider")
