"""The HTTP providers: Ollama (``/api/chat``), OpenAI-compatible (``/v1/chat/completions``)
and Anthropic (``/v1/messages``). Each call gets its own timeout; transport errors map to
:class:`LlmUnavailable` / :class:`LlmTimeout`, bad answers to :class:`LlmError`."""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from typing import Any

import httpx

from signet.config import ExtractionSettings
from signet.pipeline.llm.base import LlmError, LlmTimeout, LlmUnavailable, Usage

PROBE_TIMEOUT = 3.0
HOW_TO_CONFIGURE = (
    "set memory.pipelineV2.extraction.provider in agent.yaml to claude-code, codex or opencode (a harness "
    "CLI you already use), ollama, openai or anthropic, or run `signet setup --extraction-provider NAME`; "
    "a running daemon picks the change up and drains the waiting jobs"
)


class HttpProvider(ABC):
    name = "http"
    default_endpoint = ""
    default_model = ""

    def __init__(self, settings: ExtractionSettings) -> None:
        self.settings = settings
        self.model = settings.model or self.default_model
        self.endpoint = (settings.endpoint or self.default_endpoint).rstrip("/")
        self._http = httpx.Client(timeout=settings.timeout)

    def headers(self) -> dict[str, str]:
        return {}

    def _post(self, path: str, body: dict[str, Any], timeout: float | None) -> Any:
        t = timeout if timeout is not None else self.settings.timeout
        url = self.endpoint + path
        try:
            resp = self._http.post(url, json=body, headers=self.headers(), timeout=t)
        except httpx.TimeoutException:
            raise LlmTimeout(f"{self.name} did not answer within {t:g}s ({url})") from None
        except httpx.TransportError as exc:
            raise LlmUnavailable(f"{self.name} unreachable at {url}: {exc}") from None
        if resp.status_code >= 400:
            raise LlmError(f"{self.name} answered HTTP {resp.status_code}: {resp.text[:300]}")
        try:
            return resp.json()
        except ValueError:
            raise LlmError(f"{self.name} answered non-JSON: {resp.text[:200]!r}") from None

    def _probe(self, path: str) -> tuple[bool, str | None]:
        url = self.endpoint + path
        try:
            resp = self._http.get(url, headers=self.headers(), timeout=min(PROBE_TIMEOUT, self.settings.timeout))
        except httpx.HTTPError as exc:
            return False, f"{self.name} unreachable at {url}: {exc or type(exc).__name__}"
        if resp.status_code >= 500:
            return False, f"{self.name} probe {url} answered HTTP {resp.status_code}"
        return True, None

    def close(self) -> None:
        self._http.close()

    @abstractmethod
    def complete_with_usage(
        self, prompt: str, *, system: str | None = None, timeout: float | None = None
    ) -> tuple[str, Usage | None]:
        """One call to the provider's API: the answer and the usage it reports."""

    def complete(self, prompt: str, *, system: str | None = None, timeout: float | None = None) -> str:
        return self.complete_with_usage(prompt, system=system, timeout=timeout)[0]


def _text(value: Any, where: str) -> str:
    if not isinstance(value, str):
        raise LlmError(f"unexpected response shape: no text at {where}")
    return value


def _usage(data: Any, key: str | None, tokens_in: str, tokens_out: str) -> Usage | None:
    """The token counts an answer reports (``data[key][tokens_in]``…), None when it has none."""
    block = data.get(key) if key and isinstance(data, dict) else data
    if not isinstance(block, dict):
        return None
    a, b = block.get(tokens_in), block.get(tokens_out)
    if not isinstance(a, int) and not isinstance(b, int):
        return None
    return Usage(a if isinstance(a, int) else 0, b if isinstance(b, int) else 0)


class OllamaProvider(HttpProvider):
    """Ollama's chat API, non-streaming, JSON output format."""

    name = "ollama"
    default_model = "qwen3:4b"
    default_endpoint = "http://127.0.0.1:11434"

    @classmethod
    def from_settings(cls, settings: ExtractionSettings) -> OllamaProvider:
        return cls(settings)

    def complete_with_usage(
        self, prompt: str, *, system: str | None = None, timeout: float | None = None
    ) -> tuple[str, Usage | None]:
        messages = ([{"role": "system", "content": system}] if system else []) + [{"role": "user", "content": prompt}]
        data = self._post(
            "/api/chat",
            {
                "model": self.model,
                "messages": messages,
                "stream": False,
                "format": "json",
                "options": {"temperature": 0.1, "num_predict": self.settings.max_tokens},
            },
            timeout,
        )
        if isinstance(data, dict) and data.get("error"):
            raise LlmError(f"ollama: {data['error']}")
        msg = data.get("message") if isinstance(data, dict) else None
        text = _text(msg.get("content") if isinstance(msg, dict) else None, "message.content")
        return text, _usage(data, None, "prompt_eval_count", "eval_count")

    def health(self) -> tuple[bool, str | None]:
        return self._probe("/api/tags")


