"""The plugin manager: the one registry of providers, harnesses and adapters.

Built-in plugins are listed in :data:`DEFAULT_PLUGINS` and loaded lazily (nothing is
imported until a registry is asked for), third-party ones through the ``signet`` entry-point
group.
"""

from __future__ import annotations

import importlib
from functools import cache
from typing import Any

import pluggy

from signet import hookspecs

DEFAULT_PLUGINS = [
    "signet.default_plugins.embedders",
    "signet.default_plugins.harnesses",
    "signet.default_plugins.transcripts",
    "signet.default_plugins.llm",
    "signet.default_plugins.connectors",
]


@cache
def plugin_manager() -> pluggy.PluginManager:
    pm = pluggy.PluginManager("signet")
    pm.add_hookspecs(hookspecs)
    for name in DEFAULT_PLUGINS:
        pm.register(importlib.import_module(name), name=name)
    pm.load_setuptools_entrypoints("signet")
    return pm


def _collect(hook_name: str) -> dict[str, Any]:
    found: dict[str, Any] = {}

    def register(name: str, value: Any) -> None:
        if name in found:
            raise ValueError(f"two plugins register {hook_name} '{name}'")
        found[name] = value

    getattr(plugin_manager().hook, hook_name)(register=register)
    return found


def resolve(ref: Any) -> Any:
    """A registered provider: the object itself, or a ``"module:attr"`` reference imported on
    first use (so listing or validating provider names imports no model code)."""
    if isinstance(ref, str):
        module, _, attr = ref.partition(":")
        return getattr(importlib.import_module(module), attr)
    return ref


def embedders() -> dict[str, Any]:
    """Embedding providers by name (``resolve`` a value for its class)."""
    return _collect("register_embedders")


def llm_providers() -> dict[str, Any]:
    """LLM providers by name (``resolve`` a value for its class)."""
    return _collect("register_llm_providers")


def check_provider(kind: str, name: str) -> str:
    """``name`` if a plugin registers it, else a ValueError naming the installed ones."""
    found = embedders() if kind == "embedding" else llm_providers()
    if name not in found:
        raise ValueError(f"unknown {kind} provider {name!r} (installed: {', '.join(sorted(found))})")
    return name


def default_model(kind: str, name: str) -> str:
    """The model a provider uses when agent.yaml names none: its class's ``default_model``."""
    found = embedders() if kind == "embedding" else llm_providers()
    return str(getattr(resolve(found[name]), "default_model", "")) if name in found else ""


def harnesses() -> dict[str, Any]:
    return _collect("register_harnesses")


def transcript_adapters() -> dict[str, Any]:
    return _collect("register_transcript_adapters")


def connectors() -> dict[str, Any]:
    """Document connector sources by name (``resolve`` a value for its class)."""
    return _collect("register_connectors")
