"""The built-in document connector: a folder on this machine."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from signet.hookspecs import hookimpl


@hookimpl
def register_connectors(register: Callable[[str, Any], None]) -> None:
    register("filesystem", "signet.documents.filesystem:FilesystemSource")
