"""Pipeline V2: the durable job queue, LLM providers, extraction, decisions and graph writes.

``install(runtime)`` wires it into a :class:`~signet.daemon.runtime.Runtime`: the enqueue
hook on remember, the inline entity linker, the worker threads and the handoff summarizer.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from signet.daemon.runtime import Runtime


def install(runtime: Runtime) -> None:
    from signet.pipeline.runtime import install as _install

    _install(runtime)
