"""The realistic profile of ``signet bench latency``: real conversation turns, kept as threads.

Synthetic one-line memories made recall look 8x faster and the store 20x smaller than what
users saw on their transcripts. This profile stores what agents really store: the turns of
LongMemEval-S haystacks and LoCoMo conversations (a few hundred characters each), session by
session, each session one thread (``source_id``), each conversation group one project.

Beyond the distinct turns the files hold (~75k), sessions are repeated under fresh ids with a
light perturbation: one word of each turn dropped, a different one in each copy, so every copy
is a distinct memory (remember deduplicates identical text) that still reads like the original.
A copy's vector is its original's plus a little Gaussian noise (cosine ~0.99 to it, about what
dropping one word of a long turn does), so embedding stays bounded by the distinct turns and
their vectors can come from a persistent cache (:mod:`signet.bench.vector_cache`).

Queries are the files' real questions, asked of the whole store: the profile measures speed
and size, the yardstick benchmarks measure which memory comes back.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from signet.bench.corpus import Sample
from signet.embedding.base import Vectors

MAX_TURN_CHARS = 20_000
NOISE_SIGMA = 0.007
"""Per-dimension noise added to a copy's vector: norm ~0.14 on 384 dimensions, cosine ~0.99."""
CACHE_EVERY = 2048
"""Turns embedded between two writes to the vector cache."""
LME_PROJECTS = 40
"""LongMemEval sessions are spread over this many projects (by session id), LoCoMo's ten
conversations are one project each: project filters then select a few percent of the store."""


@dataclass(frozen=True)
class Session:
    key: str
    project: str
    turns: tuple[str, ...]


@dataclass(frozen=True)
class Profile:
    """Samples to store and to remember under load, which distinct turn each one copies, and
    the real questions to ask."""

    samples: list[Sample]
    base: list[int]
    """Per sample, the index in :attr:`texts` of the distinct turn it is (or copies)."""
    copy: list[int]
    """Per sample, 0 for the original turn, r > 0 for its r-th perturbed copy."""
    texts: list[str]
    """The distinct original turns the samples use (the texts that are embedded)."""
    questions: list[str]


def _lme_sessions(path: Path) -> Iterator[Session]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as fh:
        items = json.load(fh)
    seen: set[str] = set()
    for item in items:
        for sid, session in zip(item["haystack_session_ids"], item["haystack_sessions"], strict=True):
            if sid in seen:
                continue
            seen.add(sid)
            turns = tuple(
                f"{t.get('role', 'user')}: {str(t.get('content', '')).strip()}"[:MAX_TURN_CHARS] for t in session
            )
            bucket = int(hashlib.sha256(str(sid).encode()).hexdigest()[:8], 16) % LME_PROJECTS
            yield Session(f"lme:{sid}", f"lme-{bucket}", turns)


def _locomo_sessions(path: Path) -> Iterator[Session]:
    for n, sample in enumerate(json.loads(path.read_text(encoding="utf-8"))):
        for key, value in sample["conversation"].items():
            if key.startswith("session_") and isinstance(value, list):
                turns = tuple(f"{t.get('speaker', '')}: {t.get('text', '')}".strip()[:MAX_TURN_CHARS] for t in value)
                yield Session(f"locomo:{n}:{key}", f"locomo-{n}", turns)


def _questions(locomo: Path | None, longmemeval: Path | None) -> list[str]:
    out: list[str] = []
    if longmemeval is not None:
        opener = gzip.open if longmemeval.suffix == ".gz" else open
        with opener(longmemeval, "rt", encoding="utf-8") as fh:
            out += [str(item["question"]) for item in json.load(fh)]
    if locomo is not None:
        for sample in json.loads(locomo.read_text(encoding="utf-8")):
            out += [str(q["question"]) for q in sample["qa"] if int(q.get("category", 0)) in (1, 2, 3, 4)]
    return list(dict.fromkeys(out))


def perturb(text: str, copy: int, position: int) -> str | None:
    """The ``copy``-th variant of a turn: one word dropped (a different one per copy); None for
    a turn too short to vary."""
    words = text.split(" ")
    if len(words) < 6:
        return None
    drop = 1 + (copy * 7919 + position * 104_729) % (len(words) - 1)  # never the "role:" word
    return " ".join(words[:drop] + words[drop + 1 :])


