"""An agent's facts across its entities, for the API and MCP: attributes filtered and paged, and
claims (one value per claim key over time: the current one and what it replaced).

``get_entity`` (signet.knowledge.read) shows one entity's facts; these answer the questions asked
across entities ("what do I know about where people live?", "what did this claim used to say?").
Every read is for one agent (:func:`signet.knowledge.read.agent_for`), and a fact drawn from a
memory is shown only when the caller may read that memory (the filter recall applies: scope,
project, not forgotten): an attribute's value is text taken from the memory, and a token scoped to
one project must not read another project's memories through their facts. A fact with no source
memory (written through the API) is shown to every reader of the agent.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from signet.knowledge.read import Attribute, attribute_fields, entity_row, visible_facts
from signet.store.scope import ReadScope
from signet.store.sqlite import Connection

Status = Literal["active", "superseded", "all"]


class EntityAttribute(Attribute):
    entity_id: str
    entity_name: str
    aspect: str = Field(description="the name of the aspect the attribute belongs to")


class AttributeList(BaseModel):
    agent_id: str
    attributes: list[EntityAttribute]
    total: int


class ClaimValue(BaseModel):
    attribute_id: str
    value: str
    status: str
    confidence: float
    source_memory_id: str | None
    created_at: str
    superseded_at: str | None


class Claim(BaseModel):
    entity_id: str
    entity_name: str
    aspect: str
    claim_key: str
    claim_type: str = Field(description="state (a newer value supersedes it) or event (never superseded)")
    current: ClaimValue | None = Field(description="the active value; null when every value was superseded")
    history: list[ClaimValue] = Field(description="the superseded values, newest first")


class ClaimList(BaseModel):
    agent_id: str
    claims: list[Claim]
    total: int


def _attribute(r: Any) -> EntityAttribute:
    return EntityAttribute(
        **attribute_fields(r), entity_id=r["entity_id"], entity_name=r["entity_name"], aspect=r["aspect_name"]
    )


def _like(text: str) -> str:
    return "%" + text.lower().replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


def list_attributes(
    conn: Connection,
    agent: str,
    scope: ReadScope,
    *,
    entity_id: str | None = None,
    aspect: str | None = None,
    claim_key: str | None = None,
    status: Status = "active",
    query: str | None = None,
    limit: int = 50,
    offset: int = 0,
    decay_rate: float = 0.95,
) -> AttributeList:
    """The agent's attributes, newest first, filtered by entity (404 when unknown or another
    agent's), aspect name, claim key, status and a substring of the key or value."""
    if entity_id is not None:
        entity_row(conn, agent, entity_id)
    visible, params = visible_facts(scope, decay_rate)
    clauses, args = ["t.agent_id = ?", visible], [agent, *params]
    if entity_id is not None:
        clauses.append("t.entity_id = ?")
        args.append(entity_id)
    if aspect is not None:
        clauses.append("lower(s.aspect_name) = ?")
        args.append(aspect.lower())
    if claim_key is not None:
        clauses.append("t.claim_key = ?")
        args.append(claim_key)
    if status != "all":
        clauses.append("t.status = ?")
        args.append(status)
    if query:
        clauses.append("(lower(t.attribute_value) LIKE ? ESCAPE '\\' OR lower(t.attribute_key) LIKE ? ESCAPE '\\')")
        args += [_like(query), _like(query)]
    sql = (
        " FROM entity_attributes t JOIN entity_aspects s ON s.id = t.aspect_id"
        " JOIN entities e ON e.id = t.entity_id WHERE " + " AND ".join(clauses)
    )
    total = int(conn.execute("SELECT COUNT(*)" + sql, args).fetchone()[0])
    rows = conn.execute(
        "SELECT t.*, e.name AS entity_name, s.aspect_name" + sql + " ORDER BY t.created_at DESC, t.id LIMIT ? OFFSET ?",
        (*args, limit, offset),
    ).fetchall()
    return AttributeList(agent_id=agent, attributes=[_attribute(r) for r in rows], total=total)


def list_claims(
    conn: Connection,
    agent: str,
    scope: ReadScope,
    *,
    entity_id: str | None = None,
    claim_key: str | None = None,
    changed_only: bool = False,
    limit: int = 50,
    offset: int = 0,
    decay_rate: float = 0.95,
) -> ClaimList:
    """The agent's claims (attributes grouped by entity and claim key), most recently changed
    first, each with its current value and the values it replaced; ``changed_only`` keeps the
    claims that have a superseded value (what changed over time)."""
    if entity_id is not None:
        entity_row(conn, agent, entity_id)
    visible, params = visible_facts(scope, decay_rate)
    clauses, args = ["t.agent_id = ?", "t.claim_key IS NOT NULL", visible], [agent, *params]
    if entity_id is not None:
        clauses.append("t.entity_id = ?")
        args.append(entity_id)
    if claim_key is not None:
        clauses.append("t.claim_key = ?")
        args.append(claim_key)
    having = " HAVING SUM(CASE WHEN t.status = 'superseded' THEN 1 ELSE 0 END) > 0" if changed_only else ""
    groups = (
        "SELECT t.entity_id, t.claim_key, MAX(t.created_at) AS changed FROM entity_attributes t WHERE "
        + " AND ".join(clauses)
        + " GROUP BY t.entity_id, t.claim_key"
        + having
    )
    total = int(conn.execute(f"SELECT COUNT(*) FROM ({groups}) g", args).fetchone()[0])
    keys = conn.execute(
        f"SELECT entity_id, claim_key FROM ({groups}) g ORDER BY changed DESC, entity_id, claim_key LIMIT ? OFFSET ?",
        (*args, limit, offset),
    ).fetchall()
    claims = [_claim(conn, str(eid), str(key), visible, params) for eid, key in keys]
    return ClaimList(agent_id=agent, claims=claims, total=total)


def _claim(conn: Connection, entity_id: str, claim_key: str, visible: str, params: list[Any]) -> Claim:
    rows = conn.execute(
        "SELECT t.*, e.name AS entity_name, s.aspect_name FROM entity_attributes t"
        " JOIN entity_aspects s ON s.id = t.aspect_id JOIN entities e ON e.id = t.entity_id"
        f" WHERE t.entity_id = ? AND t.claim_key = ? AND {visible} ORDER BY t.created_at DESC, t.id",
        (entity_id, claim_key, *params),
    ).fetchall()
    values = [
        ClaimValue(
            attribute_id=r["id"],
            value=r["attribute_value"],
            status=r["status"],
            confidence=float(r["confidence"]),
            source_memory_id=r["source_memory_id"],
            created_at=r["created_at"],
            superseded_at=r["superseded_at"],
        )
        for r in rows
    ]
    current = next((v for v in values if v.status == "active"), None)
    first = rows[0]
    return Claim(
        entity_id=entity_id,
        entity_name=first["entity_name"],
        aspect=first["aspect_name"],
        claim_key=claim_key,
        claim_type=first["claim_type"],
        current=current,
        history=[v for v in values if v is not current],
    )
