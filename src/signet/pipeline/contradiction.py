"""Contradiction detection for update/delete proposals (spec 004 "Contradiction Detection").

Two texts about the same subject (at least two shared tokens) contradict when exactly one
of them negates, or when they hold the two sides of a registered antonym pair.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

NEGATIONS = frozenset(
    {
        "not",
        "no",
        "never",
        "cannot",
        "cant",
        "dont",
        "doesnt",
        "didnt",
        "wont",
        "isnt",
        "arent",
        "wasnt",
        "werent",
        "shouldnt",
        "wouldnt",
        "couldnt",
        "hasnt",
        "havent",
        "nor",
        "none",
        "nobody",
        "nothing",
    }
)
ANTONYMS = (
    ("enabled", "disabled"),
    ("allow", "deny"),
    ("accept", "reject"),
    ("always", "never"),
    ("on", "off"),
    ("true", "false"),
)
_PUNCT = re.compile(r"[^\w\s]")


def tokens(text: str) -> set[str]:
    """Lowercase, punctuation stripped (so ``don't`` is ``dont``), tokens of 2+ chars."""
    return {t for t in _PUNCT.sub("", text.lower()).split() if len(t) >= 2}


@dataclass(frozen=True)
class Contradiction:
    risk: bool
    overlap: int
    reason: str | None


def detect(new: str, old: str) -> Contradiction:
    a, b = tokens(new), tokens(old)
    overlap = len((a - NEGATIONS) & (b - NEGATIONS))
    if overlap < 2:
        return Contradiction(False, overlap, None)
    neg_a, neg_b = bool(a & NEGATIONS), bool(b & NEGATIONS)
    if neg_a != neg_b:
        return Contradiction(True, overlap, "negation asymmetry")
    for x, y in ANTONYMS:
        if (x in a and y in b and y not in a) or (y in a and x in b and x not in a):
            return Contradiction(True, overlap, f"antonyms {x}/{y}")
    return Contradiction(False, overlap, None)
