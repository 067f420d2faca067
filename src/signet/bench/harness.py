"""A throw-away Signet store for a benchmark run: the same Runtime the daemon builds.

Benchmarks ingest through ``MemoryService.remember_batch`` and recall through
``MemoryService.recall``, so what they measure is what hooks, CLI and MCP get.
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import yaml

from signet.runtime import Runtime
from signet.workspace import Workspace, setup_workspace

Progress = Callable[[str, int, int], None]
"""``progress(task, done, total)``: the CLI draws Rich bars from it; the library prints nothing."""


def no_progress(task: str, done: int, total: int) -> None:
    """The default :data:`Progress`: report nothing."""


@contextmanager
def bench_runtime(
    embedding: str = "local",
    root: Path | None = None,
    model: str | None = None,
    vector_cache: Path | None = None,
    settings: Mapping[str, Any] | None = None,
    storage: str = "sqlite",
    pg_url: str | None = None,
) -> Iterator[Runtime]:
    """A started Runtime on a fresh workspace (a temp dir unless ``root`` is given); ``model``
    replaces the provider's default embedding model (to compare models on the same data);
    ``vector_cache`` is a directory of persistent text → vector caches (signet.bench.vector_cache);
    ``settings`` maps dotted agent.yaml keys to values (``search.scoring.enabled: False``), so an
    A/B of a setting runs the same code on the same data. ``storage`` ``postgres`` puts the store
    in a new PostgreSQL database (signet.bench.pgstore: on ``pg_url``'s server, or a throwaway
    one), the rest of the workspace stays in the temp dir."""
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    with tempfile.TemporaryDirectory(prefix="signet-bench-") as tmp, ExitStack() as stack:
        ws = Workspace(root if root is not None else Path(tmp) / "ws")
        setup_workspace(ws, agent_name="bench", user_name="bench", embedding_provider=embedding)
        # Retrieval benchmarks measure the memory core: no LLM extraction of the bench corpus.
        data = yaml.safe_load(ws.config_path.read_text()) or {}
        data.setdefault("memory", {}).setdefault("pipelineV2", {})["enabled"] = False
        if model is not None:
            data.setdefault("embedding", {})["model"] = model
        for key, value in (settings or {}).items():
            *parents, leaf = key.split(".")
            node = data
            for part in parents:
                node = node.setdefault(part, {})
            node[leaf] = value
        ws.config_path.write_text(yaml.safe_dump(data, sort_keys=False))
        store = None
        if storage == "postgres":
            from signet.bench import pgstore

            store = pgstore.open_store(stack.enter_context(pgstore.database(pg_url)))
        elif storage != "sqlite":
            raise ValueError(f"storage must be sqlite or postgres, not {storage!r}")
        rt = Runtime(ws, storage=store).start()
        try:
            if embedding != "none":
                deadline = time.monotonic() + 300
                while rt.embeddings.state == "loading" and time.monotonic() < deadline:
                    time.sleep(0.05)
                if rt.embeddings.state != "ready":
                    raise RuntimeError(f"embedder not ready: {rt.embeddings.error}")
                if vector_cache is not None and rt.embeddings.embedder is not None:
                    from signet.bench.vector_cache import CachedEmbedder, VectorCache, cache_file

                    cache = VectorCache(cache_file(vector_cache, rt.embeddings.model_key))
                    rt.embeddings.embedder = CachedEmbedder(rt.embeddings.embedder, cache)
            yield rt
        finally:
            rt.stop()


def wait_vectors(rt: Runtime, timeout: float = 1800.0, progress: Progress = no_progress) -> None:
    """Wait until every ingested memory has its vector (no-op without an embedder)."""
    if rt.settings.embedding.provider == "none":
        return
    emb = rt.embeddings
    total = emb.pending_count()
    deadline = time.monotonic() + timeout
    # One-second waits so the bar moves; wait_idle itself wakes the background embedder.
    while not emb.wait_idle(timeout=1.0):
        if emb.state in ("unavailable", "disabled") or time.monotonic() > deadline:
            raise RuntimeError(f"embeddings did not finish: {emb.pending_count()} pending ({emb.error or emb.state})")
        progress("embed memories", max(total - emb.pending_count(), 0), total)
    progress("embed memories", total, total)
