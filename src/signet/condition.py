"""What is wrong with a running daemon right now, keyed by cause.

Areas that notice trouble they cannot fix by themselves (a full disk, a read-only workspace,
a corrupted database file) report it here and clear it when it passes. ``/health`` says
``degraded`` while anything is reported; status and diagnostics show the messages, which
name the cause and the command that fixes it. One registry, so health never says "ok" while
one area knows otherwise.
"""

from __future__ import annotations

import threading


class Condition:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._problems: dict[str, str] = {}

    def report(self, cause: str, message: str) -> None:
        """Record (or replace) the problem named ``cause``."""
        with self._lock:
            self._problems[cause] = message

    def clear(self, cause: str) -> None:
        with self._lock:
            self._problems.pop(cause, None)

    def problems(self) -> dict[str, str]:
        """A copy: cause -> message."""
        with self._lock:
            return dict(self._problems)

    @property
    def ok(self) -> bool:
        with self._lock:
            return not self._problems
