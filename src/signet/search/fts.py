"""FTS5 keyword search that never raises on user text.

User text is never passed to ``MATCH`` as FTS syntax: it is split into word tokens, common
words are dropped (an OR over common words scans most of the index: ~100 ms at 100k rows
instead of ~0.3 ms), and each remaining token is quoted, so quotes, ``AND``/``NEAR``,
column filters, ``*`` and unicode are all plain words.
"""

from __future__ import annotations

import re
from collections.abc import Collection

_WORD = re.compile(r"\w+", re.UNICODE)

# Function words that carry no topic; kept short on purpose so names and content words stay.
STOPWORDS = frozenset(
    [
        "a",
        "about",
        "above",
        "after",
        "again",
        "against",
        "all",
        "am",
        "an",
        "and",
        "any",
        "are",
        "as",
        "at",
        "be",
        "because",
        "been",
        "before",
        "being",
        "below",
        "between",
        "both",
        "but",
        "by",
        "can",
        "could",
        "did",
        "do",
        "does",
        "doing",
        "down",
        "during",
        "each",
        "few",
        "for",
        "from",
        "further",
        "had",
        "has",
        "have",
        "having",
        "he",
        "her",
        "here",
        "hers",
        "herself",
        "him",
        "himself",
        "his",
        "how",
        "i",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "itself",
        "just",
        "me",
        "more",
        "most",
        "my",
        "myself",
        "no",
        "nor",
        "not",
        "now",
        "of",
        "off",
        "on",
        "once",
        "only",
        "or",
        "other",
        "our",
        "ours",
        "ourselves",
        "out",
        "over",
        "own",
        "same",
        "she",
        "should",
        "so",
        "some",
        "such",
        "than",
        "that",
        "the",
        "their",
        "theirs",
        "them",
        "themselves",
        "then",
        "there",
        "these",
        "they",
        "this",
        "those",
        "through",
        "to",
        "too",
        "under",
        "until",
        "up",
        "very",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "while",
        "who",
        "whom",
        "why",
        "will",
        "with",
        "would",
        "you",
        "your",
        "yours",
        "yourself",
        "yourselves",
        "s",
        "t",
        "d",
        "ll",
        "m",
        "re",
        "ve",
        "y",
        "did",
        "does",
        "doing",
        "get",
        "got",
        "gets",
        "let",
        "lets",
        "also",
        "ever",
        "much",
        "many",
        "really",
        "like",
    ]
)

MAX_TERMS = 16


def query_terms(text: str) -> list[str]:
    """Distinct lowercase content words of ``text``, in order of appearance."""
    seen: dict[str, None] = {}
    for tok in _WORD.findall(text.lower()):
        tok = tok.strip("_")
        if not tok or tok in STOPWORDS or tok in seen:
            continue
        if len(tok) == 1 and not tok.isdigit():
            continue
        seen[tok] = None
    terms = list(seen)
    if not terms:
        # A query made only of stopwords still deserves an answer ("who am i").
        terms = list(dict.fromkeys(t for t in _WORD.findall(text.lower()) if t.strip("_")))
    # Prefer longer tokens when pruning: they are rarer, and rare terms are cheap to match.
    if len(terms) > MAX_TERMS:
        keep = set(sorted(terms, key=len, reverse=True)[:MAX_TERMS])
        terms = [t for t in terms if t in keep]
    return terms


def match_expression(text: str) -> str | None:
    """The FTS5 MATCH expression for free text, or None when nothing searchable remains."""
    terms = query_terms(text)
    if not terms:
        return None
    return " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)


# Suffixes folded away before a prefix match, longest first: "climbing" and "climbs" reach "climb"*.
_SUFFIXES = ("ing", "ed", "es", "s")


def stem(term: str) -> tuple[str, bool]:
    """One query term as (text, prefix): a crude stem matched as a prefix, so a plural, tense
    or -ing form still matches ("climbing" and "climbs" reach "climb"*).

    Measured on LoCoMo (docs/benchmarks.md): recall@10 0.582 -> 0.602 over exact terms.
    Short terms and numbers stay exact (a prefix of "3" or "art" matches too much).
    """
    for suf in _SUFFIXES:
        if len(term) - len(suf) >= 4 and term.endswith(suf):
            term = term[: -len(suf)]
            break
    return term, len(term) >= 4 and not term.isdigit()


def quoted(text: str, prefix: bool) -> str:
    """A term as an FTS5 string (a phrase: never read as syntax), ``*`` for a prefix."""
    return '"' + text.replace('"', '""') + '"' + ("*" if prefix else "")


def prefix_term(term: str) -> str:
    """One quoted term as a crude stem prefix (:func:`stem`)."""
    return quoted(*stem(term))


def recall_terms(text: str, drop: Collection[str] = ()) -> list[tuple[str, bool]]:
    """The terms recall searches for, as (text, prefix) stems.

    ``drop`` removes terms (recall passes the names of people who said a large share of the
    memories in scope, signet.search.speakers: as keywords they match nearly every line).
    When dropping would leave nothing, every term is kept.
    """
    terms = query_terms(text)
    kept = [t for t in terms if t not in drop]
    return [stem(t) for t in kept or terms]


def match_of(terms: list[tuple[str, bool]]) -> str | None:
    """The FTS5 MATCH expression of (text, prefix) terms, OR-ed; None without terms."""
    return " OR ".join(quoted(t, p) for t, p in terms) or None


def recall_match_expression(text: str, drop: Collection[str] = ()) -> str | None:
    """The MATCH expression recall uses: :func:`recall_terms` as stem prefixes, OR-ed."""
    return match_of(recall_terms(text, drop))
