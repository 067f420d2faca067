"""The built-in transcript adapters for ``signet ingest``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from signet.hookspecs import hookimpl
from signet.ingest.detect import builtin_adapters


@hookimpl
def register_transcript_adapters(register: Callable[[str, Any], None]) -> None:
    for name, adapter in builtin_adapters().items():
        register(name, adapter)
