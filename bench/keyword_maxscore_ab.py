"""The keyword index's search: every posting scored (before) or MaxScore's split (after), one process.

Builds the in-memory keyword index (signet.search.keyword_mirror) of a seeded store once
(``signet bench latency --store DIR`` keeps one), then asks the yardsticks' real questions as
recall's keyword leg asks them (the top ``pool * OVERFETCH`` = 200 rows), each question in both
arms, alternating which goes first: ``every_posting`` below (the search before: every posting of
every phrase scored, kept here as the reference) and ``KeywordIndex.search`` (the rarest phrases
scored in full, the common ones looked up at the rows those found). Reports p50/p95/p99 ms per
arm and how many answers were identical (all must be: the same sums in the same order), also
with a time filter (the newest quarter of the rows).

    python bench/keyword_maxscore_ab.py --db /work/stores/realistic-1000000/ws/memory/memories.db \
        --locomo ../shared/bench-data/locomo10.json --longmemeval ../shared/bench-data/longmemeval_s_dev150.json.gz

A measurement script, not a test: figures and the decision go in docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import json
import random
import time
from pathlib import Path
from typing import Any

import numpy as np

from signet.bench import realistic
from signet.bench.metrics import percentile
from signet.search.fts import recall_terms
from signet.search.ftspool import OVERFETCH
from signet.search.keyword_mirror import KeywordMirror, phrases_of
from signet.search.keywords import KeywordIndex, Phrase, _bm25, _idf


def every_posting(
    index: KeywordIndex, phrases: list[Phrase], k: int, created_between: tuple[float, float] | None = None
) -> list[tuple[int, float]]:
    """The search before MaxScore: every valid posting of every phrase scored into a dense array."""
    n, total = index._count, index._total
    avgdl = total / n
    scores = np.zeros(index._rows, dtype=np.float64)
    seen = np.zeros(index._rows, dtype=bool)
    for phrase in phrases:
        rows, tf = index._postings(index._term_ids(phrase))
        if rows.size:
            scores[rows] += _bm25(_idf(n, rows.size), tf, index._length[rows], avgdl)
            seen[rows] = True
    cand = index._allowed(np.flatnonzero(seen), None, created_between)
    return index._top(cand, scores[cand], k) if cand.size else []


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--db", type=Path, required=True)
    ap.add_argument("--locomo", type=Path)
    ap.add_argument("--longmemeval", type=Path)
    ap.add_argument("--queries", type=int, default=300)
    ap.add_argument("--k", type=int, default=50 * OVERFETCH, help="rows asked (recall: top_k 50 x OVERFETCH)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    from signet.store.database import Database

    questions = list(realistic._questions(args.locomo, args.longmemeval))
    random.Random(7).shuffle(questions)
    queries = [p for p in (phrases_of(recall_terms(q)) for q in questions) if p][: args.queries]
    db = Database(args.db).open()
    try:
        mirror = KeywordMirror(db)
        t0 = time.perf_counter()
        mirror.build()
        index = mirror.index
        report: dict[str, Any] = {
            "rows": len(index),
            "postings": index.postings,
            "build_s": round(time.perf_counter() - t0, 1),
            "k": args.k,
        }
    finally:
        db.close()
    created = index._created[: index._rows]
    newest = (float(np.nanpercentile(created, 75)), float(np.nanmax(created)) + 1.0)
    Window = tuple[float, float] | None

    def before(p: list[Phrase], w: Window = None) -> list[tuple[int, float]]:
        return every_posting(index, p, args.k, w)

    def after(p: list[Phrase], w: Window = None) -> list[tuple[int, float]]:
        return index.search(p, args.k, created_between=w)

    arms = {"every posting (before)": before, "maxscore (after)": after}
    report["identical_answers"] = sum(len({json.dumps(a(q)) for a in arms.values()}) == 1 for q in queries)
    report["identical_answers_newest_quarter"] = sum(
        len({json.dumps(a(q, newest)) for a in arms.values()}) == 1 for q in queries
    )
    report["questions"] = len(queries)
    times: dict[str, list[float]] = {a: [] for a in arms}
    for r in range(args.rounds):
        for i, q in enumerate(queries):
            for name in list(arms) if (i + r) % 2 == 0 else list(reversed(arms)):
                t0 = time.perf_counter()
                arms[name](q)
                times[name].append((time.perf_counter() - t0) * 1000)
    for name, t in times.items():
        report[name] = {f"p{p}_ms": round(percentile(t, p), 2) for p in (50, 95, 99)}
    report["p50_ratio"] = round(
        percentile(times["maxscore (after)"], 50) / percentile(times["every posting (before)"], 50), 3
    )
    text = json.dumps(report, indent=2)
    print(text)
    if args.out:
        args.out.write_text(text)


if __name__ == "__main__":
    main()
