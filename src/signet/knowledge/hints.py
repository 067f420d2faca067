"""Prospective hints: the questions a memory would answer, written with it (spec 001, hints worker).

A stored memory says a specific thing in its own words ("Caroline: I went to a LGBTQ support
group yesterday"); a later query asks in the asker's words, often for the class of the thing
("When did Caroline go to the support group?", "Where did Joanna travel?"). A hint is such a
question, indexed for keyword search (``memory_hints_fts``, migration 38) so recall can match the
memory by the cue it anticipates (signet.search.hints).

This module is the **template** generator (no LLM, deterministic) and the hint rows' writes. The
template reads the memory's text and what the deterministic extractor found in it
(signet.knowledge.extract: the speaker, names, dates, code identifiers) and fills a handful of
question patterns:

- a time (a date, a month, "yesterday", "last week") -> "When did <who> <what they did>?";
- a name after "in/at/to/from/near" -> "Where did <who> go, travel, visit or live? <name>";
- another name -> "Who is <name>?";
- a liking ("love", "enjoy", "favorite", "into") -> "What does <who> like, love or enjoy?";
- a code identifier or path -> "What is <x> and where is it used?".

At most ``max`` (5) per memory, each under :data:`MAX_HINT` characters. It runs on the caller's
thread before the write is queued (signet.pipeline.runtime), like the extractor, so the writer
thread only inserts the rows (docs/benchmarks.md measures both). The LLM's hints (a pipeline job,
signet.pipeline.hints) are written by :func:`replace_llm`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from signet.knowledge.extract import Mention
from signet.store.records import now_iso
from signet.store.sqlite import Connection

MAX_HINT = 200
"""Characters per hint at most (a question, not a copy of the memory)."""
SOURCES = ("template", "llm")

_SENTENCE = re.compile(r"[^.!?\n]+")
_WORDS = 12
_TIME = re.compile(
    r"\b(?:yesterday|today|tonight|tomorrow|last (?:week|month|year|night|weekend)|this (?:week|month|year|weekend)"
    r"|next (?:week|month|year)|\d+ (?:days?|weeks?|months?|years?) ago|monday|tuesday|wednesday|thursday|friday"
    r"|saturday|sunday|january|february|march|april|june|july|august|september|october|november|december"
    r"|(?:19|20)\d\d)\b",
    re.IGNORECASE,
)
_PLACE_BEFORE = re.compile(r"\b(?:in|at|to|from|near|visited|visit|visiting)\s+(?:the\s+)?$", re.IGNORECASE)
_LIKING = re.compile(
    r"\b(?:love[sd]?|loving|enjoy(?:s|ed|ing)?|favou?rites?|prefer(?:s|red)?|passionate|fan of|into|hate[sd]?)\b",
    re.IGNORECASE,
)
_IRREGULAR = {
    "went": "go",
    "got": "get",
    "had": "have",
    "did": "do",
    "made": "make",
    "saw": "see",
    "took": "take",
    "came": "come",
    "bought": "buy",
    "found": "find",
    "met": "meet",
    "ran": "run",
    "began": "begin",
    "gave": "give",
    "wrote": "write",
    "read": "read",
    "felt": "feel",
    "left": "leave",
    "told": "tell",
    "said": "say",
    "won": "win",
    "lost": "lose",
    "taught": "teach",
    "thought": "think",
    "brought": "bring",
    "built": "build",
    "sold": "sell",
    "spent": "spend",
    "drew": "draw",
    "flew": "fly",
}
_E_STEM = ("v", "c", "z", "u", "g", "s")
"""A regular past tense whose stem ends so takes its ``e`` back: moved -> move, danced -> dance."""
_SUBJECTS = ("i", "we")


def _base(verb: str) -> str | None:
    """The base form of a past-tense verb ("went" -> "go", "painted" -> "paint"); None otherwise."""
    low = verb.lower()
    if low in _IRREGULAR:
        return _IRREGULAR[low]
    if len(low) > 4 and low.endswith("ied"):
        return low[:-3] + "y"
    if len(low) > 4 and low.endswith("ed"):
        stem = low[:-2]
        if len(stem) > 2 and stem[-1] == stem[-2] and stem[-1] not in "ls":
            return stem[:-1]  # stopped -> stop
        return stem + "e" if stem.endswith(_E_STEM) else stem
    return None


_INTERJECTION = re.compile(
    r"^(?:(?:yeah|yes|yep|oh|wow|well|so|haha|hey|hi|ah|aw+|omg|totally|thanks)\b[\s,!]*)+", re.I
)
_CLAUSE = re.compile(r",|;| - | (?:and|but|because|so|which) (?:it|that|i|we|this|they)\b| but | because ", re.I)
_MY = re.compile(r"\b(?:my|our)\b", re.I)


def _statement(text: str, who: str | None) -> tuple[str, str] | None:
    """The memory's first first-person clause as (subject, rest): "Caroline: Yeah, I went to a
    group yesterday, it was great" -> ("Caroline", "went to a group yesterday"). None when no
    sentence among the first three opens with "I", "we" or the speaker's name."""
    if not who:
        return None
    body = text.strip()
    if body.lower().startswith(who.lower() + ":"):
        body = body[len(who) + 1 :].strip()
    for found in list(_SENTENCE.finditer(body))[:3]:
        sentence = _INTERJECTION.sub("", found.group(0).strip())
        clause = _CLAUSE.split(sentence, maxsplit=1)[0]
        words = clause.split()[:_WORDS]
        if len(words) < 2 or words[0].lower() not in (*_SUBJECTS, who.lower()):
            continue
        return who, _MY.sub(f"{who}'s", " ".join(words[1:]))
    return None


