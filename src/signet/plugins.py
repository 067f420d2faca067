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


def embedders() -> dict[str, Any]:
    return _collect("register_embedders")


def llm_providers() -> dict[str, Any]:
    return _collect("register_llm_providers")


def harnesses() -> dict[str, Any]:
    return _collect("register_harnesses")


def transcript_adapters() -> dict[str, Any]:
    return _collect("register_transcript_adapters")
