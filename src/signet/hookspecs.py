"""Plugin hooks. Providers are plugins: built-ins register through the same hooks.

A plugin is any module or object with functions marked ``@hookimpl``; each hook receives a
``register`` callback and calls it once per thing it provides::

    @hookimpl
    def register_embedders(register):
        register("ollama", OllamaEmbedder)            # a class ...
        register("mine", "my_pkg.embed:MyEmbedder")   # ... or "module:attr", imported on use

A provider class (embedder or LLM) has ``from_settings(settings)`` and a ``default_model``
(what ``signet setup`` writes); an embedder that makes no vectors sets ``makes_vectors =
False``. Third-party plugins are found through the ``signet`` entry-point group.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pluggy

hookspec = pluggy.HookspecMarker("signet")
hookimpl = pluggy.HookimplMarker("signet")


@hookspec
def register_embedders(register: Callable[[str, Any], None]) -> None:
    """Register embedding providers: ``register(name, factory)``; factory(settings) -> Embedder."""


@hookspec
def register_llm_providers(register: Callable[[str, Any], None]) -> None:
    """Register LLM providers: ``register(name, factory)``; factory(settings) -> LlmProvider."""


@hookspec
def register_harnesses(register: Callable[[str, Any], None]) -> None:
    """Register harness integrations: ``register(name, harness)``."""


@hookspec
def register_transcript_adapters(register: Callable[[str, Any], None]) -> None:
    """Register transcript adapters for ``signet ingest``: ``register(name, adapter)``."""


@hookspec
def register_connectors(register: Callable[[str, Any], None]) -> None:
    """Register document connectors: ``register(name, source_class)``; the class has a pydantic
    ``config_model`` and is built as ``source_class(config, settings)`` (a
    :class:`signet.documents.source.ConnectorSource`)."""
