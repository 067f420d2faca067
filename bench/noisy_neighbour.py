"""A noisy neighbour for latency runs: one core streaming 64 MB array copies for a bounded time.

The machine this project is measured on shares its memory bandwidth and cores with other
tenants, and the daemon's figures move with them (docs/benchmarks.md). This makes that
condition on purpose, so two versions of the code can be compared under the same load:

    python bench/noisy_neighbour.py 150 &   # seconds; it stops by itself
    signet bench latency --memories 100000 --cache-dir /tmp/signet-bench-cache --out new.json

Session 7 ran it beside alternating runs of the previous and the current code (A/B pairs).
"""

from __future__ import annotations

import argparse
import time

import numpy as np


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("seconds", type=float, help="how long to run (it stops by itself)")
    parser.add_argument("--mib", type=int, default=64, help="size of the array copied back and forth")
    args = parser.parse_args()
    src = np.ones(args.mib * 1024 * 1024 // 8)
    dst = np.empty_like(src)
    end = time.monotonic() + args.seconds
    copies = 0
    while time.monotonic() < end:
        np.copyto(dst, src)
        copies += 1
    print(f"{copies} copies of {args.mib} MiB in {args.seconds:.0f} s")


if __name__ == "__main__":
    main()
