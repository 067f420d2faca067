"""The local model gives back the memory its runs grew, once the background embedder is idle.

ONNX Runtime's arena keeps every buffer it grew to for its largest run: a daemon that had
embedded a backlog of long turns held 1.2 GB more at rest than one that had not (100k realistic
memories, docs/benchmarks.md). The real model runs here; the service's calls are counted on the
real embedder.
"""

from __future__ import annotations

import re
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from signet.embedding import service as embedding_service
from signet.embedding.base import ReleasesMemory
from signet.embedding.local import LocalEmbedder
from signet.embedding.onnx_model import RUN_TEXTS
from signet.models import RememberRequest
from signet.runtime import Runtime
from tests.conftest import wait_embedder

LONG = "Melanie said she painted a sunrise over the lake last weekend and felt calm afterwards. " * 20


def _rss_mb() -> int:
    return int(re.search(r"VmRSS:\s+(\d+)", Path("/proc/self/status").read_text()).group(1)) // 1024  # type: ignore[union-attr]


def test_releasing_frees_the_runs_buffers_and_changes_no_vector() -> None:
    emb = LocalEmbedder()
    emb.load()
    assert isinstance(emb, ReleasesMemory)
    texts = [f"turn {i}: {LONG}" for i in range(2 * RUN_TEXTS)]
    first = emb.embed(texts)
    grown = _rss_mb()
    emb.release_memory()
    released = _rss_mb()
    # Runs of 8 long turns grow the arena by ~260 MB on this model; freed, it is unmapped.
    assert grown - released >= 100, (grown, released)
    again = emb.embed(texts)
    assert np.array_equal(first, again)  # the buffers grow again; the vectors are the same
    emb.release_memory()


def test_runs_hold_at_most_run_texts_and_match_one_by_one() -> None:
    emb = LocalEmbedder(batch_size=64)  # the setting is a ceiling: runs stay at RUN_TEXTS
    emb.load()
    texts = [f"{i} {LONG[: 40 * i]}" for i in range(RUN_TEXTS * 2 + 3)]
    together = emb.embed(texts)
    single = np.concatenate([emb.embed([t]) for t in texts])
    assert np.abs(together - single).max() < 1e-5


def test_the_background_embedder_releases_once_it_has_been_idle(
    runtime: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[None] = []
    lock = threading.Lock()
    real = LocalEmbedder.release_memory

    def counted(self: LocalEmbedder) -> None:
        with lock:
            calls.append(None)
        real(self)

    monkeypatch.setattr(LocalEmbedder, "release_memory", counted)
    monkeypatch.setattr(embedding_service, "IDLE_RELEASE_S", 0.3)

    def remember(tag: str) -> None:
        runtime.service.remember_batch([RememberRequest(content=f"{tag} {i}: {LONG}") for i in range(20)])
        wait_embedder(runtime)
        assert runtime.embeddings.wait_idle(120)

    def released(n: int) -> bool:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            with lock:
                if len(calls) >= n:
                    return True
            time.sleep(0.05)
        return False

    remember("first")
    assert released(1)
    time.sleep(1.0)  # idle with nothing embedded since: no further release
    assert len(calls) == 1
    remember("second")
    assert released(2)  # a new catch-up, then quiet: released again