class OpenAIProvider(HttpProvider):
    """Any OpenAI-compatible chat completions server (OpenAI, llama.cpp, vLLM, LM Studio…).

    ``endpoint`` is the base URL including ``/v1`` (default ``https://api.openai.com/v1``);
    the key comes from ``api_key`` or ``OPENAI_API_KEY``.
    """

    name = "openai"
    default_model = "gpt-4o-mini"
    default_endpoint = "https://api.openai.com/v1"

    @classmethod
    def from_settings(cls, settings: ExtractionSettings) -> OpenAIProvider:
        return cls(settings)

    def headers(self) -> dict[str, str]:
        key = self.settings.api_key or os.environ.get("OPENAI_API_KEY")
        return {"Authorization": f"Bearer {key}"} if key else {}

    def complete_with_usage(
        self, prompt: str, *, system: str | None = None, timeout: float | None = None
    ) -> tuple[str, Usage | None]:
        messages = ([{"role": "system", "content": system}] if system else []) + [{"role": "user", "content": prompt}]
        data = self._post(
            "/chat/completions",
            {
                "model": self.model,
                "messages": messages,
                "temperature": 0.1,
                "max_tokens": self.settings.max_tokens,
            },
            timeout,
        )
        try:
            content = data["choices"][0]["message"]["content"]
        except (KeyError, IndexError, TypeError):
            raise LlmError(f"openai: unexpected response shape: {str(data)[:200]}") from None
        return _text(content, "choices[0].message.content"), _usage(data, "usage", "prompt_tokens", "completion_tokens")

    def health(self) -> tuple[bool, str | None]:
        return self._probe("/models")


class AnthropicProvider(HttpProvider):
    """Anthropic's Messages API; the key comes from ``api_key`` or ``ANTHROPIC_API_KEY``."""

    name = "anthropic"
    default_model = "claude-3-5-haiku-latest"
    default_endpoint = "https://api.anthropic.com"
    version = "2023-06-01"

    @classmethod
    def from_settings(cls, settings: ExtractionSettings) -> AnthropicProvider:
        return cls(settings)

    def headers(self) -> dict[str, str]:
        key = self.settings.api_key or os.environ.get("ANTHROPIC_API_KEY") or ""
        return {"x-api-key": key, "anthropic-version": self.version}

    def complete_with_usage(
        self, prompt: str, *, system: str | None = None, timeout: float | None = None
    ) -> tuple[str, Usage | None]:
        body: dict[str, Any] = {
            "model": self.model,
            "max_tokens": self.settings.max_tokens,
            "temperature": 0.1,
            "messages": [{"role": "user", "content": prompt}],
        }
        if system:
            body["system"] = system
        data = self._post("/v1/messages", body, timeout)
        blocks = data.get("content") if isinstance(data, dict) else None
        if not isinstance(blocks, list):
            raise LlmError(f"anthropic: unexpected response shape: {str(data)[:200]}")
        texts = [b.get("text") for b in blocks if isinstance(b, dict) and b.get("type") == "text"]
        if not texts or not all(isinstance(t, str) for t in texts):
            raise LlmError("anthropic: the answer has no text block")
        return "".join(str(t) for t in texts), _usage(data, "usage", "input_tokens", "output_tokens")

    def health(self) -> tuple[bool, str | None]:
        if not (self.settings.api_key or os.environ.get("ANTHROPIC_API_KEY")):
            return False, "anthropic: no API key (memory.pipelineV2.extraction.api_key or ANTHROPIC_API_KEY)"
        return self._probe("/v1/models")


class NoProvider:
    """``provider: none``: the pipeline does not run; jobs wait until a provider is set."""

    name = "none"
    default_model = ""

    def __init__(self, settings: ExtractionSettings) -> None:
        self.model = settings.model or ""

    @classmethod
    def from_settings(cls, settings: ExtractionSettings) -> NoProvider:
        return cls(settings)

    def complete(self, prompt: str, *, system: str | None = None, timeout: float | None = None) -> str:
        raise LlmUnavailable(
            f"no LLM provider configured (memory.pipelineV2.extraction.provider: none): {HOW_TO_CONFIGURE}"
        )

    def health(self) -> tuple[bool, str | None]:
        return False, f"no LLM provider configured (memory.pipelineV2.extraction.provider: none): {HOW_TO_CONFIGURE}"
