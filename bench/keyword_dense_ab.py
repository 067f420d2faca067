"""The keyword index's postings merged by sorting (before) or over a dense array (after), one process.

Builds the in-memory keyword index (signet.search.keyword_mirror) of a seeded store once
(``signet bench latency --store DIR`` keeps one), then asks the yardsticks' real questions as
recall's keyword leg asks them, each question in both arms, alternating which goes first:
``keywords.DENSE_FROM`` set past any store (every merge by ``np.unique``: the code before) and at
its shipped value. Reports p50/p95 ms per arm and how many answers were identical (all must be:
the sums are added in the same order).

    python bench/keyword_dense_ab.py --db /work/stores/realistic-100000/ws/memory/memories.db \
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

from signet.bench import realistic
from signet.bench.metrics import percentile
from signet.search import keywords
from signet.search.fts import recall_terms
from signet.search.keyword_mirror import KeywordMirror
from signet.store.database import Database


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--db", type=Path, required=True)
    ap.add_argument("--locomo", type=Path)
    ap.add_argument("--longmemeval", type=Path)
    ap.add_argument("--queries", type=int, default=300)
    ap.add_argument("--pool", type=int, default=50)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    questions = list(realistic._questions(args.locomo, args.longmemeval))
    random.Random(7).shuffle(questions)
    shipped = keywords.DENSE_FROM
    arms = {"sorted (before)": 10**18, "dense (after)": shipped}
    db = Database(args.db).open()
    try:
        mirror = KeywordMirror(db)
        t0 = time.perf_counter()
        mirror.build()
        report: dict[str, Any] = {"rows": len(mirror.index), "build_s": round(time.perf_counter() - t0, 1)}
        times: dict[str, list[float]] = {a: [] for a in arms}
        same = asked = 0
        for i, q in enumerate(questions[: args.queries]):
            terms = recall_terms(q)
            if not terms:
                continue
            asked += 1
            answers = {}
            for a in list(arms) if i % 2 == 0 else list(reversed(arms)):
                keywords.DENSE_FROM = arms[a]
                t0 = time.perf_counter()
                answers[a] = db.read(lambda c, terms=terms: mirror.search(c, terms, args.pool))  # type: ignore[misc]
                times[a].append((time.perf_counter() - t0) * 1000)
            same += len({json.dumps(v) for v in answers.values()}) == 1
        keywords.DENSE_FROM = shipped
        report.update(
            {
                "questions": asked,
                "identical_answers": same,
                **{
                    a: {"p50_ms": round(percentile(t, 50), 2), "p95_ms": round(percentile(t, 95), 2)}
                    for a, t in times.items()
                },
            }
        )
    finally:
        db.close()
    text = json.dumps(report, indent=2)
    print(text)
    if args.out:
        args.out.write_text(text)


if __name__ == "__main__":
    main()
