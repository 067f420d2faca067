"""Query-side adjustments to fused recall scores, kept pure for unit tests.

Each is a small multiplicative nudge on the fused score, measured on LoCoMo with the
conversations split in two halves that both had to gain (docs/benchmarks.md).

Who said it. A question about a person ("what did Caroline research?") is mostly about what
that person said or did, so memories whose ``who`` is a name the query mentions get their
fused score multiplied by ``1 + WHO_BOOST``. It is a nudge, not a filter: the other party's
line ("how is your research going, Caroline?") stays in the ranking. Measured on LoCoMo in
docs/benchmarks.md.

Length. A memory of a few words ("Thanks!", "Sounds great, see you then") rarely holds the
fact a question asks for, yet its embedding sits close to many short questions. Scores are
multiplied by ``(min(words, LENGTH_REF) / LENGTH_REF) ** LENGTH_EXPONENT``: at most 1 (a
memory of ``LENGTH_REF`` words or more is untouched), 0.50 for two words, 0.69 for ten,
0.87 for thirty-two. A prior, not a filter: a short memory that matches well still ranks. Measured on
LoCoMo in docs/benchmarks.md (both halves gained; the synthetic corpus did not lose).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from functools import lru_cache
from itertools import islice

WHO_BOOST = 0.4

QUESTION_PENALTY = 0.1
"""A memory that is itself a question ("seen any good movies lately?") asks, it does not
tell: embeddings put questions next to questions, so such lines crowd out the answer.
Their score is multiplied by ``1 - QUESTION_PENALTY``."""

WHEN_BOOST = 0.2
"""A "when ...?" question wants the memory that anchors the event in time ("I went to the
support group *yesterday*"); memories with a time expression get ``x (1 + WHEN_BOOST)``.
The anchor is read against the memory's own ``created_at`` by whoever answers."""

DATE_BOOST = 0.5
"""A query that names a time ("in March 2023", "last week": signet.search.timeframe) wants
what was said then: memories created inside the (widened) window get ``x (1 + DATE_BOOST)``."""

LENGTH_REF = 64
LENGTH_EXPONENT = 0.2

_WORD = re.compile(r"\w+", re.UNICODE)
_ASKS_WHEN = re.compile(r"^\W*(when|how long ago|what (year|month|day|date|time))\b", re.IGNORECASE)
_TIME_WORDS = re.compile(
    r"\b(yesterday|today|tonight|tomorrow|last|next|ago|recently|earlier|weekend|week|month|year"
    r"|monday|tuesday|wednesday|thursday|friday|saturday|sunday|january|february|march|april|may"
    r"|june|july|august|september|october|november|december|\d{4})\b",
    re.IGNORECASE,
)


def name_keys(text: str | None) -> set[str]:
    """Lowercase word tokens of a ``who`` value ("Mary Ann" -> {"mary", "ann"})."""
    if not text:
        return set()
    return {t for t in _WORD.findall(text.lower()) if len(t) > 1}


def mentioned_who(query: str, whos: Iterable[str | None]) -> set[str]:
    """The distinct ``who`` values (as given) that the query names, matched on whole words.

    A multi-word ``who`` matches when any of its words (two letters or more) is in the query,
    so "Caroline" in a question reaches ``who = "Caroline Smith"``.
    """
    words = {t for t in _WORD.findall(query.lower())}
    out: set[str] = set()
    for who in whos:
        if who and name_keys(who) & words:
            out.add(who)
    return out


def boost_named(
    scores: Mapping[str, float], who_of: Mapping[str, str | None], named: set[str], boost: float = WHO_BOOST
) -> dict[str, float]:
    """Scores with memories said by a named ``who`` multiplied by ``1 + boost``, capped at 1.0.

    The cap keeps recall scores in [0, 1], the range ``min_score`` and callers assume.
    """
    if not named or boost <= 0:
        return dict(scores)
    return {mid: min(1.0, s * (1.0 + boost)) if who_of.get(mid) in named else s for mid, s in scores.items()}


_CACHED_CHARS = 1000
"""Texts up to this long have their length prior cached (at most 8,192 of them, ~8 MB)."""


def length_prior(content: str) -> float:
    """The length factor in (0, 1] of a memory's text (see the module docstring).

    Words are counted only up to ``LENGTH_REF`` (the factor is 1 from there on), and short
    texts are cached: the same memories come back as candidates recall after recall, and
    counting words was a tenth of a recall's own CPU (a candidate pool of ~150 texts).
    """
    return _cached_prior(content) if len(content) <= _CACHED_CHARS else _prior(content)


def _prior(content: str) -> float:
    # A short text's words are counted in C (findall); a long one's only up to LENGTH_REF.
    found = (
        len(_WORD.findall(content))
        if len(content) <= _CACHED_CHARS
        else sum(1 for _ in islice(_WORD.finditer(content), LENGTH_REF))
    )
    words = max(1, min(found, LENGTH_REF))
    return float((words / LENGTH_REF) ** LENGTH_EXPONENT)


_cached_prior = lru_cache(maxsize=8192)(_prior)


def weigh_length(scores: Mapping[str, float], contents: Mapping[str, str]) -> dict[str, float]:
    """Scores multiplied by each memory's :func:`length_prior` (never raised, so still in [0, 1])."""
    return {mid: s * length_prior(contents.get(mid, "")) for mid, s in scores.items()}


def boost_window(
    scores: Mapping[str, float],
    created: Mapping[str, str],
    window: tuple[str, str] | None,
    boost: float = DATE_BOOST,
) -> dict[str, float]:
    """Scores of memories created in ``[start, end)`` (UTC ISO strings) times ``1 + boost``, capped at 1.0.

    Stored timestamps are UTC ISO-8601, so comparing the strings compares the times.
    """
    if window is None or boost <= 0:
        return dict(scores)
    start, end = window
    return {mid: min(1.0, s * (1.0 + boost)) if start <= created.get(mid, "") < end else s for mid, s in scores.items()}


def asks_when(query: str) -> bool:
    """True for a question about the time of something ("When did ...", "What year ...")."""
    return bool(_ASKS_WHEN.search(query))


def anchors_time(content: str) -> bool:
    """True when the text places something in time (a relative phrase, weekday, month or year)."""
    return bool(_TIME_WORDS.search(content))


def is_question(content: str) -> bool:
    """True when the memory's text ends with a question mark."""
    return content.rstrip().endswith("?")


def adjust_for_query(scores: Mapping[str, float], contents: Mapping[str, str], query: str) -> dict[str, float]:
    """Scores after the question-line penalty and, for "when" questions, the time-anchor boost.

    Capped at 1.0 like :func:`boost_named`.
    """
    when = asks_when(query)
    out: dict[str, float] = {}
    for mid, s in scores.items():
        text = contents.get(mid, "")
        if is_question(text):
            s *= 1.0 - QUESTION_PENALTY
        if when and anchors_time(text):
            s *= 1.0 + WHEN_BOOST
        out[mid] = min(1.0, s)
    return out
