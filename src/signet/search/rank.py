"""Query-side adjustments to fused recall scores (entity names), kept pure for unit tests.

Who said it. A question about a person ("what did Caroline research?") is mostly about what
that person said or did, so memories whose ``who`` is a name the query mentions get their
fused score multiplied by ``1 + WHO_BOOST``. It is a nudge, not a filter: the other party's
line ("how is your research going, Caroline?") stays in the ranking. Measured on LoCoMo in
docs/benchmarks.md.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

WHO_BOOST = 0.2

_WORD = re.compile(r"\w+", re.UNICODE)


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
