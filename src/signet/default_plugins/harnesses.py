"""The built-in harness integrations, registered like third-party ones."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from signet.harnesses import BUILTIN
from signet.hookspecs import hookimpl


@hookimpl
def register_harnesses(register: Callable[[str, Any], None]) -> None:
    for name, module in BUILTIN.items():
        register(name, importlib.import_module(module).HARNESS)
