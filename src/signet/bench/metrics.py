"""Retrieval metrics shared by the benchmarks: recall@k, hit@k, all@k, MRR, NDCG, percentiles."""

from __future__ import annotations

import math
from collections.abc import Sequence


def recall_at(ranked: Sequence[str], gold: set[str], k: int) -> float:
    """Share of gold items among the top k (gold items that cannot be retrieved still count)."""
    if not gold:
        return 0.0
    return len(gold & set(ranked[:k])) / len(gold)


def hit_at(ranked: Sequence[str], gold: set[str], k: int) -> float:
    return 1.0 if gold & set(ranked[:k]) else 0.0


def all_at(ranked: Sequence[str], gold: set[str], k: int) -> float:
    return 1.0 if gold and gold <= set(ranked[:k]) else 0.0


def mrr(ranked: Sequence[str], gold: set[str]) -> float:
    for i, item in enumerate(ranked):
        if item in gold:
            return 1.0 / (i + 1)
    return 0.0


def ndcg_at(ranked: Sequence[str], gold: set[str], k: int) -> float:
    dcg = sum(1.0 / math.log2(i + 2) for i, item in enumerate(ranked[:k]) if item in gold)
    ideal = sum(1.0 / math.log2(i + 2) for i in range(min(len(gold), k)))
    return dcg / ideal if ideal > 0 else 0.0


def percentile(values: Sequence[float], p: float) -> float:
    """Nearest-rank percentile (p in 0..100); 0.0 for no values."""
    if not values:
        return 0.0
    ordered = sorted(values)
    rank = max(1, math.ceil(p / 100.0 * len(ordered)))
    return ordered[min(rank, len(ordered)) - 1]


def dedupe(items: Sequence[str]) -> list[str]:
    """Distinct items in first-seen order (memories of one session collapse to the session)."""
    return list(dict.fromkeys(items))
