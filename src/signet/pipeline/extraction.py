"""Extraction: text -> validated facts and entity triples (spec 004 "Extraction").

The model's answer is parsed leniently and validated strictly: ``<think>`` blocks are
dropped, the first JSON object is taken even if wrapped in prose or a code fence, and each
malformed item becomes a warning while the valid rest is kept. Input is capped at 12,000
characters with a ``[truncated]`` marker; output at 20 facts and 50 entities.
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


def cap_input(text: str) -> str:
    if len(text) <= MAX_INPUT:
        return text
    return text[: MAX_INPUT - len(TRUNCATED)] + TRUNCATED


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


MAX_CHUNKS = 8


def chunk_transcript(text: str, size: int = MAX_INPUT - 200, max_chunks: int = MAX_CHUNKS) -> list[str]:
    """Split a long transcript on line (turn) boundaries into pieces of at most ``size``.

    A session longer than one prompt is extracted piece by piece instead of losing its
    end to the 12,000-character cap (agenr's chunked extraction). When even ``max_chunks``
    pieces are not enough, the *last* ones are kept: the end of a session holds its
    conclusions. A single over-long line is cut.
    """
    if len(text) <= MAX_INPUT:
        return [text]
    chunks: list[str] = []
    cur: list[str] = []
    used = 0
    for line in text.splitlines():
        while len(line) > size:
            if cur:
                chunks.append("\n".join(cur))
                cur, used = [], 0
            chunks.append(line[:size])
            line = line[size:]
        if used + len(line) + 1 > size and cur:
            chunks.append("\n".join(cur))
            cur, used = [], 0
        cur.append(line)
        used += len(line) + 1
    if cur:
        chunks.append("\n".join(cur))
    return chunks[-max_chunks:]


def merge(parts: list[Extraction], dropped_chunks: int = 0) -> Extraction:
    """One extraction from several chunks: facts deduplicated by text, caps applied again."""
    out = Extraction()
    seen: set[str] = set()
    for i, part in enumerate(parts):
        prefix = f"chunk {i + 1}: " if len(parts) > 1 else ""
        out.warnings.extend(prefix + w for w in part.warnings)
        for f in part.facts:
            key = " ".join(f.content.lower().split())
            if key not in seen and len(out.facts) < MAX_FACTS * MAX_CHUNKS:
                seen.add(key)
                out.facts.append(f)
        out.entities.extend(part.entities[: max(0, MAX_ENTITIES * MAX_CHUNKS - len(out.entities))])
    if dropped_chunks:
        out.warnings.append(f"transcript longer than {MAX_CHUNKS} chunks: the first {dropped_chunks} were skipped")
    return out


def extraction_prompt(text: str) -> str:
    return render("extraction", text=cap_input(text))
