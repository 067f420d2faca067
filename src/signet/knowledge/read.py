"""Knowledge-graph reads for the API and MCP: list and get entities (with the community each
belongs to), expand one to its memories.

Every read is for **one agent** (:func:`agent_for`): a token's own agent, or for an unscoped
local caller the agent it names (``default`` otherwise). An entity id of another agent is
answered exactly like an unknown one (404), so ids do not leak across agents; the memories an
expansion returns pass the caller's read scope (the same SQL filter recall applies).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from signet.errors import Forbidden, NotFound
from signet.knowledge.store import DETERMINISTIC_CONFIDENCE, kind_aspect
from signet.search.names import canonical
from signet.store.filters import MemoryFilter
from signet.store.scope import ReadScope
from signet.store.sqlite import Connection


class EntitySummary(BaseModel):
    id: str
    name: str
    entity_type: str | None
    mentions: int
    aliases: list[str] = Field(default_factory=list)
    pinned: str | None = Field(None, description="pin or suppress (entity_pinning), if set")
    updated_at: str


class EntityList(BaseModel):
    agent_id: str
    entities: list[EntitySummary]
    total: int


class Attribute(BaseModel):
    id: str
    key: str
    value: str
    claim_key: str | None
    group_key: str | None
    kind: str
    claim_type: str = Field(description="state (a newer value supersedes it) or event (never superseded)")
    status: str
    superseded_by: str | None
    superseded_at: str | None = Field(None, description="when a newer value of the same claim superseded it")
    confidence: float
    source_memory_id: str | None
    created_at: str


class Aspect(BaseModel):
    id: str = Field(
        description="the aspect's id; kind:<entity id> for the aspect an entity has by its kind (not stored)"
    )
    name: str
    description: str | None
    confidence: float
    attributes: list[Attribute]


class Related(BaseModel):
    id: str
    name: str
    via: str = Field(description="dependency:<type>, relation:<type>")
    strength: float | None


class CommunityRef(BaseModel):
    id: str
    name: str
    size: int


class EntityDetail(EntitySummary):
    agent_id: str
    description: str | None
    aspects: list[Aspect]
    related: list[Related]
    community: CommunityRef | None = Field(
        None, description="the entity community it belongs to (docs/recall.md#entity-communities), if computed"
    )


class ExpandedMemory(BaseModel):
    id: str
    content: str
    created_at: str
    who: str | None
    project: str | None
    via: str = Field(description="mention, or attribute:<aspect>")


class Expansion(BaseModel):
    entity: EntitySummary
    memories: list[ExpandedMemory]
    related: list[Related]


def agent_for(scope: ReadScope, requested: str | None) -> str:
    """Whose graph a caller reads: a scoped caller (token policy or agent) its own agent only; an
    unscoped local caller the agent it names, else ``default``."""
    scoped = scope.policy != "all" or scope.write_agent is not None
    own = scope.write_agent or scope.agent_id
    if scoped:
        if requested is not None and requested != own:
            raise Forbidden(f"the token's scope does not cover agent '{requested}'", reason="scope_mismatch")
        return own
    return requested or "default"


def attribute_fields(t: Any) -> dict[str, Any]:
    """An ``entity_attributes`` row as :class:`Attribute`'s fields (shared by every reader)."""
    return {
        "id": t["id"],
        "key": t["attribute_key"],
        "value": t["attribute_value"],
        "claim_key": t["claim_key"],
        "group_key": t["group_key"],
        "kind": t["kind"],
        "claim_type": t["claim_type"],
        "status": t["status"],
        "superseded_by": t["superseded_by"],
        "superseded_at": t["superseded_at"],
        "confidence": float(t["confidence"]),
        "source_memory_id": t["source_memory_id"],
        "created_at": t["created_at"],
    }


def visible_facts(scope: ReadScope, decay_rate: float) -> tuple[str, list[Any]]:
    """SQL (over ``entity_attributes t``) keeping the facts whose source memory the caller may
    read (the filter recall applies): an attribute's value is text taken from its memory, and a
    token scoped to one project must not read another project's memories through their facts.
    A fact with no source memory (written through the API) is kept."""
    where, params = MemoryFilter(scope=scope).sql(decay_rate)
    return (
        f"(t.source_memory_id IS NULL OR EXISTS (SELECT 1 FROM memories m WHERE m.id = t.source_memory_id AND {where}))",
        params,
    )


def _summary(conn: Connection, row: Any) -> EntitySummary:
    aliases = [r[0] for r in conn.execute("SELECT alias FROM entity_aliases WHERE entity_id = ?", (row["id"],))]
    pin = conn.execute("SELECT pin_type FROM entity_pinning WHERE entity_id = ?", (row["id"],)).fetchone()
    return EntitySummary(
        id=row["id"],
        name=row["name"],
        entity_type=row["entity_type"],
        mentions=int(row["mentions"]),
        aliases=aliases,
        pinned=pin[0] if pin else None,
        updated_at=row["updated_at"],
    )


def list_entities(
    conn: Connection, agent: str, *, query: str | None, kind: str | None, limit: int, offset: int
) -> EntityList:
    """The agent's entities, most mentioned first; ``query`` matches names and aliases (substring)."""
    clauses, params = ["e.agent_id = ?"], [agent]
    if query:
        pat = "%" + canonical(query).replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        clauses.append(
            "(e.canonical_name LIKE ? ESCAPE '\\' OR EXISTS (SELECT 1 FROM entity_aliases a"
            " WHERE a.entity_id = e.id AND a.canonical_alias LIKE ? ESCAPE '\\'))"
        )
        params += [pat, pat]
    if kind:
        clauses.append("e.entity_type = ?")
        params.append(kind)
    where = " AND ".join(clauses)
    total = int(conn.execute(f"SELECT COUNT(*) FROM entities e WHERE {where}", params).fetchone()[0])
    rows = conn.execute(
        f"SELECT * FROM entities e WHERE {where} ORDER BY e.mentions DESC, e.name LIMIT ? OFFSET ?",
        (*params, limit, offset),
    ).fetchall()
    return EntityList(agent_id=agent, entities=[_summary(conn, r) for r in rows], total=total)


