"""What the deterministic entity extractor and the inline linker make of real conversation turns.

``python -m signet.bench.extractor_scale --locomo L --longmemeval M --memories 10000`` runs
both over the realistic profile's turns (signet.bench.realistic) in store order, as the write
path would, without a database: mentions per memory, the links the inline linker would write
against the entities created so far, the entity count and the most mentioned and most linked
entities. Junk entities ("use", "tips") show up here first, and their links grow with the
store (docs/benchmarks.md, "The deterministic extractor at scale").
"""

from __future__ import annotations

import argparse
import collections
import time
from pathlib import Path
from typing import Any

from signet.bench import realistic
from signet.knowledge.extract import extract
from signet.search.names import linkable_names


def measure(contents: list[tuple[str, str | None]]) -> dict[str, Any]:
    """The figures for ``contents`` ((text, speaker) in store order)."""
    mentioned: collections.Counter[str] = collections.Counter()
    linked: collections.Counter[str] = collections.Counter()
    mentions = links = 0
    spent = 0.0
    for text, who in contents:
        t0 = time.perf_counter()
        found = extract(text, who)
        spent += time.perf_counter() - t0
        mentions += len(found)
        for name in set(linkable_names(text)):
            if name in mentioned:
                links += 1
                linked[name] += 1
        for m in found:
            mentioned[m.canonical] += 1
    n = max(len(contents), 1)
    return {
        "memories": len(contents),
        "mentions_per_memory": round(mentions / n, 2),
        "inline_links_per_memory": round(links / n, 2),
        "entities": len(mentioned),
        "extract_ms_per_memory": round(spent / n * 1000, 3),
        "most_mentioned": mentioned.most_common(15),
        "most_linked": linked.most_common(15),
    }


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--locomo", type=Path, required=True)
    ap.add_argument("--longmemeval", type=Path, required=True)
    ap.add_argument("--memories", type=int, default=10_000)
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args(argv)
    prof = realistic.build(
        args.memories, locomo=args.locomo, longmemeval=args.longmemeval, seed=args.seed, max_distinct=args.memories
    )
    got = measure([(s.content, s.who or None) for s in prof.samples[: args.memories]])
    for key, value in got.items():
        print(f"{key}: {value}")


if __name__ == "__main__":
    main()
