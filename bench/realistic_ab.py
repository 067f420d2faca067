"""Does the speed machinery earn its keep on real conversation turns? (issue: architecture, part 6)

The keyword mirror, arms alternating question by question so machine load hits both: recall
through ``MemoryService.recall`` (the one recall path) with the in-memory keyword index vs FTS5
alone, on a store of real turns (LongMemEval-S dev150 haystack turns, deduplicated, then LoCoMo
turns) asked real questions of both sets; then an untimed pass counting identical answers.

(The ASGI hot path was measured here too, against the plain FastAPI routes on a real daemon,
and deleted: it did not gain on real turns. docs/benchmarks.md has the figures.)

    python bench/realistic_ab.py --memories 50000 --cache-dir /tmp/signet-bench-cache --out ab.json

The file is a measurement script, not a test: figures and the decision go in docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from signet.bench.conversations import load, vectors_for
from signet.bench.corpus import Sample
from signet.bench.latency import Timing, embed_bulk, seed_workspace

DATA = Path(__file__).resolve().parents[2] / "shared" / "bench-data"


def real_turns(limit: int) -> tuple[list[str], list[str], list[str]]:
    """(distinct turns, spare turns for remember load, questions) from both yardsticks."""
    data = load(limit, locomo=DATA / "locomo10.json", longmemeval=DATA / "longmemeval_s_dev150.json.gz")
    return data.turns, data.spare, data.questions


def _embed(turns: list[str]) -> np.ndarray:
    started = time.monotonic()

    def progress(task: str, done: int, total: int) -> None:
        print(f"\r{task} {done}/{total} {time.monotonic() - started:.0f}s", end="", file=sys.stderr, flush=True)

    vecs = embed_bulk(turns, progress)
    print(file=sys.stderr)
    return vecs


def keyword_ab(root: Path, questions: list[str]) -> dict[str, Any]:
    from signet.models import RecallRequest
    from signet.runtime import Runtime
    from signet.workspace import Workspace

    rt = Runtime(Workspace(root)).start()
    try:
        if not rt.embeddings.wait_idle(900):
            raise SystemExit(f"embedder not ready: {rt.embeddings.error}")
        mirror = rt.keywords
        if mirror is None or not mirror.wait_ready(600):
            raise SystemExit("the keyword index is off or did not build")
        for q in questions[:30]:
            rt.service.recall(RecallRequest(query=q, track_access=False))
        took: dict[str, list[float]] = {"mirror": [], "fts5": []}
        for i, q in enumerate(questions[30:]):
            arm = "mirror" if i % 2 == 0 else "fts5"
            rt.service.recaller.keywords = mirror if arm == "mirror" else None
            t0 = time.perf_counter()
            rt.service.recall(RecallRequest(query=q, track_access=False))
            took[arm].append((time.perf_counter() - t0) * 1000)
        same = 0
        for q in questions[30:]:
            answers = []
            for kw in (mirror, None):
                rt.service.recaller.keywords = kw
                answers.append([r.id for r in rt.service.recall(RecallRequest(query=q, track_access=False)).results])
            same += answers[0] == answers[1]
        return {arm: Timing(v).summary() for arm, v in took.items()} | {
            "identical_ids": same,
            "questions": len(questions) - 30,
        }
    finally:
        rt.stop()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--memories", type=int, default=50_000)
    p.add_argument("--questions", type=int, default=600)
    p.add_argument("--cache-dir", type=Path, default=None)
    p.add_argument("--out", type=Path, default=None)
    args = p.parse_args()
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    turns, _spare, questions = real_turns(args.memories)
    chars = sum(map(len, turns))
    print(f"{len(turns)} turns, {chars / len(turns):.0f} chars on average; {len(questions)} questions", file=sys.stderr)
    vecs = vectors_for(turns, args.cache_dir, _embed)
    report: dict[str, Any] = {
        "memories": len(turns),
        "avg_chars": round(chars / len(turns)),
        "load_avg_at_start": os.getloadavg(),
    }
    with tempfile.TemporaryDirectory(prefix="signet-realistic-") as tmp:
        root = Path(tmp) / "ws"
        samples = [Sample(t, "", "conversations", "", ()) for t in turns]
        seed_workspace(root, samples, vecs, lambda *_: None)
        del vecs
        report["keyword"] = keyword_ab(root, questions[: args.questions + 30])
    report["load_avg_at_end"] = os.getloadavg()
    text = json.dumps(report, indent=2)
    print(text)
    if args.out:
        args.out.write_text(text)


if __name__ == "__main__":
    main()
