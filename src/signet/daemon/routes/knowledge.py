"""Knowledge-graph reads (docs/api.md, docs/recall.md#the-knowledge-graph): the entities, aspects
and attributes of one agent, an entity expanded to the memories it leads to, and the agent's
attributes and claims across its entities and its entity communities (with the one write
here: recomputing them)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query

from signet.daemon.deps import RuntimeDep, ScopeDep
from signet.knowledge import community_read, facts, read
from signet.knowledge.communities import RefreshResult
from signet.models import ErrorResponse

router = APIRouter(
    tags=["knowledge"],
    responses={403: {"model": ErrorResponse}, 404: {"model": ErrorResponse}, 422: {"model": ErrorResponse}},
)

EntityId = Annotated[str, Path(min_length=1, max_length=200)]
CommunityId = Annotated[str, Path(min_length=1, max_length=200)]
AgentParam = Annotated[str | None, Query(min_length=1, max_length=200, description="unscoped callers only")]


@router.get("/api/knowledge/entities", response_model=read.EntityList)
def list_entities(
    runtime: RuntimeDep,
    scope: ScopeDep,
    q: Annotated[str | None, Query(max_length=200, description="substring of a name or alias")] = None,
    kind: Annotated[str | None, Query(max_length=40)] = None,
    agent_id: AgentParam = None,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
    offset: Annotated[int, Query(ge=0, le=1_000_000)] = 0,
) -> read.EntityList:
    """The agent's entities, most mentioned first."""
    agent = read.agent_for(scope, agent_id)
    return runtime.db.read(lambda c: read.list_entities(c, agent, query=q, kind=kind, limit=limit, offset=offset))


@router.get("/api/knowledge/entities/{entity_id}", response_model=read.EntityDetail)
def get_entity(
    runtime: RuntimeDep, scope: ScopeDep, entity_id: EntityId, agent_id: AgentParam = None
) -> read.EntityDetail:
    """One entity with its aspects, attributes (current and superseded; those of memories the caller may
    read) and related entities."""
    agent = read.agent_for(scope, agent_id)
    decay = runtime.settings.memory.decay_rate
    return runtime.db.read(lambda c: read.get_entity(c, agent, entity_id, scope, decay_rate=decay))


@router.get("/api/knowledge/entities/{entity_id}/expand", response_model=read.Expansion)
def expand_entity(
    runtime: RuntimeDep,
    scope: ScopeDep,
    entity_id: EntityId,
    agent_id: AgentParam = None,
    limit: Annotated[int, Query(ge=1, le=200)] = 20,
) -> read.Expansion:
    """The memories the entity leads to (that the caller may read), newest first, and its neighbours."""
    agent = read.agent_for(scope, agent_id)
    return runtime.db.read(
        lambda c: read.expand(c, agent, entity_id, scope, limit=limit, decay_rate=runtime.settings.memory.decay_rate)
    )


@router.get("/api/knowledge/attributes", response_model=facts.AttributeList)
def list_attributes(
    runtime: RuntimeDep,
    scope: ScopeDep,
    entity_id: Annotated[str | None, Query(min_length=1, max_length=200)] = None,
    aspect: Annotated[str | None, Query(min_length=1, max_length=200, description="aspect name")] = None,
    claim_key: Annotated[str | None, Query(min_length=1, max_length=500)] = None,
    status: facts.Status = "active",
    q: Annotated[str | None, Query(max_length=200, description="substring of the key or value")] = None,
    agent_id: AgentParam = None,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
    offset: Annotated[int, Query(ge=0, le=1_000_000)] = 0,
) -> facts.AttributeList:
    """The agent's attributes across its entities, newest first (current ones unless ``status``)."""
    agent = read.agent_for(scope, agent_id)
    decay = runtime.settings.memory.decay_rate
    return runtime.db.read(
        lambda c: facts.list_attributes(
            c,
            agent,
            scope,
            entity_id=entity_id,
            aspect=aspect,
            claim_key=claim_key,
            status=status,
            query=q,
            limit=limit,
            offset=offset,
            decay_rate=decay,
        )
    )


@router.get("/api/knowledge/claims", response_model=facts.ClaimList)
def list_claims(
    runtime: RuntimeDep,
    scope: ScopeDep,
    entity_id: Annotated[str | None, Query(min_length=1, max_length=200)] = None,
    claim_key: Annotated[str | None, Query(min_length=1, max_length=500)] = None,
    changed: Annotated[bool, Query(description="only claims with a superseded value")] = False,
    agent_id: AgentParam = None,
    limit: Annotated[int, Query(ge=1, le=200)] = 50,
    offset: Annotated[int, Query(ge=0, le=1_000_000)] = 0,
) -> facts.ClaimList:
    """The agent's claims, most recently changed first: each one's current value and the values it replaced."""
    agent = read.agent_for(scope, agent_id)
    decay = runtime.settings.memory.decay_rate
    return runtime.db.read(
        lambda c: facts.list_claims(
            c,
            agent,
            scope,
            entity_id=entity_id,
            claim_key=claim_key,
            changed_only=changed,
            limit=limit,
            offset=offset,
            decay_rate=decay,
        )
    )


@router.get("/api/knowledge/communities", response_model=community_read.CommunityList)
def list_communities(
    runtime: RuntimeDep,
    scope: ScopeDep,
    agent_id: AgentParam = None,
    limit: Annotated[int, Query(ge=1, le=200)] = 50,
    offset: Annotated[int, Query(ge=0, le=1_000_000)] = 0,
    members: Annotated[int, Query(ge=0, le=50, description="member names per community")] = 8,
) -> community_read.CommunityList:
    """The agent's entity communities, largest first, with their most mentioned members."""
    agent = read.agent_for(scope, agent_id)
    return runtime.db.read(
        lambda c: community_read.list_communities(c, agent, limit=limit, offset=offset, members=members)
    )


@router.post("/api/knowledge/communities/refresh", response_model=RefreshResult)
def refresh_communities(runtime: RuntimeDep, scope: ScopeDep, agent_id: AgentParam = None) -> RefreshResult:
    """Recompute the agent's communities now (Louvain over its entity graph; seconds on a large store)."""
    agent = read.agent_for(scope, agent_id)
    return runtime.communities.refresh(agent)


@router.get("/api/knowledge/communities/{community_id}", response_model=community_read.CommunityDetail)
def get_community(
    runtime: RuntimeDep,
    scope: ScopeDep,
    community_id: CommunityId,
    agent_id: AgentParam = None,
    limit: Annotated[int, Query(ge=1, le=2000, description="members on this page")] = 200,
    offset: Annotated[int, Query(ge=0, le=1_000_000)] = 0,
) -> community_read.CommunityDetail:
    """One community with a page of its members, most mentioned first."""
    agent = read.agent_for(scope, agent_id)
    return runtime.db.read(lambda c: community_read.get_community(c, agent, community_id, limit=limit, offset=offset))
