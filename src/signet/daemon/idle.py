"""Give memory back to the system when the daemon goes idle.

Under load the daemon's threads allocate and free a lot (request bodies, SQLite pages, query
embeddings, result lists). glibc keeps freed memory in per-thread arenas for reuse, so RSS
measured after the load stops stays at its peak, and with a new peak in another arena it
creeps up: a soak on 20,000 real turns grew RSS by a third in 6 minutes, nearly all of it in
anonymous memory (glibc's 64 MB arena heaps). Once no request has arrived for ``idle_s``, this thread runs a
garbage collection and ``malloc_trim(0)``, which hands free pages of every arena back to the
kernel; nothing is trimmed again until requests have come and gone. Off Linux/glibc it does
nothing (other allocators return memory on their own).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
import logging
import threading
from collections.abc import Callable
from pathlib import Path

log = logging.getLogger(__name__)


def _malloc_trim() -> Callable[[], None] | None:
    name = ctypes.util.find_library("c")
    if name is None:
        return None
    try:
        libc = ctypes.CDLL(name)
    except OSError:
        return None
    trim = getattr(libc, "malloc_trim", None)  # glibc only
    if trim is None:
        return None

    def run() -> None:
        trim(0)

    return run


def rss_mb() -> float | None:
    """This process's resident set (Linux), for the log line."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


IDLE_S = 30.0
"""How long without a request before the daemon trims (benchmarks wait for it to measure RSS at rest)."""


class IdleTrim:
    """Trim once per idle period; ``activity`` returns a number that changes with every request."""

    def __init__(self, activity: Callable[[], int], idle_s: float = IDLE_S) -> None:
        self.activity = activity
        self.idle_s = idle_s
        self.trims = 0
        self.freed_mb = 0.0
        """RSS given back by the trims so far (``/metrics``)."""
        self._trim = _malloc_trim()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        if self._trim is None:
            return
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="signet-idle-trim", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
            self._thread = None

    def _run(self) -> None:
        last = self.activity()
        trimmed = True  # nothing to give back before the first request
        while not self._stop.wait(self.idle_s):
            now = self.activity()
            if now != last:
                last, trimmed = now, False
            elif not trimmed:
                self.trim_now()
                trimmed = True

    def trim_now(self) -> None:
        if self._trim is None:
            return
        before = rss_mb()
        gc.collect()
        self._trim()
        after = rss_mb()
        self.trims += 1
        if before is not None and after is not None:
            self.freed_mb += max(0.0, before - after)
            log.info("idle: gave %.0f MB back to the system (RSS %.0f -> %.0f MB)", before - after, before, after)
