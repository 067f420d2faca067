"""The LLM knowledge builder: text -> entities, their aspects and attributes (spec 001,
knowledge architecture; issue 18).

Extraction (signet.pipeline.extraction) turns a text into facts and entity triples; this call
turns it into the structured knowledge recall reads: each entity with its aliases, the aspects
(thematic domains) it has and, under each aspect, attributes, every one a *claim*: a key, a value
and a kind. A ``state`` ("Alice | home | city = Berlin") is true until a newer value of the same
claim replaces it (signet.knowledge.attributes); an ``event`` happened once and is never replaced.

The prompt lists the current values the agent already holds for the entities the text names
("Known"), so the model reuses their aspect and key when it states a new value: that is what makes
"Alice moved to Paris" the same claim as "Alice lives in Berlin".

Parsing is **strict**, unlike extraction's: the answer must be a JSON object whose every entity,
aspect and attribute is well formed. A malformed or cut-off answer raises :class:`KnowledgeError`
(an :class:`LlmError`), so the job fails *before anything is written* and the queue retries it
(then marks it dead after ``maxAttempts``): a half-read graph would supersede the wrong claims.
Only the size caps trim (the rest is dropped with a warning).
"""

from __future__ import annotations

import json
from typing import Any

from signet.knowledge.claims import AspectFacts, Claim, EntityFacts, Knowledge
from signet.pipeline.extraction import cap_input, parse_json_object, render
from signet.pipeline.llm.base import LlmError
from signet.search.names import candidate_names, canonical
from signet.store.sqlite import Connection

ENTITY_TYPES = ("person", "project", "place", "organization", "tool", "other")
KINDS = ("state", "event")
MAX_ENTITIES = 20
MAX_ASPECTS = 8
MAX_ATTRIBUTES = 12
MAX_ALIASES = 8
MAX_NAME = 200
MAX_KEY = 100
MAX_VALUE = 500
MAX_KNOWN = 40
"""Current values listed in the prompt at most (the entities the text names, newest first)."""
DEFAULT_CONFIDENCE = 0.7


class KnowledgeError(LlmError):
    """The model's knowledge answer is malformed: the job fails and is retried, nothing is written."""


def _text(val: Any, where: str, limit: int) -> str:
    if not isinstance(val, str):
        raise KnowledgeError(f"knowledge answer rejected: {where} must be a string")
    out = " ".join(val.split())
    if not out:
        raise KnowledgeError(f"knowledge answer rejected: {where} is empty")
    if len(out) > limit:
        raise KnowledgeError(f"knowledge answer rejected: {where} is longer than {limit} characters")
    if not canonical(out):
        raise KnowledgeError(f"knowledge answer rejected: {where} has no letters or digits")
    return out


def _list(val: Any, where: str) -> list[Any]:
    if val is None:
        return []
    if not isinstance(val, list):
        raise KnowledgeError(f"knowledge answer rejected: {where} must be a list")
    return val


def _object(val: Any, where: str) -> dict[str, Any]:
    if not isinstance(val, dict):
        raise KnowledgeError(f"knowledge answer rejected: {where} is not an object")
    return val


def _claim(item: Any, where: str) -> Claim:
    obj = _object(item, where)
    key = _text(obj.get("key"), f"{where}.key", MAX_KEY)
    raw = obj.get("value")
    if isinstance(raw, int | float) and not isinstance(raw, bool):
        raw = str(raw)  # "age": 34 is a value, not a malformed answer
    value = _text(raw, f"{where}.value", MAX_VALUE)
    kind = obj.get("kind", "state")
    if kind not in KINDS:
        raise KnowledgeError(f"knowledge answer rejected: {where}.kind must be state or event, not {kind!r}")
    conf = obj.get("confidence", DEFAULT_CONFIDENCE)
    if isinstance(conf, bool) or not isinstance(conf, int | float) or not 0.0 <= float(conf) <= 1.0:
        raise KnowledgeError(f"knowledge answer rejected: {where}.confidence must be a number in 0..1")
    return Claim(key, value, str(kind), float(conf))


