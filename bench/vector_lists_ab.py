"""The vector leg with and without inverted lists, on a real store's vectors, in one process.

Loads every live vector of a seeded store (``signet bench latency --store DIR`` keeps one), the
way the daemon's index holds them, into two ``VectorIndex`` objects: one that reads every row
(or their coarse projection, where the vectors allow one), as below
``search.vector_lists_min_rows``, and one with inverted lists (signet.search.inverted).
The yardsticks' real questions are embedded with the local
model and searched in both, alternating, with no filter and with a project filter (the store's
most common project) and a time filter (the newest quarter). Reported per arm: p50/p95 ms, and
against numpy's exact top k, the share of the exact top 10 and top 50 each returns.

    python bench/vector_lists_ab.py --db /work/stores/realistic-1000000/ws/memory/memories.db \
        --locomo ../shared/bench-data/locomo10.json --longmemeval ../shared/bench-data/longmemeval_s_dev150.json.gz

A measurement script, not a test: figures and the decision go in docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import json
import random
import time
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

from signet.bench import realistic
from signet.bench.latency import measure_embedding
from signet.bench.metrics import percentile
from signet.search.vectors import VectorIndex, epoch, limit_blas_threads
from signet.store import vector_blob
from signet.store.sqlite import sqlite3


def load(db: Path) -> tuple[list[str], np.ndarray, list[str | None], list[str | None]]:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        rows = conn.execute(
            "SELECT m.id, m.project, m.created_at, e.vector, e.dimensions FROM memories m"
            " JOIN embeddings e ON e.content_hash = m.content_hash WHERE m.is_deleted = 0"
        ).fetchall()
    finally:
        conn.close()
    mat, kept = vector_blob.decode_many([r[3] for r in rows], [int(r[4]) for r in rows])
    rows = [rows[i] for i in kept]
    return [r[0] for r in rows], mat, [r[1] for r in rows], [r[2] for r in rows]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--db", type=Path, required=True)
    ap.add_argument("--locomo", type=Path)
    ap.add_argument("--longmemeval", type=Path)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    limit_blas_threads(1)  # the daemon's default (search.vector_threads)

    ids, mat, projects, created = load(args.db)
    questions = list(realistic._questions(args.locomo, args.longmemeval))
    random.Random(7).shuffle(questions)
    _, qvecs = measure_embedding(questions[: args.queries])

    arms: dict[str, VectorIndex] = {}
    build_s: dict[str, float] = {}
    for name, lists in (("every row", 10**12), ("lists", 0)):
        index = VectorIndex()
        index.lists_min_rows = lists
        t0 = time.perf_counter()
        index.upsert_many(ids, mat, projects, created)
        build_s[name] = round(time.perf_counter() - t0, 2)
        arms[name] = index
    assert arms["lists"].inverted_lists is not None and arms["every row"].inverted_lists is None

    top_project = Counter(projects).most_common(1)[0][0]
    when = np.array([epoch(c) for c in created])
    newest = (float(np.quantile(when, 0.75)), float(when.max()) + 1)
    filters: dict[str, dict[str, Any]] = {
        "none": {},
        "project": {"project": top_project},
        "newest quarter": {"created_between": newest},
    }
    allowed = {
        "none": np.ones(len(ids), dtype=bool),
        "project": np.array([p == top_project for p in projects]),
        "newest quarter": (when >= newest[0]) & (when < newest[1]),
    }
    report: dict[str, Any] = {"rows": len(ids), "build_s": build_s, "cells": arms["lists"].inverted_lists}
    for fname, kw in filters.items():
        times: dict[str, list[float]] = {a: [] for a in arms}
        share: dict[str, dict[int, list[float]]] = {a: {10: [], 50: []} for a in arms}
        rows = np.flatnonzero(allowed[fname])
        for i, q in enumerate(qvecs):
            sims = mat[rows] @ q
            exact = {k: {ids[rows[j]] for j in np.argpartition(-sims, k - 1)[:k]} for k in (10, 50)}
            order = list(arms) if i % 2 == 0 else list(reversed(arms))
            for a in order:
                t0 = time.perf_counter()
                hits = arms[a].search(q, 50, **kw)
                times[a].append((time.perf_counter() - t0) * 1000)
                got = [h.memory_id for h in hits]
                for k in (10, 50):
                    share[a][k].append(len(set(got[:k]) & exact[k]) / k)
        report[fname] = {
            "rows_allowed": int(rows.size),
            **{
                a: {
                    "p50_ms": round(percentile(times[a], 50), 2),
                    "p95_ms": round(percentile(times[a], 95), 2),
                    "exact_top10_found": round(float(np.mean(share[a][10])), 4),
                    "exact_top50_found": round(float(np.mean(share[a][50])), 4),
                }
                for a in arms
            },
        }
    text = json.dumps(report, indent=2)
    print(text)
    if args.out:
        args.out.write_text(text)


if __name__ == "__main__":
    main()