def _when(subject: str, rest: str) -> str:
    words = rest.split()
    base = _base(words[0]) if words else None
    if base is not None:
        return f"When did {subject} {' '.join([base, *words[1:]])}?"
    return f"When was it that {subject} {rest}?"


def templates(text: str, who: str | None, mentions: Sequence[Mention], *, limit: int = 5) -> list[str]:
    """Up to ``limit`` template hints for a memory's ``text`` (said by ``who``), from the
    extractor's ``mentions``; deterministic, no I/O."""
    out: list[str] = []

    def add(hint: str) -> None:
        hint = " ".join(hint.split())[:MAX_HINT]
        if hint and hint not in out and len(out) < limit:
            out.append(hint)

    scan = text[:2000]
    said = _statement(scan, who)
    subject = said[0] if said else (who or None)
    speaker = who.lower() if who else None
    if said is not None and (_TIME.search(scan) or any(m.kind == "date" for m in mentions)):
        add(_when(*said))
    for m in mentions:
        if m.kind != "name" or m.text.lower() == speaker:
            continue
        at = scan.find(m.text)
        if at >= 0 and _PLACE_BEFORE.search(scan[max(0, at - 24) : at]) and subject:
            add(f"Where did {subject} go, travel, visit or live? {m.text}")
        else:
            add(f"Who is {m.text}?")
    if subject and _LIKING.search(scan):
        add(f"What does {subject} like, love or enjoy?")
    for m in mentions:
        if m.kind in ("code", "path"):
            add(f"What is {m.text} and where is it used?")
    return out


def write(conn: Connection, memory_seq: int, hints: Sequence[str], source: str) -> int:
    """Insert ``hints`` for the memory ``memory_seq`` (a hint it already has is kept once);
    returns how many statements ran."""
    if source not in SOURCES:
        raise ValueError(f"unknown hint source {source!r}")
    now = now_iso()
    for hint in hints:
        conn.execute(
            "INSERT INTO memory_hints(memory_seq, hint, source, created_at) VALUES (?, ?, ?, ?)"
            " ON CONFLICT(memory_seq, hint) DO NOTHING",
            (memory_seq, hint, source, now),
        )
    return len(hints)


def replace_llm(conn: Connection, memory_id: str, hints: Sequence[str]) -> int:
    """The LLM's hints for ``memory_id`` replace the ones it wrote before (a retried job writes
    its answer once); the template's stay. Returns the hints written (0: the memory is gone)."""
    row = conn.execute("SELECT seq FROM memories WHERE id = ? AND is_deleted = 0", (memory_id,)).fetchone()
    if row is None:
        return 0
    seq = int(row[0])
    conn.execute("DELETE FROM memory_hints WHERE memory_seq = ? AND source = 'llm'", (seq,))
    return write(conn, seq, hints, "llm")


def of_memory(conn: Connection, memory_id: str) -> list[tuple[str, str, str]]:
    """(hint, source, created_at) of a memory, template hints first, in the order written."""
    rows = conn.execute(
        "SELECT h.hint, h.source, h.created_at FROM memory_hints h JOIN memories m ON m.seq = h.memory_seq"
        " WHERE m.id = ? ORDER BY CASE h.source WHEN 'template' THEN 0 ELSE 1 END, h.rowid",
        (memory_id,),
    ).fetchall()
    return [(str(r[0]), str(r[1]), str(r[2])) for r in rows]