def validate(data: dict[str, Any]) -> Knowledge:
    """The knowledge in a parsed answer; :class:`KnowledgeError` at the first malformed item."""
    if "entities" not in data:
        raise KnowledgeError("knowledge answer rejected: no 'entities' key")
    out = Knowledge()
    items = _list(data["entities"], "entities")
    if len(items) > MAX_ENTITIES:
        out.warnings.append(f"more than {MAX_ENTITIES} entities; the rest were dropped")
    for i, item in enumerate(items[:MAX_ENTITIES]):
        where = f"entities[{i}]"
        obj = _object(item, where)
        name = _text(obj.get("name"), f"{where}.name", MAX_NAME)
        etype = obj.get("type", "other")
        if etype not in ENTITY_TYPES:
            raise KnowledgeError(f"knowledge answer rejected: {where}.type {etype!r} is not one of {ENTITY_TYPES}")
        aliases = [_text(a, f"{where}.aliases[{j}]", MAX_NAME) for j, a in enumerate(_list(obj.get("aliases"), where))]
        entity = EntityFacts(name, str(etype), aliases[:MAX_ALIASES])
        aspects = _list(obj.get("aspects"), f"{where}.aspects")
        if len(aspects) > MAX_ASPECTS:
            out.warnings.append(f"{where}: more than {MAX_ASPECTS} aspects; the rest were dropped")
        for j, a in enumerate(aspects[:MAX_ASPECTS]):
            awhere = f"{where}.aspects[{j}]"
            aobj = _object(a, awhere)
            aspect = AspectFacts(_text(aobj.get("name"), f"{awhere}.name", MAX_KEY))
            attrs = _list(aobj.get("attributes"), f"{awhere}.attributes")
            if len(attrs) > MAX_ATTRIBUTES:
                out.warnings.append(f"{awhere}: more than {MAX_ATTRIBUTES} attributes; the rest were dropped")
            aspect.attributes = [_claim(t, f"{awhere}.attributes[{k}]") for k, t in enumerate(attrs[:MAX_ATTRIBUTES])]
            entity.aspects.append(aspect)
        out.entities.append(entity)
    return out


def parse_knowledge(raw: str) -> Knowledge:
    """Validate a model answer strictly (:class:`KnowledgeError` when it is not usable whole)."""
    try:
        data = parse_json_object(raw)
    except ValueError as exc:
        raise KnowledgeError(f"knowledge answer rejected: {exc}") from None
    return validate(data)


def known_claims(conn: Connection, text: str, agent_id: str, limit: int = MAX_KNOWN) -> list[str]:
    """``entity | aspect | key = value`` for the agent's current state attributes of the entities
    ``text`` names (by canonical name or alias), newest first: the "Known" block of the prompt."""
    names = candidate_names(text)
    if not names:
        return []
    rows = conn.execute(
        "SELECT e.name, s.aspect_name, t.attribute_key, t.attribute_value FROM entities e"
        " JOIN entity_attributes t ON t.entity_id = e.id JOIN entity_aspects s ON s.id = t.aspect_id"
        " WHERE e.agent_id = ? AND t.agent_id = ? AND t.status = 'active' AND t.claim_type = 'state'"
        " AND (e.canonical_name IN (SELECT value FROM json_each(?)) OR e.id IN (SELECT a.entity_id"
        " FROM entity_aliases a WHERE a.agent_id = ? AND a.canonical_alias IN (SELECT value FROM json_each(?))))"
        " ORDER BY t.created_at DESC LIMIT ?",
        (agent_id, agent_id, json.dumps(names), agent_id, json.dumps(names), limit),
    ).fetchall()
    return [f"{r[0]} | {r[1]} | {r[2]} = {r[3]}" for r in rows]


def knowledge_prompt(text: str, known: list[str]) -> str:
    return render("knowledge", text=cap_input(text), known="\n".join(known) if known else "(none)")
