"""Real conversation turns from the two public yardsticks, for benchmarks that measure speed,
size and resources on what agents really store (a few hundred characters per memory), not on
one-line synthetic sentences.

Turns come from LongMemEval-S haystacks (``longmemeval_s_dev150.json.gz``) and LoCoMo
(``locomo10.json``), deduplicated and shuffled with a fixed seed, so every run of a benchmark
stores the same memories and asks the same questions.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import random
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

MAX_TURN_CHARS = 20_000


@dataclass(frozen=True)
class Conversations:
    """Distinct turns to store, spare turns to remember under load, and real questions."""

    turns: list[str]
    spare: list[str]
    questions: list[str]


def _longmemeval(path: Path, seen: set[str], turns: list[str], questions: list[str]) -> None:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as fh:
        items = json.load(fh)
    for item in items:
        questions.append(str(item["question"]))
        for session in item["haystack_sessions"]:
            for turn in session:
                text = f"{turn.get('role', 'user')}: {str(turn.get('content', '')).strip()}"[:MAX_TURN_CHARS]
                if len(text) > 10 and text not in seen:
                    seen.add(text)
                    turns.append(text)


def _locomo(path: Path, seen: set[str], turns: list[str], questions: list[str]) -> None:
    for sample in json.loads(path.read_text(encoding="utf-8")):
        for key, value in sample["conversation"].items():
            if key.startswith("session_") and isinstance(value, list):
                for t in value:
                    text = f"{t.get('speaker', '')}: {t.get('text', '')}".strip()[:MAX_TURN_CHARS]
                    if len(text) > 10 and text not in seen:
                        seen.add(text)
                        turns.append(text)
        questions += [str(q["question"]) for q in sample["qa"] if int(q.get("category", 0)) in (1, 2, 3, 4)]


def load(
    limit: int, *, locomo: Path | None, longmemeval: Path | None, spare: int = 4000, seed: int = 5
) -> Conversations:
    """Up to ``limit`` distinct turns (plus ``spare`` more) from whichever files are given."""
    if locomo is None and longmemeval is None:
        raise ValueError("give at least one of locomo10.json and longmemeval_s_dev150.json.gz")
    seen: set[str] = set()
    turns: list[str] = []
    questions: list[str] = []
    if longmemeval is not None:
        _longmemeval(longmemeval, seen, turns, questions)
    if locomo is not None:
        _locomo(locomo, seen, turns, questions)
    rng = random.Random(seed)
    rng.shuffle(turns)
    rng.shuffle(questions)
    return Conversations(turns[:limit], turns[limit : limit + spare], questions)


def vectors_for(turns: list[str], cache_dir: Path | None, embed: Callable[[list[str]], np.ndarray]) -> np.ndarray:
    """``embed(turns)``, kept in ``cache_dir`` under a digest of the texts (embedding 50k real
    turns takes minutes; the vectors of the same texts never change)."""
    from signet.embedding.local import DEFAULT_MODEL  # the model embed_bulk and new workspaces use

    key = hashlib.sha256(f"{DEFAULT_MODEL}\n".encode() + "\n".join(turns).encode()).hexdigest()[:16]
    path = cache_dir / f"turns-{len(turns)}-{key}.npy" if cache_dir else None
    if path is not None and path.exists():
        cached: np.ndarray = np.load(path)
        return cached
    vecs = embed(turns)
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        np.save(path, vecs)
    return vecs
