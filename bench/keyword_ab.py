"""Recall with the in-memory keyword index on vs off, in one process, on fresh questions.

Seeds the latency benchmark's synthetic store (``signet.bench.latency``: cached vectors are
reused with ``--cache-dir``), starts a Runtime on it, and asks each question once, the two
arms alternating question by question (so a change in machine load hits both), through
``MemoryService.recall``: the one recall path. Every question is new to the process, so the
query embedding is computed each time, as in use (repeating a question would hit the
embedder's query cache and hide it). Result and command: docs/benchmarks.md (session 7).

    python bench/keyword_ab.py --memories 100000 --questions 600 --cache-dir /tmp/signet-bench-cache
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from signet.bench.corpus import generate
from signet.bench.latency import pick_queries, seed_vectors, seed_workspace
from signet.bench.metrics import percentile
from signet.daemon.runtime import Runtime
from signet.models import RecallRequest
from signet.workspace import Workspace


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=100_000)
    parser.add_argument("--questions", type=int, default=600)
    parser.add_argument("--cache-dir", type=Path, default=None)
    args = parser.parse_args()
    samples = generate(args.memories, seed=7)
    with tempfile.TemporaryDirectory(prefix="signet-keyword-ab-") as tmp:
        root = Path(tmp) / "ws"
        vectors, _ = seed_vectors(samples, args.cache_dir, 7, lambda *_: None)
        seed_workspace(root, samples, vectors, lambda *_: None)
        del vectors
        rt = Runtime(Workspace(root)).start()
        try:
            while rt.embeddings.state == "loading":
                time.sleep(0.1)
            mirror = rt.keywords
            if mirror is None or not mirror.wait_ready(120):
                raise SystemExit("the keyword index is off or did not build")
            questions = pick_queries(samples, args.questions + 30, 11)
            for q, _ in questions[:30]:  # warm-up: model, caches, first page reads
                rt.service.recall(RecallRequest(query=q, track_access=False))
            took: dict[str, list[float]] = {"on": [], "off": []}
            found = {"on": 0, "off": 0}
            for i, (q, source) in enumerate(questions[30:]):
                arm = "on" if i % 2 == 0 else "off"
                rt.service.recaller.keywords = mirror if arm == "on" else None
                t0 = time.perf_counter()
                res = rt.service.recall(RecallRequest(query=q, track_access=False))
                took[arm].append((time.perf_counter() - t0) * 1000)
                found[arm] += any(r.content == source for r in res.results)
        finally:
            rt.stop()
    for arm in ("on", "off"):
        v = took[arm]
        print(f"keyword index {arm:>3}: {len(v)} recalls, p50 {percentile(v, 50):.2f} / p95 {percentile(v, 95):.2f}"
              f" / p99 {percentile(v, 99):.2f} ms, source memory in top 10 {found[arm] / len(v):.4f}")


if __name__ == "__main__":
    main()
