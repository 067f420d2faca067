"""The deterministic entity extractor: what a memory names, without an LLM.

It runs on every remember (on the caller's thread, before the write is queued), so it is
plain regular expressions over the first few thousand characters: no model, no lookups.
It finds

- people and places: runs of capitalised words ("Caroline", "New York City"), leading
  common words dropped ("Yesterday Caroline" is "Caroline"); a single capitalised word that
  opens a sentence is never one ("Thanks", "Fix", "Yep, Mel", "What's": measured, such words
  flooded recall with walks of "What"), and the speaker (``who``) is always a person;
- code identifiers (``snake_case``, ``camelCase``, ``dotted.names``, anything in backticks),
  file paths, URLs and e-mail addresses;
- dates ("8 May 2023", "May 8", "2023-05-08");
- the memory's project, when the caller passes it (the remember path does not: every memory
  of a project would link to it, a hub the ``project`` column already answers; measured, it
  was a third of the extractor's writes).

Each hit is an :class:`Mention`: the surface text, its canonical (matching) form and a kind.
The recall side resolves the same canonical forms from a query (signet.search.traversal),
so a name written "Caroline" or "CAROLINE" meets the same entity.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from signet.search.names import canonical

SCAN_CHARS = 4000
"""Only the start of a long memory is scanned: a pasted document names too much to be useful."""

MAX_MENTIONS = 24
"""At most this many entities per memory (the first found): the write path stays bounded."""

_MONTHS = (
    "january|february|march|april|may|june|july|august|september|october|november|december"
    "|jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec"
)
_URL = re.compile(r"\bhttps?://[^\s<>\"'`)\]]+", re.IGNORECASE)
_EMAIL = re.compile(r"\b[\w.+-]+@[\w-]+(?:\.[\w-]+)+\b")
_PATH = re.compile(r"(?<![\w/:.])(?:~|\.{1,2})?/?(?:[\w.@-]+/)+[\w.@-]+|\b[A-Za-z]:\\(?:[\w.-]+\\)*[\w.-]+")
_BACKTICK = re.compile(r"`([^`\n]{2,80})`")
_SNAKE = re.compile(r"\b[a-z][a-z0-9]*(?:_[a-z0-9]+)+\b")
_CAMEL = re.compile(r"\b[a-z]+(?:[A-Z][a-z0-9]+)+\b|\b[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]+)+\b")
_DOTTED = re.compile(r"\b[a-z_][\w]*(?:\.[a-z_]\w*)+\(?\)?")
_LOWER_WORD = re.compile(r"(?<![\w'\u2019-])[a-z][a-z'\u2019-]*")
_ABBREVIATION = re.compile(r"(?:[a-z]\.)*[a-z]\.?")
"""Dotted single letters ("e.g", "i.e"): an abbreviation, not a ``module.name``."""
_ISO_DATE = re.compile(r"\b\d{4}-\d{2}-\d{2}\b")
_DAY_MONTH = re.compile(rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+({_MONTHS})\.?(?:,?\s+(\d{{4}}))?\b", re.IGNORECASE)
_MONTH_DAY = re.compile(rf"\b({_MONTHS})\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?(?:,?\s+(\d{{4}}))?\b", re.IGNORECASE)
_CAP_RUN = re.compile(
    r"\b[A-Z][\w'\u2019-]*(?:\s+(?:(?:of|de|la|van|von|the|del|du|da)\s+){0,2}[A-Z][\w'\u2019-]*)*",
)
_SENTENCE_START = re.compile(r"(?:^|[.!?:;\n\"\u201c(*#>|\u2022_]\s*|\s[-\u2013\u2014]\s)$")
"""What precedes a word that opens a sentence, a list item or a Markdown emphasis (``* ``,
``**``, ``# ``): assistants' answers are Markdown, and their "**Use** a tripod" opens an item."""
_LABEL = re.compile(r"(?:^|\n)[ \t]*(?:[-*+\u2022]|\d+[.)])?[ \t]*(?:\*\*|__|#+[ \t]*)$")
"""A run right after this is a Markdown heading or a bold label ("## Ease of Use",
"**Additional Tips:**"), a title, not a name."""

COMMON = frozenset(
    [
        "a",
        "about",
        "above",
        "after",
        "again",
        "against",
        "all",
        "also",
        "am",
        "an",
        "and",
        "any",
        "anyway",
        "are",
        "as",
        "at",
        "aw",
        "aww",
        "awesome",
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
        "cool",
        "could",
        "congrats",
        "congratulations",
        "dear",
        "definitely",
        "did",
        "do",
        "does",
        "doing",
        "done",
        "down",
        "during",
        "each",
        "even",
        "ever",
        "every",
        "exactly",
        "few",
        "for",
        "from",
        "further",
        "good",
        "great",
        "had",
        "has",
        "have",
        "having",
        "he",
        "hello",
        "her",
        "here",
        "hers",
        "herself",
        "hey",
        "hi",
        "him",
        "himself",
        "his",
        "hmm",
        "how",
        "however",
        "i",
        "i'd",
        "i'll",
        "i'm",
        "i've",
        "if",
        "in",
        "indeed",
        "into",
        "is",
        "it",
        "it's",
        "its",
        "itself",
        "just",
        "let",
        "let's",
        "lol",
        "love",
        "maybe",
        "me",
        "more",
        "most",
        "my",
        "myself",
        "nah",
        "nice",
        "no",
        "nor",
        "not",
        "now",
        "of",
        "off",
        "oh",
        "ok",
        "okay",
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
        "perhaps",
        "please",
        "really",
        "right",
        "same",
        "she",
        "should",
        "so",
        "some",
        "sorry",
        "such",
        "sure",
        "than",
        "thank",
        "thanks",
        "that",
        "that's",
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
        "today",
        "tomorrow",
        "too",
        "totally",
        "true",
        "under",
        "until",
        "up",
        "very",
        "was",
        "we",
        "well",
        "were",
        "wow",
        "what",
        "whatever",
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
        "wow",
        "yeah",
        "yes",
        "yesterday",
        "yet",
        "you",
        "your",
        "yours",
        "yourself",
        "yourselves",
        "absolutely",
        "agreed",
        "anyway",
        "anything",
        "everything",
        "nothing",
        "something",
        "someone",
        "everyone",
        "anyone",
        "sounds",
        "thats",
        "wanted",
        "went",
        "got",
        "get",
        "also",
        "guess",
        "hope",
        "glad",
        "happy",
        "sad",
        "haha",
        "hahaha",
        "omg",
        "btw",
        "ah",
        "ooh",
        "uh",
        "um",
        "wait",
        "well",
        "alright",
        "honestly",
        "actually",
        "basically",
        "sometimes",
        "always",
        "never",
        "often",
        "usually",
        "recently",
        "lately",
        "last",
        "next",
        "first",
        "second",
        "third",
        "finally",
        "user",
        "assistant",
        "here's",
        "there's",
        "what's",
        "how's",
        "it'll",
        "that'll",
        "we're",
        "they're",
        "you're",
        "we've",
        "they've",
        "you've",
        "isn't",
        "aren't",
        "wasn't",
        "weren't",
        "don't",
        "doesn't",
        "didn't",
        "can't",
        "couldn't",
        "won't",
        "wouldn't",
        "shouldn't",
        "later",
        "earlier",
        "afterwards",
        "meanwhile",
        "soon",
        "tonight",
        "since",
        "after",
        "before",
        "during",
        "once",
        "otherwise",
        "instead",
        "besides",
        "luckily",
        "sadly",
        "hopefully",
        "unfortunately",
        "fortunately",
        "apparently",
        "obviously",
        "clearly",
        "anyways",
        "plus",
        "also",
    ]
)
"""Words that open sentences in ordinary writing; capitalised there, they name nothing."""

_NOT_NAMES = frozenset(
    [
        "monday",
        "tuesday",
        "wednesday",
        "thursday",
        "friday",
        "saturday",
        "sunday",
        "january",
        "february",
        "march",
        "april",
        "may",
        "june",
        "july",
        "august",
        "september",
        "october",
        "november",
        "december",
        "i",
    ]
)
"""Capitalised everywhere in English, yet no entity: weekdays and months are dates."""


@dataclass(frozen=True)
class Mention:
    """One entity a memory names: the text as written, its canonical form, and its kind
    (person, place, thing, project, code, path, url, email, date)."""

    text: str
    canonical: str
    kind: str


def _date_key(day: str, month: str, year: str | None) -> str:
    m = month.lower()[:3]
    return f"{int(day)} {m} {year}" if year else f"{int(day)} {m}"


def _names(text: str) -> list[tuple[str, str]]:
    """Capitalised runs as (surface, kind): a run opening a sentence is kept only when it is
    more than one word or not a common word; a name of two or more words is a person or place.
    A heading or bold label is no name, nor is one capitalised word the text also writes in
    lower case ("Tips" beside "tips": a common word that happened to be capitalised)."""
    out: list[tuple[str, str]] = []
    lower: set[str] | None = None
    for m in _CAP_RUN.finditer(text):
        if _LABEL.search(text[max(0, m.start() - 16) : m.start()]) is not None:
            continue
        words = m.group(0).split()
        start = _SENTENCE_START.search(text[max(0, m.start() - 4) : m.start()]) is not None or m.start() == 0
        # Drop leading sentence-openers ("Yesterday Caroline" -> "Caroline").
        while words and (words[0].lower().strip("'\u2019") in COMMON or words[0].lower() in _NOT_NAMES):
            words = words[1:]
            start = False
        while words and words[-1].lower() in {"of", "de", "la", "van", "von", "the", "del", "du", "da"}:
            words = words[:-1]
        if not words:
            continue
        name = " ".join(words).strip("'\u2019-")
        if len(name) < 2 or (name.isupper() and len(name) > 6):
            continue  # shouting, not a name
        low = name.lower()
        if low in COMMON or low in _NOT_NAMES:
            continue
        if start and len(words) == 1:
            # "Fix the bug", "Yep, Mel", "Bye!", "What's up": one capitalised word opening a
            # sentence names nothing often enough that it never creates an entity; a name said
            # there is still linked once the entity is known (signet.pipeline.graph.inline_link).
            continue
        if len(words) == 1:
            if lower is None:
                lower = set(_LOWER_WORD.findall(text))
            if low in lower:
                continue
        out.append((name.removesuffix("'s").removesuffix("\u2019s"), "name"))
    return out


_DIGIT = re.compile(r"\d")
NEEDS: dict[re.Pattern[str], Callable[[str], bool]] = {
    _URL: lambda t: "://" in t,
    _EMAIL: lambda t: "@" in t,
    _PATH: lambda t: "/" in t or ":\\" in t,
    _BACKTICK: lambda t: "`" in t,
    _SNAKE: lambda t: "_" in t,
    _ISO_DATE: lambda t: _DIGIT.search(t) is not None,
    _DAY_MONTH: lambda t: _DIGIT.search(t) is not None,
    _MONTH_DAY: lambda t: _DIGIT.search(t) is not None,
}
"""What a text must contain for each pattern to match at all (a character every match has).
Checking it first skips the scan: a remember runs a dozen regular expressions over its turn on
the request thread, and the URL, path and date patterns alone were over half of the
extractor's 0.5 ms on real turns, most of which have no ``/``, ``@`` or digit
(tests/core/test_extract_speed.py checks each claim against the pattern)."""


def _scan(pattern: re.Pattern[str], text: str) -> Iterator[re.Match[str]]:
    need = NEEDS.get(pattern)
    return pattern.finditer(text) if need is None or need(text) else iter(())


def extract(content: str, who: str | None = None, project: str | None = None) -> list[Mention]:
    """The entities ``content`` names (its first :data:`SCAN_CHARS` characters), speaker and
    project first, each canonical form once, at most :data:`MAX_MENTIONS`."""
    text = content[:SCAN_CHARS]
    found: list[Mention] = []
    seen: set[str] = set()

    def add(surface: str, kind: str, key: str | None = None) -> None:
        canon = key if key is not None else canonical(surface)
        if len(canon) < 2 or canon in seen or len(found) >= MAX_MENTIONS:
            return
        seen.add(canon)
        found.append(Mention(" ".join(surface.split()), canon, kind))

    if who and who.strip():
        add(who.strip(), "person")
    if project and project.strip():
        add(project.strip(), "project")
    taken: list[tuple[int, int]] = []

    def free(m: re.Match[str]) -> bool:
        """Not inside a span an earlier, more specific pattern took (a URL's path, an e-mail's name)."""
        if any(a <= m.start() < b for a, b in taken):
            return False
        taken.append((m.start(), m.end()))
        return True

    for m in _scan(_URL, text):
        if free(m):
            add(m.group(0).rstrip(".,;:!?"), "url", m.group(0).rstrip(".,;:!?").lower())
    for m in _scan(_EMAIL, text):
        if free(m):
            add(m.group(0), "email", m.group(0).lower())
    for m in _scan(_PATH, text):
        if m.group(0).count("/") + m.group(0).count("\\") >= 2 and free(m):
            add(m.group(0), "path")
    for m in _scan(_BACKTICK, text):
        if free(m):
            add(m.group(1), "code")
    for pattern in (_SNAKE, _CAMEL, _DOTTED):
        for m in _scan(pattern, text):
            if _ABBREVIATION.fullmatch(m.group(0)) is None and free(m):
                add(m.group(0).rstrip("()"), "code")
    for m in _scan(_ISO_DATE, text):
        add(m.group(0), "date", m.group(0))
    for m in _scan(_DAY_MONTH, text):
        add(m.group(0), "date", _date_key(m.group(1), m.group(2), m.group(3)))
    for m in _scan(_MONTH_DAY, text):
        add(m.group(0), "date", _date_key(m.group(2), m.group(1), m.group(3)))
    for surface, _kind in _names(text):
        add(surface, "person" if who and canonical(surface) == canonical(who) else "name")
    return found