def build(
    n: int,
    *,
    locomo: Path | None,
    longmemeval: Path | None,
    seed: int = 7,
    max_copies: int = 1000,
    max_distinct: int | None = None,
) -> Profile:
    """The first ``n`` samples of the profile (prefix-stable: a larger ``n`` starts the same).

    ``max_distinct`` caps the distinct turns (the rest of the store is their copies): embedding
    is the cost of a large run (~15 long turns/s per core here), copies cost nothing."""
    if locomo is None and longmemeval is None:
        raise ValueError("the realistic profile needs --locomo and/or --longmemeval (the yardstick files)")
    sessions = [*(_lme_sessions(longmemeval) if longmemeval else ()), *(_locomo_sessions(locomo) if locomo else ())]
    random.Random(seed).shuffle(sessions)
    index: dict[str, int] = {}
    texts: list[str] = []
    samples: list[Sample] = []
    base: list[int] = []
    copies: list[int] = []
    seen: set[str] = set()
    for copy in range(max_copies):
        added = len(samples)
        for session in sessions:
            for pos, turn in enumerate(session.turns):
                if len(turn) <= 10:
                    continue
                text = turn if copy == 0 else perturb(turn, copy, pos)
                if text is None or text in seen:
                    continue
                if copy == 0 and turn not in index:
                    if max_distinct is not None and len(texts) >= max_distinct:
                        continue
                    index[turn] = len(texts)
                    texts.append(turn)
                if turn not in index:  # a turn first seen as a copy: never (originals come first)
                    continue
                seen.add(text)
                # LoCoMo's speakers are people (who); LongMemEval's roles are not
                who = turn.split(":", 1)[0][:60] if session.key.startswith("locomo:") else ""
                samples.append(
                    Sample(
                        content=text,
                        question="",
                        project=session.project,
                        who=who,
                        tags=(),
                        source_id=session.key if copy == 0 else f"{session.key}#{copy}",
                    )
                )
                base.append(index[turn])
                copies.append(copy)
                if len(samples) == n:
                    return Profile(samples, base, copies, texts, _questions(locomo, longmemeval))
        if len(samples) == added:
            break
    raise ValueError(f"the files give only {len(samples)} realistic memories; ask for fewer")


def vectors(
    profile: Profile,
    count: int,
    embed: Callable[[list[str]], Vectors],
    cache_dir: Path | None,
    model_key: str,
    seed: int = 7,
) -> tuple[Vectors, int]:
    """Vectors of the first ``count`` samples, and how many distinct turns were embedded now
    (the rest came from the cache in ``cache_dir``)."""
    from signet.bench.vector_cache import VectorCache, cache_file

    needed = sorted(set(profile.base[:count]))
    texts = [profile.texts[i] for i in needed]
    cache = VectorCache(cache_file(cache_dir, model_key)) if cache_dir is not None else None
    missing: list[int] = []
    try:
        got = cache.get_many(texts) if cache is not None else [None] * len(texts)
        missing = [i for i, v in enumerate(got) if v is None]
        for start in range(0, len(missing), CACHE_EVERY):  # kept as it goes: a stopped run resumes
            part = missing[start : start + CACHE_EVERY]
            fresh = embed([texts[i] for i in part])
            if cache is not None:
                cache.put_many([texts[i] for i in part], fresh)
            for j, i in enumerate(part):
                got[i] = fresh[j]
    finally:
        if cache is not None:
            cache.close()
    dims = len(got[0]) if got and got[0] is not None else 384
    base_vecs = np.zeros((len(profile.texts), dims), dtype=np.float32)
    for i, v in zip(needed, got, strict=True):
        base_vecs[i] = np.asarray(v, dtype=np.float32)
    out = base_vecs[np.asarray(profile.base[:count], dtype=np.int64)]
    copies = np.asarray(profile.copy[:count], dtype=np.int64) > 0
    if copies.any():
        rng = np.random.default_rng(seed)
        noisy = out[copies] + rng.normal(0.0, NOISE_SIGMA, size=(int(copies.sum()), dims)).astype(np.float32)
        out[copies] = noisy / np.linalg.norm(noisy, axis=1, keepdims=True)
    return np.ascontiguousarray(out, dtype=np.float32), len(missing)
