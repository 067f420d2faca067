"""Following the writes: the keyword index of this tree against another revision's, in one process.

A base of N real turns (LongMemEval-S and LoCoMo, signet.bench.conversations) is loaded into
each index, then M new turns are applied one at a time, each with its predecessor re-indexed
(its thread context gained the new turn), as ``KeywordMirror`` does for every remember. The
arms alternate in random order, three rounds each; the best round of each is reported, then
one untimed pass per arm measures the memory the applied writes hold (tracemalloc).

    git show e9c56a1:src/signet/search/keywords.py > /tmp/keywords_old.py
    python bench/keyword_follow_ab.py --old /tmp/keywords_old.py --locomo ../shared/bench-data/locomo10.json \
        --longmemeval ../shared/bench-data/longmemeval_s_dev150.json.gz --base 20000 --new 3000

The file is a measurement script, not a test: figures and the decision go in docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import importlib.util
import random
import sys
import time
import tracemalloc
from pathlib import Path
from types import ModuleType
from typing import Any

from signet.bench.conversations import load
from signet.search import keywords as this_tree
from signet.search.tokens import token_counts


def _module(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location("keywords_other", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules["keywords_other"] = mod  # dataclasses look their module up
    spec.loader.exec_module(mod)
    return mod


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--old", type=Path, required=True, help="keywords.py of the other revision")
    ap.add_argument("--locomo", type=Path)
    ap.add_argument("--longmemeval", type=Path)
    ap.add_argument("--base", type=int, default=20_000)
    ap.add_argument("--new", type=int, default=3_000)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    turns = load(a.base + a.new, locomo=a.locomo, longmemeval=a.longmemeval).turns
    arms: dict[str, ModuleType] = {"old": _module(a.old), "new": this_tree}

    def row(mod: Any, i: int) -> Any:
        context = " ".join(turns[max(0, i - 2) : i] + turns[i + 1 : i + 2])
        content, ctx = token_counts(turns[i], context)
        return mod.RowData(i, content, ctx, f"p{i % 7}", "2024-01-01T00:00:00Z")

    best: dict[str, float] = {}
    for _ in range(a.rounds):
        for name in random.sample(sorted(arms), len(arms)):
            mod = arms[name]
            index = mod.KeywordIndex((1.0, 0.5))
            index.load(row(mod, i) for i in range(a.base))
            writes = [(row(mod, i), row(mod, i - 1)) for i in range(a.base, a.base + a.new)]
            t0 = time.perf_counter()
            for turn, before in writes:
                index.apply([turn, before], [])
                if index.needs_merge():
                    index.merge()
            ms = (time.perf_counter() - t0) / a.new * 1000
            best[name] = min(best.get(name, ms), ms)
            print(f"{name}: {ms:.3f} ms per remembered turn (vocabulary {index.stats()})", flush=True)
    print({k: round(v, 3) for k, v in best.items()}, f"new/old {best['new'] / best['old']:.2f}x")
    for name, mod in arms.items():
        index = mod.KeywordIndex((1.0, 0.5))
        index.load(row(mod, i) for i in range(a.base))
        writes = [(row(mod, i), row(mod, i - 1)) for i in range(a.base, a.base + a.new)]
        tracemalloc.start()
        for turn, before in writes:
            index.apply([turn, before], [])
        held = tracemalloc.get_traced_memory()[0]
        tracemalloc.stop()
        print(
            f"{name}: the {a.new} writes hold {held / 1e6:.1f} MB (the index now holds {index.postings} postings; no merge)"
        )


if __name__ == "__main__":
    main()
