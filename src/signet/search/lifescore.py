"""A memory's life in the ranking: recency, importance, use, freshness and currentness.

Fusion (signet.search.recall) says how well a memory *matches* a query; this stage says how
much the memory is *worth* today, as agenr's multiplicative model does (spec 002, Recall
Scoring Model): one disqualifying factor — years without use, a newer statement of the same
thing — pulls a strong match down, where an additive bonus would only nudge. Adapted to the
hybrid score, each factor is ``(1 - w) + w · x`` with its weight ``w`` in
``search.scoring``, so a weight of 0 switches that factor off and 1 is agenr's full effect:

- **recency** ``x = 2^(-age / half_life)``, the half-life by expiry class: pinned memories are
  *core* and never decay, episodic and issue memories are *temporary* (30 d), everything else
  *permanent* (365 d). Age is counted to the request's ``until`` when it names one (a question
  about last spring is not about today), else to now.
- **strength** ``x = 2 · max(importance, use)`` (so the neutral importance 0.5 is a factor of 1):
  what the user marked important, or what recall keeps returning (``use`` grows with the log of
  ``access_count``, decaying with the time since the last access at the class half-life — the
  spacing that agenr rewards shows up here as accesses that keep the decay from setting in).
- **freshness**: x1.5 within the hour, x1.25 within 6 h, x1.1 within a day, always against the
  real clock (what was just said is what the user is talking about).
- **currentness**: a candidate restated later — another candidate of the same subject (cosine
  ≥ ``supersede_similarity``, and mentioning the names the query names, if it names any)
  created more than a day after it — is what was true *then*; it is
  multiplied by ``1 - supersede_weight`` so the newer statement ranks first. This is the factor
  that answers "what is true now" (bench/timeline.py); agenr's contradiction counter is the
  same idea with an LLM in the loop.

Pinned memories are protected: their factor never drops below 1.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import numpy as np

from signet.config import ScoringSettings

DAY_S = 86_400.0
TEMPORARY_TYPES = frozenset({"episodic", "issue"})
"""Memory types whose facts go out of date quickly: the *temporary* expiry class."""

_NOW = re.compile(
    r"\b(now|nowadays|currently|current|these days|still|latest|anymore|at the moment|at present|today"
    r"|most recent(ly)?|right now)\b",
    re.IGNORECASE,
)


_HYPOTHETICAL = re.compile(r"\b(would|could|might)\b.*\bif\b|\bif\b.*\b(would|could|might)\b", re.IGNORECASE)
""""Would she *still* want to ... if ...": a question about what might have been, not about now."""


def asks_now(query: str) -> bool:
    """Whether ``query`` asks what is true at present ("where does she work *now*?")."""
    return _NOW.search(query) is not None and _HYPOTHETICAL.search(query) is None


FRESH_STEPS = ((3_600.0, 1.5), (6 * 3_600.0, 1.25), (DAY_S, 1.1))
"""``(age in seconds, factor)``: agenr's freshness boost, newest step first."""


def _ts(value: str | None) -> float | None:
    """POSIX seconds of a stored ISO-8601 timestamp (naive ones are UTC), or None."""
    if not value:
        return None
    try:
        dt = datetime.fromisoformat(value)
    except ValueError:
        return None
    return (dt if dt.tzinfo is not None else dt.replace(tzinfo=UTC)).timestamp()


def half_life_days(row: Mapping[str, Any], cfg: ScoringSettings) -> float:
    """The expiry class's half-life in days (``inf`` for core)."""
    if row["pinned"]:
        return math.inf
    return cfg.temporary_half_life_days if row["type"] in TEMPORARY_TYPES else cfg.permanent_half_life_days


def _decay(age_s: float, half_life: float) -> float:
    return 1.0 if math.isinf(half_life) else 2.0 ** (-max(age_s, 0.0) / (half_life * DAY_S))


def _blend(weight: float, x: float) -> float:
    return (1.0 - weight) + weight * x


@dataclass(frozen=True)
class LifeFactors:
    """Each factor one candidate got (1.0: no effect), for the ranking's explanation and tests."""

    recency: float
    strength: float
    freshness: float
    currentness: float

    @property
    def total(self) -> float:
        return self.recency * self.strength * self.freshness * self.currentness


