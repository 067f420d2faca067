"""Pick the adapter for a file: by extension, then for JSONL by sniffing the first line.

Built-ins are imported directly (the hook command uses this at session end); plugins
registered through ``register_transcript_adapters`` join them in :func:`all_adapters`.
"""

from __future__ import annotations

import importlib
from pathlib import Path

from signet.ingest.base import TranscriptAdapter, TranscriptError, first_line

BUILTIN = {
    "claude-code": "signet.ingest.claude_code",
    "codex": "signet.ingest.codex",
    "openclaw": "signet.ingest.openclaw",
    "cursor": "signet.ingest.cursor",
    "jsonl": "signet.ingest.jsonl_generic",
    "markdown": "signet.ingest.markdown",
    "text": "signet.ingest.text",
}


def builtin_adapters() -> dict[str, TranscriptAdapter]:
    return {name: importlib.import_module(mod).ADAPTER for name, mod in BUILTIN.items()}


def all_adapters() -> dict[str, TranscriptAdapter]:
    from signet.plugins import transcript_adapters

    return transcript_adapters()


def detect(path: Path, adapters: dict[str, TranscriptAdapter] | None = None) -> TranscriptAdapter:
    pool = adapters if adapters is not None else builtin_adapters()
    line = first_line(path)
    for adapter in sorted(pool.values(), key=lambda a: a.priority, reverse=True):
        if adapter.can_handle(path, line):
            return adapter
    raise TranscriptError(f"{path}: no adapter can read this file")


def get_adapter(name: str, adapters: dict[str, TranscriptAdapter] | None = None) -> TranscriptAdapter:
    pool = adapters if adapters is not None else builtin_adapters()
    if name not in pool:
        raise TranscriptError(f"unknown adapter '{name}'; known: {', '.join(sorted(pool))}")
    return pool[name]
