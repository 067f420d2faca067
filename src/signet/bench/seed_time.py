"""How long storing N real conversation turns through ``remember_batch`` takes, alone.

``python -m signet.bench.seed_time --locomo L --longmemeval M --vector-cache DIR --memories 10000``
seeds a fresh workspace the way ``signet bench latency`` does (signet.bench.latency.seed_workspace:
batches of 1,000, vectors from the cache, nothing else running in the process) and prints the
time and the database it made (file size against the memories' text and vectors): the write
path and the storage layout at scale without a daemon, for A/B runs of a change to either
(docs/benchmarks.md, "The writer's statement journal", "The knowledge graph's bytes").
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np

from signet.bench import latency, realistic
from signet.store import space
from signet.store.database import connect


def _not_cached(texts: list[str]) -> np.ndarray:
    raise SystemExit(f"{len(texts)} turns have no cached vector: run signet bench latency with this cache first")


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--locomo", type=Path, required=True)
    ap.add_argument("--longmemeval", type=Path, required=True)
    ap.add_argument("--vector-cache", type=Path, required=True)
    ap.add_argument("--memories", type=int, default=10_000)
    ap.add_argument("--distinct-turns", type=int, default=20_000)
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args(argv)
    prof = realistic.build(
        args.memories,
        locomo=args.locomo,
        longmemeval=args.longmemeval,
        seed=args.seed,
        max_distinct=args.distinct_turns,
    )
    model = f"local:{latency._default_model()}"
    vecs, _ = realistic.vectors(prof, args.memories, _not_cached, args.vector_cache, model, args.seed)
    with tempfile.TemporaryDirectory(prefix="signet-seed-") as d:
        t0 = time.perf_counter()
        latency.seed_workspace(Path(d) / "ws", prof.samples[: args.memories], vecs, lambda *_: None)
        took = time.perf_counter() - t0
        conn = connect(Path(d) / "ws" / "memory" / "memories.db")
        try:
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            use = space.usage(conn)
        finally:
            conn.close()
    print(f"seeded {args.memories} memories in {took:.1f} s ({args.memories / took:.0f}/s)")
    print(
        f"database {use.file_bytes / 1e6:.1f} MB: text {use.text_bytes / 1e6:.1f} MB, vectors"
        f" {use.vector_bytes / 1e6:.1f} MB, {use.amplification}x text + vectors"
    )


if __name__ == "__main__":
    main()
