"""Extraction: text -> validated facts and entity triples (spec 004 "Extraction").

The model's answer is parsed leniently and validated strictly: ``<think>`` blocks are
dropped, the first JSON object is taken even if wrapped in prose or a code fence, and each
malformed item becomes a warning while the valid rest is kept. Input is capped at 12,000
characters with a ``[truncated]`` marker (a whole transcript at ``transcripts.contextChars``);
output at 20 facts and 50 entities per call.

A transcript longer than one call is split by :func:`chunk_transcript` into overlapping chunks
covering all of it, and :func:`merge` is the dedupe pass over the chunks' facts.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from typing import Any

MAX_INPUT = 12_000
MAX_FACTS = 20
MAX_ENTITIES = 50
FACT_MIN, FACT_MAX = 10, 2000
FACT_TYPES = ("fact", "preference", "decision", "procedural", "semantic")
TRUNCATED = "\n[truncated]"

_THINK = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)
_OPEN_THINK = re.compile(r"<think>.*\Z", re.DOTALL | re.IGNORECASE)


@cache
def prompt(name: str) -> str:
    """A prompt template shipped in ``signet/pipeline/prompts/<name>.txt``."""
    return resources.files("signet.pipeline").joinpath("prompts", f"{name}.txt").read_text(encoding="utf-8")


def render(name: str, **values: str) -> str:
    """Fill ``{key}`` placeholders (plain replace: the templates contain JSON braces)."""
    text = prompt(name)
    for key, val in values.items():
        text = text.replace("{" + key + "}", val)
    return text


@dataclass(frozen=True)
class Fact:
    content: str
    type: str
    confidence: float


@dataclass(frozen=True)
class EntityTriple:
    source: str
    relationship: str
    target: str
    confidence: float


@dataclass
class Extraction:
    facts: list[Fact] = field(default_factory=list)
    entities: list[EntityTriple] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def cap_input(text: str, limit: int = MAX_INPUT) -> str:
    if len(text) <= limit:
        return text
    return text[: limit - len(TRUNCATED)] + TRUNCATED


def strip_think(raw: str) -> str:
    """Remove chain-of-thought blocks (qwen3 and friends), including an unclosed last one."""
    return _OPEN_THINK.sub("", _THINK.sub("", raw)).strip()


def parse_json_object(raw: str) -> dict[str, Any]:
    """The first JSON object in a model answer (prose and ```json fences tolerated)."""
    text = strip_think(raw)
    try:
        val = json.loads(text)
    except ValueError:
        start = text.find("{")
        if start < 0:
            raise ValueError("the answer holds no JSON object") from None
        try:
            val, _ = json.JSONDecoder().raw_decode(text[start:])
        except ValueError as exc:
            raise ValueError(f"the answer is not valid JSON: {exc}") from None
    if not isinstance(val, dict):
        raise ValueError(f"expected a JSON object, got {type(val).__name__}")
    return val


def _confidence(val: Any) -> float | None:
    if isinstance(val, bool) or not isinstance(val, int | float):
        return None
    f = float(val)
    return f if 0.0 <= f <= 1.0 else None


def validate(data: dict[str, Any]) -> Extraction:
    out = Extraction()
    facts = data.get("facts", [])
    entities = data.get("entities", [])
    if not isinstance(facts, list):
        out.warnings.append("'facts' is not a list; ignored")
        facts = []
    if not isinstance(entities, list):
        out.warnings.append("'entities' is not a list; ignored")
        entities = []
    for i, item in enumerate(facts):
        if len(out.facts) >= MAX_FACTS:
            out.warnings.append(f"more than {MAX_FACTS} facts; the rest were dropped")
            break
        if not isinstance(item, dict):
            out.warnings.append(f"facts[{i}] is not an object")
            continue
        content = item.get("content")
        if not isinstance(content, str):
            out.warnings.append(f"facts[{i}] has no string 'content'")
            continue
        content = " ".join(content.split())
        if not FACT_MIN <= len(content) <= FACT_MAX:
            out.warnings.append(f"facts[{i}] content length {len(content)} is outside {FACT_MIN}-{FACT_MAX}")
            continue
        ftype = item.get("type")
        if ftype not in FACT_TYPES:
            out.warnings.append(f"facts[{i}] has invalid type {ftype!r}")
            continue
        conf = _confidence(item.get("confidence"))
        if conf is None:
            out.warnings.append(f"facts[{i}] confidence must be a number in 0..1")
            continue
        out.facts.append(Fact(content, str(ftype), conf))
    for i, item in enumerate(entities):
        if len(out.entities) >= MAX_ENTITIES:
            out.warnings.append(f"more than {MAX_ENTITIES} entities; the rest were dropped")
            break
        if not isinstance(item, dict):
            out.warnings.append(f"entities[{i}] is not an object")
            continue
        parts = [item.get(k) for k in ("source", "relationship", "target")]
        if not all(isinstance(p, str) and p.strip() and len(p) <= 200 for p in parts):
            out.warnings.append(f"entities[{i}] needs non-empty source, relationship and target (<= 200 chars)")
            continue
        conf = _confidence(item.get("confidence", 1.0))
        if conf is None:
            out.warnings.append(f"entities[{i}] confidence must be a number in 0..1")
            continue
        src, rel, tgt = (" ".join(str(p).split()) for p in parts)
        out.entities.append(EntityTriple(src, rel, tgt, conf))
    return out


def parse_extraction(raw: str) -> Extraction:
    """Validate a model answer; an unparseable answer is one warning and nothing extracted."""
    try:
        data = parse_json_object(raw)
    except ValueError as exc:
        return Extraction(warnings=[str(exc)])
    return validate(data)


MAX_MERGED_FACTS = 400
"""Facts kept from one transcript at most, whatever its number of chunks."""
MAX_MERGED_ENTITIES = 1000
NEAR_DUPLICATE = 0.8
"""Word-set overlap (Jaccard) at which two facts from different chunks say the same thing."""

_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_NEGATIONS = frozenset({"not", "no", "never", "without", "cannot", "nor"})
"""Words that negate a statement (contractions are spelt out first: "doesn't" is "does not")."""


def chunk_transcript(text: str, size: int = MAX_INPUT - 200, overlap: int = 0) -> list[str]:
    """Split a long transcript on line (turn) boundaries into pieces of at most ``size``,
    covering all of it; each piece after the first starts with the last whole lines of the
    one before, up to ``overlap`` characters, so a fact stated across a boundary is seen whole
    by one of them (agenr's chunked extraction). A single over-long line is cut.

    Every chunk is extracted: the facts of a long session's beginning matter as much as its
    end's (an earlier version kept only the last 8 chunks).
    """
    if len(text) <= size:
        return [text]
    pieces: list[str] = []
    for line in text.splitlines():
        while len(line) > size:
            pieces.append(line[:size])
            line = line[size:]
        pieces.append(line)
    chunks: list[str] = []
    cur: list[str] = []
    used = fresh = 0  # fresh: lines of ``cur`` not carried over from the previous chunk
    for line in pieces:
        cost = len(line) + 1
        if used + cost > size and fresh:
            chunks.append("\n".join(cur))
            keep: list[str] = []
            kept = 0
            for prev in reversed(cur):
                if kept + len(prev) + 1 > overlap:
                    break
                keep.insert(0, prev)
                kept += len(prev) + 1
            cur, used, fresh = keep, kept, 0
        while cur and not fresh and used + cost > size:  # the carried-over lines leave no room
            used -= len(cur.pop(0)) + 1
        cur.append(line)
        used += cost
        fresh += 1
    if fresh:
        chunks.append("\n".join(cur))
    return chunks


def _words(text: str) -> frozenset[str]:
    spelt = text.lower().replace("n\u2019t", " not").replace("n't", " not")
    return frozenset(_WORD.findall(spelt))


def same_fact(a: frozenset[str], b: frozenset[str]) -> bool:
    """Whether two facts' word sets say the same thing: at least :data:`NEAR_DUPLICATE` of
    their words shared (Jaccard), with the same numbers and both or neither negated. "Port
    8080" and "port 9090", or "uses X" and "does not use X", are different facts however many
    other words they share."""
    if not a or not b:
        return a == b
    if {w for w in a if w.isdigit()} != {w for w in b if w.isdigit()}:
        return False
    if bool(a & _NEGATIONS) != bool(b & _NEGATIONS):
        return False
    return len(a & b) / len(a | b) >= NEAR_DUPLICATE


def merge(parts: list[Extraction]) -> Extraction:
    """One extraction from several chunks: the dedupe pass across chunks.

    Overlapping chunks see the same turns, and a long session restates things: facts that are
    the same text, or nearly the same words (:func:`same_fact`), are kept once, the more
    confident (then the longer) version winning; entity triples are kept once per
    (source, relationship, target), at their highest confidence.
    """
    out = Extraction()
    kept: list[tuple[frozenset[str], Fact]] = []
    triples: dict[tuple[str, str, str], EntityTriple] = {}
    for i, part in enumerate(parts):
        prefix = f"chunk {i + 1}: " if len(parts) > 1 else ""
        out.warnings.extend(prefix + w for w in part.warnings)
        for f in part.facts:
            words = _words(f.content)
            dup = next((j for j, (w, _) in enumerate(kept) if same_fact(w, words)), None)
            if dup is None:
                if len(kept) < MAX_MERGED_FACTS:
                    kept.append((words, f))
                continue
            old = kept[dup][1]
            if (f.confidence, len(f.content)) > (old.confidence, len(old.content)):
                kept[dup] = (words, f)
        for e in part.entities:
            key = (e.source.lower(), e.relationship.lower(), e.target.lower())
            if key in triples:
                if e.confidence > triples[key].confidence:
                    triples[key] = e
            elif len(triples) < MAX_MERGED_ENTITIES:
                triples[key] = e
    out.facts = [f for _, f in kept]
    out.entities = list(triples.values())
    return out


def extraction_prompt(text: str, limit: int = MAX_INPUT) -> str:
    """The extraction prompt for ``text``, capped at ``limit`` characters (``contextChars``
    for a whole transcript, :data:`MAX_INPUT` otherwise)."""
    return render("extraction", text=cap_input(text, limit))
