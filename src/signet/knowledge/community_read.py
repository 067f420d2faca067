"""Reads of the stored entity communities (signet.knowledge.communities) for the API, the MCP
tool, the CLI and the dashboard: one agent's only, like every knowledge read (the agent comes
from :func:`signet.knowledge.read.agent_for`); another agent's community id is a 404, exactly
like an unknown one."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from signet.errors import NotFound
from signet.store.sqlite import Connection


class CommunityMember(BaseModel):
    id: str
    name: str
    entity_type: str | None
    mentions: int
    memories: int = Field(description="memories linked to it: what ranks the members and names the community")


class CommunitySummary(BaseModel):
    id: str
    name: str = Field(description="its most mentioned members")
    size: int = Field(description="its number of entities")
    quality: str | None = Field(description="strong, moderate or fragmented: how much of its members' ties stay inside")
    computed_at: str
    members: list[CommunityMember] = Field(description="its most mentioned members first (as many as asked)")


class CommunityList(BaseModel):
    agent_id: str
    communities: list[CommunitySummary]
    total: int
    computed_at: str | None = Field(description="when they were computed (None: never, or no community found)")


class CommunityDetail(CommunitySummary):
    agent_id: str
    members_total: int


def _members(conn: Connection, community_id: str, limit: int, offset: int = 0) -> list[CommunityMember]:
    rows = conn.execute(
        "SELECT e.id, e.name, e.entity_type, e.mentions,"
        " (SELECT COUNT(*) FROM memory_entity_links l WHERE l.entity_rowid = e.rowid) AS linked"
        " FROM entity_community_members m JOIN entities e ON e.id = m.entity_id WHERE m.community_id = ?"
        " ORDER BY linked DESC, e.name, e.id LIMIT ? OFFSET ?",
        (community_id, limit, offset),
    ).fetchall()
    return [CommunityMember(id=r[0], name=r[1], entity_type=r[2], mentions=int(r[3]), memories=int(r[4])) for r in rows]


def _summary(conn: Connection, row: Any, members: int, offset: int = 0) -> dict[str, Any]:
    return {
        "id": row["id"],
        "name": row["label"] or "",
        "size": int(row["size"]),
        "quality": row["quality"],
        "computed_at": row["created_at"],
        "members": _members(conn, row["id"], members, offset) if members else [],
    }


def list_communities(conn: Connection, agent: str, *, limit: int, offset: int, members: int) -> CommunityList:
    """The agent's communities, largest first, each with its ``members`` most mentioned members."""
    total, computed = conn.execute(
        "SELECT COUNT(*), MAX(created_at) FROM entity_communities WHERE agent_id = ?", (agent,)
    ).fetchone()
    rows = conn.execute(
        "SELECT * FROM entity_communities WHERE agent_id = ? ORDER BY size DESC, label, id LIMIT ? OFFSET ?",
        (agent, limit, offset),
    ).fetchall()
    return CommunityList(
        agent_id=agent,
        communities=[CommunitySummary(**_summary(conn, r, members)) for r in rows],
        total=int(total),
        computed_at=computed,
    )


def get_community(conn: Connection, agent: str, community_id: str, *, limit: int, offset: int) -> CommunityDetail:
    """One community of the agent with a page of its members; 404 for an unknown id or another agent's."""
    row = conn.execute(
        "SELECT * FROM entity_communities WHERE id = ? AND agent_id = ?", (community_id, agent)
    ).fetchone()
    if row is None:
        raise NotFound(f"no community {community_id!r}; list them with GET /api/knowledge/communities")
    return CommunityDetail(**_summary(conn, row, limit, offset), agent_id=agent, members_total=int(row["size"]))