def entity_row(conn: Connection, agent: str, entity_id: str) -> Any:
    """The entity row of ``agent`` (404 for an unknown id or another agent's)."""
    row = conn.execute("SELECT * FROM entities WHERE id = ? AND agent_id = ?", (entity_id, agent)).fetchone()
    if row is None:
        raise NotFound(f"no entity {entity_id!r}; list them with GET /api/knowledge/entities")
    return row


def _related(conn: Connection, entity_id: str, limit: int) -> list[Related]:
    rows = conn.execute(
        "SELECT e.id, e.name, 'dependency:' || d.dependency_type, d.strength FROM entity_dependencies d"
        " JOIN entities e ON e.id = CASE WHEN d.source_entity_id = ? THEN d.target_entity_id ELSE d.source_entity_id END"
        " WHERE ? IN (d.source_entity_id, d.target_entity_id)"
        " UNION ALL SELECT e.id, e.name, 'relation:' || r.relation_type, r.strength FROM relations r"
        " JOIN entities e ON e.id = CASE WHEN r.source_entity_id = ? THEN r.target_entity_id ELSE r.source_entity_id END"
        " WHERE ? IN (r.source_entity_id, r.target_entity_id) ORDER BY 4 DESC LIMIT ?",
        (entity_id, entity_id, entity_id, entity_id, limit),
    ).fetchall()
    return [Related(id=r[0], name=r[1], via=r[2], strength=r[3]) for r in rows]


def get_entity(
    conn: Connection, agent: str, entity_id: str, scope: ReadScope | None = None, *, decay_rate: float = 0.95
) -> EntityDetail:
    """One entity of the agent with its aspects, their attributes (current and superseded) and
    its related entities; 404 for an unknown id or another agent's. With ``scope``, only the
    attributes whose source memory it may read (:func:`visible_facts`)."""
    row = entity_row(conn, agent, entity_id)
    visible, params = visible_facts(scope, decay_rate) if scope is not None else ("1 = 1", [])
    aspects: list[Aspect] = []
    for a in conn.execute("SELECT * FROM entity_aspects WHERE entity_id = ? ORDER BY aspect_name", (entity_id,)):
        attrs = [
            Attribute(**attribute_fields(t))
            for t in conn.execute(
                f"SELECT * FROM entity_attributes t WHERE t.aspect_id = ? AND {visible}"
                " ORDER BY t.status, t.created_at DESC",
                (a["id"], *params),
            )
        ]
        aspects.append(
            Aspect(
                id=a["id"],
                name=a["aspect_name"],
                description=a["description"],
                confidence=float(a["confidence"]),
                attributes=attrs,
            )
        )
    kind = kind_aspect(row["entity_type"])
    if kind is not None and canonical(kind) not in {canonical(a.name) for a in aspects}:
        # The aspect an entity has by its kind is read, not stored (signet.knowledge.store).
        aspects.append(
            Aspect(
                id=f"kind:{row['id']}", name=kind, description=None, confidence=DETERMINISTIC_CONFIDENCE, attributes=[]
            )
        )
        aspects.sort(key=lambda a: a.name)
    community = conn.execute(
        "SELECT c.id, c.label, c.size FROM entity_community_members m JOIN entity_communities c ON c.id = m.community_id"
        " WHERE m.entity_id = ? AND c.agent_id = ?",
        (entity_id, row["agent_id"]),
    ).fetchone()
    return EntityDetail(
        **_summary(conn, row).model_dump(),
        agent_id=row["agent_id"],
        description=row["description"],
        aspects=aspects,
        related=_related(conn, entity_id, 50),
        community=CommunityRef(id=community[0], name=community[1] or "", size=int(community[2])) if community else None,
    )


def expand(
    conn: Connection, agent: str, entity_id: str, scope: ReadScope, *, limit: int, decay_rate: float = 0.95
) -> Expansion:
    """The memories an entity leads to (its current attributes' sources, then its mentions;
    newest first) that the caller's scope may read, and its related entities."""
    row = entity_row(conn, agent, entity_id)
    where, params = MemoryFilter(scope=scope).sql(decay_rate)
    rows = conn.execute(
        "SELECT m.id, m.content, m.created_at, m.who, m.project, src.via FROM ("
        " SELECT t.source_memory_id AS mid, 'attribute:' || s.aspect_name AS via FROM entity_aspects s"
        " JOIN entity_attributes t ON t.aspect_id = s.id"
        " WHERE s.entity_id = ? AND t.status = 'active' AND t.source_memory_id IS NOT NULL"
        " UNION SELECT mm.memory_id, 'mention' FROM memory_entity_mentions mm WHERE mm.entity_id = ?) src"
        f" JOIN memories m ON m.id = src.mid WHERE {where} GROUP BY m.id ORDER BY m.created_at DESC LIMIT ?",
        (entity_id, entity_id, *params, limit),
    ).fetchall()
    return Expansion(
        entity=_summary(conn, row),
        memories=[
            ExpandedMemory(id=r[0], content=r[1], created_at=r[2], who=r[3], project=r[4], via=r[5]) for r in rows
        ],
        related=_related(conn, entity_id, 20),
    )
