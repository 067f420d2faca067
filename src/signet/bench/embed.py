"""``signet bench embed``: the bundled model's query latency and batch throughput per variant.

For each variant (:data:`VARIANTS`: the full-precision model on ``torch`` or its ``onnx``
export, and the default ``int8`` ONNX model), on the synthetic corpus's questions and memories
(:mod:`signet.bench.corpus`, seed 7): the time to load the model in this process, single-text
embedding latency over ``queries`` distinct questions (what a recall pays), and throughput
embedding ``docs`` memories in batches of ``batch`` (what the background embedder does).
Backends are measured in alternating rounds so a change in machine load hits all of them, and
every backend's vectors are compared with the first one's (max abs difference).
"""

from __future__ import annotations

import os
import platform
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from signet.bench import corpus
from signet.embedding.base import Vectors

if TYPE_CHECKING:
    from signet.embedding.local import Backend

VARIANTS: dict[str, tuple[str, Backend]] = {
    "torch": ("all-MiniLM-L6-v2", "torch"),
    "onnx": ("all-MiniLM-L6-v2", "onnx"),
    "int8": ("all-MiniLM-L6-v2-int8", "onnx"),
}
"""Variant name -> (embedding.model, embedding.backend)."""

EmbedFn = Callable[[list[str]], Vectors]


@dataclass
class Measured:
    load_s: float
    single_ms: list[float] = field(default_factory=list)
    batch_s: list[float] = field(default_factory=list)
    vectors: Vectors | None = None

    def summary(self, docs: int) -> dict[str, Any]:
        single = np.array(self.single_ms)
        return {
            "load_s": round(self.load_s, 2),
            "single_p50_ms": round(float(np.percentile(single, 50)), 2),
            "single_p95_ms": round(float(np.percentile(single, 95)), 2),
            "single_p99_ms": round(float(np.percentile(single, 99)), 2),
            "batch_texts_per_s": round(docs * len(self.batch_s) / sum(self.batch_s), 1),
        }


def texts(queries: int, docs: int) -> tuple[list[str], list[str]]:
    """Distinct questions (one per recall) and memory texts, deterministic."""
    samples = corpus.generate(queries + docs)
    return [s.question for s in samples[:queries]], [s.content for s in samples[queries:]]


def measure_round(embed: EmbedFn, batch: int, questions: list[str], docs: list[str], into: Measured) -> None:
    """One round: every question alone, then every doc in batches of ``batch``."""
    for q in questions[:5]:  # warm-up: first-run allocations and caches
        embed([q])
    for q in questions:
        t0 = time.perf_counter()
        embed([q])
        into.single_ms.append((time.perf_counter() - t0) * 1000)
    t0 = time.perf_counter()
    out = [embed(docs[i : i + batch]) for i in range(0, len(docs), batch)]
    into.batch_s.append(time.perf_counter() - t0)
    if into.vectors is None:
        into.vectors = np.concatenate([embed(questions), *out])


def compare(
    loaders: dict[str, Callable[[], EmbedFn]],
    *,
    queries: int = 100,
    docs: int = 256,
    batch: int = 32,
    rounds: int = 3,
    progress: Callable[[str, int, int], None] | None = None,
) -> dict[str, Any]:
    """Load each embedder (timed), then measure them in ``rounds`` alternating rounds."""
    questions, memories = texts(queries, docs)
    embedders: dict[str, EmbedFn] = {}
    results: dict[str, Measured] = {}
    for name, load in loaders.items():
        t0 = time.perf_counter()
        embedders[name] = load()
        results[name] = Measured(load_s=time.perf_counter() - t0)
    total = rounds * len(embedders)
    for r in range(rounds):
        for i, (name, embed) in enumerate(embedders.items()):
            measure_round(embed, batch, questions, memories, results[name])
            if progress is not None:
                progress("embed", r * len(embedders) + i + 1, total)
    first = next(iter(results))
    reference = results[first].vectors
    report: dict[str, Any] = {}
    for name, m in results.items():
        diff = float(np.abs(m.vectors - reference).max()) if m.vectors is not None and reference is not None else None
        report[name] = {**m.summary(len(memories)), f"max_abs_diff_vs_{first}": diff}
    return report


def run(
    backends: list[str],
    *,
    threads: int = 1,
    queries: int = 100,
    docs: int = 256,
    batch: int = 32,
    rounds: int = 3,
    progress: Callable[[str, int, int], None] | None = None,
) -> dict[str, Any]:
    """``signet bench embed``: each of ``backends`` (names of :data:`VARIANTS`), ``threads`` CPU threads."""
    from signet.embedding.local import LocalEmbedder

    def loader(variant: str) -> Callable[[], EmbedFn]:
        def load() -> EmbedFn:
            model, backend = VARIANTS[variant]
            emb = LocalEmbedder(model=model, backend=backend, threads=threads, batch_size=batch)
            emb.load()
            return emb.embed

        return load

    report = compare(
        {b: loader(b) for b in backends}, queries=queries, docs=docs, batch=batch, rounds=rounds, progress=progress
    )
    return {
        "machine": {"cores": os.cpu_count(), "python": platform.python_version(), "load_avg": _load_avg()},
        "options": {
            "backends": backends,
            "threads": threads,
            "queries": queries,
            "docs": docs,
            "batch": batch,
            "rounds": rounds,
        },
        "backends": report,
    }


def _load_avg() -> list[float] | None:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None