def factors(
    row: Mapping[str, Any],
    cfg: ScoringSettings,
    *,
    anchor: float,
    now: float,
    superseded: bool,
    asked: bool = False,
) -> LifeFactors:
    """The life factors of one stored memory ``row`` (a ``memories`` row); ``asked``: the query
    asks about the present, so recency weighs ``now_recency_weight``."""
    half = half_life_days(row, cfg)
    created = _ts(row["created_at"]) or now
    recency = _blend(cfg.now_recency_weight if asked else cfg.recency_weight, _decay(anchor - created, half))
    accessed = _ts(row["last_accessed"])
    use = 0.0
    if accessed is not None and row["access_count"]:
        use = min(1.0, math.log1p(int(row["access_count"])) / math.log1p(10)) * _decay(now - accessed, half)
    strength = _blend(cfg.strength_weight, 2.0 * max(float(row["importance"]), use))
    fresh = 1.0
    if cfg.freshness:
        age = now - created
        fresh = next((f for limit, f in FRESH_STEPS if 0 <= age < limit), 1.0)
    current = 1.0 - cfg.supersede_weight if superseded else 1.0
    return LifeFactors(recency, strength, fresh, current)


_WORD = re.compile(r"\w+", re.UNICODE)
_NAME = re.compile(r"(?<=\w)\W+([A-Z][\w'-]*)")
"""A capitalised word that is not the first of the text: a name, in English at least."""


def named_in(query: str) -> set[str]:
    """Lower-cased names the query mentions ("Where does Maya work now?" -> {"maya"})."""
    names = {m.group(1).lower().removesuffix("'s") for m in _NAME.finditer(query)}
    return {n for n in names if len(n) > 1}  # not "I"


def about(row: Mapping[str, Any], names: set[str]) -> bool:
    """Whether a memory mentions one of ``names`` (in its text or as who said it)."""
    words = set(_WORD.findall(f"{row['content']} {row['who'] or ''}".lower()))
    return not names.isdisjoint(words)


def superseded_ids(
    ids: list[str],
    rows: Mapping[str, Mapping[str, Any]],
    vectors: Mapping[str, Any],
    similarity: float,
    names: set[str] | None = None,
) -> set[str]:
    """The candidates with a later restatement among ``ids``: another candidate whose vector
    has cosine ≥ ``similarity`` with theirs and was created more than a day after them. With
    ``names`` (the query's), only candidates mentioning one of them are compared: "Jonas's car
    is a Ford" says nothing about what Liam drives now, however alike the sentences are."""
    have = [
        i
        for i in ids
        if i in vectors
        and i in rows
        and _ts(rows[i]["created_at"]) is not None
        and (not names or about(rows[i], names))
    ]
    if len(have) < 2:
        return set()
    raw = np.asarray([vectors[i] for i in have], dtype=np.float64)
    norms = np.linalg.norm(raw, axis=1, keepdims=True)
    unit = raw / np.where(norms > 0, norms, 1.0)
    sims = unit @ unit.T
    created = np.asarray([_ts(rows[i]["created_at"]) for i in have], dtype=np.float64)
    later = created[None, :] > created[:, None] + DAY_S  # [i, j]: j was created a day after i
    hit = (sims >= similarity) & later
    return {have[i] for i in np.flatnonzero(hit.any(axis=1))}


def apply(
    scores: dict[str, float],
    rows: Mapping[str, Mapping[str, Any]],
    cfg: ScoringSettings,
    *,
    query: str,
    until: datetime | None,
    names_time: bool = False,
    vectors_for: Callable[[list[str]], Mapping[str, Any]] | None,
    now: float | None = None,
) -> dict[str, LifeFactors]:
    """Multiply each score in ``scores`` (in place) by its memory's life factors; returns them.

    Only the ``cfg.window`` best-matching candidates are compared for currentness (a restatement
    that does not match the query well is no evidence about the candidate). ``vectors_for``
    gives stored vectors by id (None: no vectors, so no currentness). ``names_time``: the query
    names a date or period (signet.search.timeframe), so its "currently" is about then, not now."""
    if not cfg.enabled or not scores:
        return {}
    now = datetime.now(UTC).timestamp() if now is None else now
    anchor = until.timestamp() if until is not None else now
    top = sorted(scores, key=lambda m: scores[m], reverse=True)[: cfg.window]
    stale: set[str] = set()
    asked = asks_now(query) and not names_time  # "currently ... in August 2023" asks about then
    wanted = cfg.currentness == "always" or (cfg.currentness == "asked" and asked)
    if vectors_for is not None and cfg.supersede_weight > 0 and wanted:
        stale = superseded_ids(top, rows, vectors_for(top), cfg.supersede_similarity, named_in(query))
    out: dict[str, LifeFactors] = {}
    for mid in list(scores):
        row = rows.get(mid)
        if row is None:
            continue
        f = factors(row, cfg, anchor=anchor, now=now, superseded=mid in stale, asked=asked)
        total = max(f.total, 1.0) if row["pinned"] else f.total
        scores[mid] *= total
        out[mid] = f
    return out
