"""Recall with the in-memory keyword index on vs off, in one process, on fresh questions.

Seeds the latency benchmark's synthetic store (``signet.bench.latency``: cached vectors are
reused with ``--cache-dir``), starts a Runtime on it, and asks each question once, the two
arms alternating question by question (so a change in machine load hits both), through
``MemoryService.recall``: the one recall path. Every timed question is new to the process, so
the query embedding is computed each time, as in use (repeating a question would hit the
embedder's query cache and hide it); an untimed second pass asks every question with and
without the index and counts identical answers. Result and command: docs/benchmarks.md (session 7).

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
from signet.models import RecallRequest
from signet.runtime import Runtime
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
            if not rt.embeddings.wait_idle(600):  # model loaded and its start-up sweep done
                raise SystemExit(f"the embedder is not ready: {rt.embeddings.error}")
            mirror = rt.keywords
            if mirror is None or not mirror.wait_ready(120):
                raise SystemExit("the keyword index is off or did not build")
            questions = pick_queries(samples, args.questions + 30, 11)
            for q, _ in questions[:30]:  # warm-up: model, caches, first page reads
                rt.service.recall(RecallRequest(query=q, track_access=False))
            took: dict[str, list[float]] = {"on": [], "off": []}
            for i, (q, _) in enumerate(questions[30:]):
                arm = "on" if i % 2 == 0 else "off"
                rt.service.recaller.keywords = mirror if arm == "on" else None
                t0 = time.perf_counter()
                rt.service.recall(RecallRequest(query=q, track_access=False))
                took[arm].append((time.perf_counter() - t0) * 1000)
            # Untimed second pass (the query embeddings are cached now): both arms per question.
            same = 0
            for q, _ in questions[30:]:
                answers = []
                for keywords in (mirror, None):
                    rt.service.recaller.keywords = keywords
                    res = rt.service.recall(RecallRequest(query=q, track_access=False))
                    answers.append([(r.id, r.score) for r in res.results])
                same += answers[0] == answers[1]
        finally:
            rt.stop()
    for arm in ("on", "off"):
        v = took[arm]
        print(
            f"keyword index {arm:>3}: {len(v)} recalls, p50 {percentile(v, 50):.2f} / p95 {percentile(v, 95):.2f}"
            f" / p99 {percentile(v, 99):.2f} ms"
        )
    print(f"identical results (ids and scores) with and without it: {same} / {args.questions}")


if __name__ == "__main__":
    main()
