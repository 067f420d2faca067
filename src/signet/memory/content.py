"""Content normalization, hashing, prefixes and type inference (spec 004 and 001).

These are pure functions: the same text always gives the same hash, so dedup, embedding
reuse and the pipeline agree on what "the same memory" means.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from dataclasses import dataclass, field

_TRAILING_PUNCT = re.compile(r"[.,!?;:]+$")
_CRITICAL = re.compile(r"^\s*critical\s*:\s*", re.IGNORECASE)
_TAGS = re.compile(r"^\s*\[([^\[\]]{0,500})\]\s*:\s*")


def normalize_for_storage(text: str) -> str:
    """Unicode NFC, then trim and collapse every whitespace run to one space: what the
    ``content`` column holds. NFC first, so the same words typed on a keyboard that composes
    accents (NFC) and one that does not (NFD) are one memory, not two. A NUL character becomes
    U+FFFD (Unicode's mark for a character that cannot be shown): PostgreSQL cannot store NUL in
    a text column, and both stores keep the same content (docs/team.md)."""
    return " ".join(unicodedata.normalize("NFC", text.replace("\x00", "\ufffd")).split())


def derive_normalized(storage: str) -> str:
    """Lowercase and strip trailing punctuation: the canonical form that is hashed."""
    return _TRAILING_PUNCT.sub("", storage.lower())


def content_hash(text: str) -> str:
    """SHA-256 of the canonical form (any text: storage normalization is applied first)."""
    storage = normalize_for_storage(text)
    basis = derive_normalized(storage) or storage.lower()
    return hashlib.sha256(basis.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class ParsedContent:
    content: str
    normalized: str
    hash: str
    pinned: bool = False
    tags: list[str] = field(default_factory=list)


def parse_content(raw: str) -> ParsedContent:
    """Apply the ``critical:`` and ``[tag1,tag2]:`` prefixes (in either order), then normalize."""
    text = raw
    pinned = False
    tags: list[str] = []
    for _ in range(2):
        m = _CRITICAL.match(text)
        if m and not pinned:
            pinned = True
            text = text[m.end() :]
            continue
        t = _TAGS.match(text)
        if t and not tags:
            tags = [s.strip() for s in t.group(1).split(",") if s.strip()]
            text = text[t.end() :]
            continue
        break
    storage = normalize_for_storage(text)
    if not storage:
        # A bare prefix such as "critical:" is content, not an empty memory.
        storage = normalize_for_storage(raw)
        pinned, tags = False, []
    return ParsedContent(
        content=storage,
        normalized=derive_normalized(storage),
        hash=content_hash(storage),
        pinned=pinned,
        tags=tags,
    )


_TYPE_RULES: list[tuple[str, re.Pattern[str]]] = [
    ("preference", re.compile(r"\b(prefers?|preferred|likes?|wants?)\b", re.IGNORECASE)),
    ("decision", re.compile(r"\b(decided|agreed|will use)\b", re.IGNORECASE)),
    ("rule", re.compile(r"\b(never|always|must)\b", re.IGNORECASE)),
    ("learning", re.compile(r"\b(learned|learnt|discovered)\b", re.IGNORECASE)),
    ("issue", re.compile(r"\b(bug|broken|problem)\b", re.IGNORECASE)),
]


def infer_type(content: str) -> str:
    """Keyword-based type for explicit saves; ``fact`` when nothing matches."""
    for name, pattern in _TYPE_RULES:
        if pattern.search(content):
            return name
    return "fact"
