"""Every SDK operation, written once as a function that builds a :class:`Call`.

The public clients expose these functions as methods (see :mod:`signet.sdk._client`), so
the argument handling, validation, paths and response models live here and nowhere else.
Keyword arguments are the fields of the shared request models in :mod:`signet.models`;
a prebuilt model instance is accepted too.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import quote

from signet.errors import InvalidRequest
from signet.hooks.models import (
    CompactionCompleteRequest,
    CompactionCompleteResponse,
    HookRecallRequest,
    HookRememberRequest,
    PreCompactionRequest,
    PreCompactionResponse,
    PromptSubmitRequest,
    PromptSubmitResponse,
    SessionEndRequest,
    SessionEndResponse,
    SessionStartRequest,
    SessionStartResponse,
)
from signet.knowledge.communities import RefreshResult
from signet.knowledge.community_read import CommunityDetail, CommunityList
from signet.knowledge.facts import AttributeList, ClaimList, Status
from signet.knowledge.read import EntityDetail, EntityList, Expansion
from signet.memory.feedback import FeedbackList, FeedbackRequest, FeedbackResponse
from signet.models import (
    DeleteResponse,
    ForgetRequest,
    ForgetResponse,
    HealthResponse,
    HistoryResponse,
    ListQuery,
    Memory,
    MemoryList,
    ModifyRequest,
    ModifyResponse,
    ModifyResult,
    PatchMemoryRequest,
    RecallRequest,
    RecallResponse,
    RecoverRequest,
    RecoverResponse,
    RememberBatchRequest,
    RememberBatchResponse,
    RememberRequest,
    RememberResponse,
    StatusResponse,
)
from signet.sdk._core import Call, body, build, parser, query
from signet.secrets.models import ExecRequest, ExecRun, SecretList


def _id(memory_id: str) -> str:
    if not isinstance(memory_id, str) or not memory_id.strip():
        raise InvalidRequest("a memory id is required")
    return quote(memory_id, safe="")


def _model(model: type[Any], first: Any, first_field: str, fields: dict[str, Any]) -> Any:
    """``op("text", k=v)``, ``op(Model(...))`` or ``op({...})`` all build the same request model."""
    if isinstance(first, model):
        if fields:
            raise InvalidRequest(f"pass either a {model.__name__} or keyword fields, not both")
        return first
    if isinstance(first, Mapping):
        return build(model, {**first, **fields})
    return build(model, {first_field: first, **fields})


# --- memories ---------------------------------------------------------------------------------


def remember(content: str | RememberRequest, **fields: Any) -> Call[RememberResponse]:
    """Store a memory (``POST /api/memory/remember``); fields as in :class:`RememberRequest`."""
    req = _model(RememberRequest, content, "content", fields)
    return Call("POST", "/api/memory/remember", parser(RememberResponse), json=body(req))


def remember_batch(items: Sequence[str | RememberRequest | Mapping[str, Any]]) -> Call[RememberBatchResponse]:
    """Store many memories in one transaction (all or nothing)."""
    reqs = [_model(RememberRequest, item, "content", {}) for item in items]
    req = build(RememberBatchRequest, {"items": reqs})
    return Call("POST", "/api/memory/remember/batch", parser(RememberBatchResponse), json=body(req))


def recall(query_text: str | RecallRequest, **fields: Any) -> Call[RecallResponse]:
    """Hybrid search (``POST /api/memory/recall``); filters as in :class:`RecallRequest`."""
    req = _model(RecallRequest, query_text, "query", fields)
    return Call("POST", "/api/memory/recall", parser(RecallResponse), json=body(req))


def get(memory_id: str) -> Call[Memory]:
    """One memory by id."""
    return Call("GET", f"/api/memory/{_id(memory_id)}", parser(Memory))


def list_memories(**filters: Any) -> Call[MemoryList]:
    """Memories, newest first; filters as in :class:`ListQuery`."""
    q = build(ListQuery, filters)
    params = query(
        limit=q.limit,
        offset=q.offset,
        type=q.type,
        project=q.project,
        who=q.who,
        tag=q.tags,
        pinned=q.pinned,
        since=q.since,
        until=q.until,
        include_deleted=q.include_deleted or None,
    )
    return Call("GET", "/api/memories", parser(MemoryList), params=params)


def modify(memory_id: str, **fields: Any) -> Call[ModifyResult]:
    """Patch one memory (``reason`` required; ``if_version`` guards concurrent edits)."""
    req = build(PatchMemoryRequest, fields)
    return Call("PATCH", f"/api/memory/{_id(memory_id)}", parser(ModifyResult), json=body(req))


def modify_batch(patches: Sequence[Mapping[str, Any]], **fields: Any) -> Call[ModifyResponse]:
    """Several patches in one request; each result has its own status."""
    req = build(ModifyRequest, {"patches": list(patches), **fields})
    return Call("POST", "/api/memory/modify", parser(ModifyResponse), json=body(req))


def delete(memory_id: str, *, reason: str, if_version: int | None = None, force: bool = False) -> Call[DeleteResponse]:
    """Forget one memory: a soft delete you can recover, or a hard delete with ``force``."""
    if not isinstance(reason, str) or not reason.strip():
        raise InvalidRequest("invalid request: reason: must not be empty or whitespace")
    params = query(reason=reason, if_version=if_version, force=force or None)
    return Call("DELETE", f"/api/memory/{_id(memory_id)}", parser(DeleteResponse), params=params)


def forget_preview(**selection: Any) -> Call[ForgetResponse]:
    """What a batch forget would remove, and the ``confirm_token`` that executes exactly that set."""
    req = build(ForgetRequest, {**selection, "mode": "preview"})
    return Call("POST", "/api/memory/forget", parser(ForgetResponse), json=body(req))


def forget(**selection: Any) -> Call[ForgetResponse]:
    """Execute a batch forget (``reason`` required; large batches need the preview's ``confirm_token``)."""
    req = build(ForgetRequest, {**selection, "mode": "execute"})
    return Call("POST", "/api/memory/forget", parser(ForgetResponse), json=body(req))


def recover(memory_id: str, **fields: Any) -> Call[RecoverResponse]:
    """Undo a soft delete within the retention window (``reason`` required)."""
    req = build(RecoverRequest, fields)
    return Call("POST", f"/api/memory/{_id(memory_id)}/recover", parser(RecoverResponse), json=body(req))


def history(memory_id: str) -> Call[HistoryResponse]:
    """Every change to a memory, oldest first."""
    return Call("GET", f"/api/memory/{_id(memory_id)}/history", parser(HistoryResponse))


# --- feedback ---------------------------------------------------------------------------------


def feedback(session_id: str | FeedbackRequest, **fields: Any) -> Call[FeedbackResponse]:
    """Rate memories recalled in a session: ``ratings=[{"memory_id": …, "feedback": "positive"}]``."""
    req = _model(FeedbackRequest, session_id, "session_id", fields)
    return Call("POST", "/api/feedback", parser(FeedbackResponse), json=body(req))


def list_feedback(
    *, session_id: str | None = None, memory_id: str | None = None, limit: int = 100
) -> Call[FeedbackList]:
    """Stored ratings, newest first."""
    return Call(
        "GET",
        "/api/feedback",
        parser(FeedbackList),
        params=query(session_id=session_id, memory_id=memory_id, limit=limit),
    )


# --- knowledge graph --------------------------------------------------------------------------


def knowledge_entities(
    *, q: str | None = None, kind: str | None = None, agent_id: str | None = None, limit: int = 50, offset: int = 0
) -> Call[EntityList]:
    """The agent's entities, most mentioned first (``GET /api/knowledge/entities``)."""
    return Call(
        "GET",
        "/api/knowledge/entities",
        parser(EntityList),
        params=query(q=q, kind=kind, agent_id=agent_id, limit=limit, offset=offset),
    )


def knowledge_entity(entity_id: str, *, agent_id: str | None = None) -> Call[EntityDetail]:
    """One entity with its aspects, attributes and related entities."""
    return Call(
        "GET", f"/api/knowledge/entities/{_id(entity_id)}", parser(EntityDetail), params=query(agent_id=agent_id)
    )


def knowledge_expand(entity_id: str, *, agent_id: str | None = None, limit: int = 20) -> Call[Expansion]:
    """The memories an entity leads to (the caller may read), newest first, and its neighbours."""
    return Call(
        "GET",
        f"/api/knowledge/entities/{_id(entity_id)}/expand",
        parser(Expansion),
        params=query(agent_id=agent_id, limit=limit),
    )


def knowledge_attributes(
    *,
    entity_id: str | None = None,
    aspect: str | None = None,
    claim_key: str | None = None,
    status: Status = "active",
    q: str | None = None,
    agent_id: str | None = None,
    limit: int = 50,
    offset: int = 0,
) -> Call[AttributeList]:
    """The agent's attributes across its entities, newest first (``GET /api/knowledge/attributes``)."""
    return Call(
        "GET",
        "/api/knowledge/attributes",
        parser(AttributeList),
        params=query(
            entity_id=entity_id,
            aspect=aspect,
            claim_key=claim_key,
            status=status,
            q=q,
            agent_id=agent_id,
            limit=limit,
            offset=offset,
        ),
    )


def knowledge_claims(
    *,
    entity_id: str | None = None,
    claim_key: str | None = None,
    changed: bool = False,
    agent_id: str | None = None,
    limit: int = 50,
    offset: int = 0,
) -> Call[ClaimList]:
    """The agent's claims with their current value and the values it replaced (``GET /api/knowledge/claims``)."""
    return Call(
        "GET",
        "/api/knowledge/claims",
        parser(ClaimList),
        params=query(
            entity_id=entity_id, claim_key=claim_key, changed=changed, agent_id=agent_id, limit=limit, offset=offset
        ),
    )


def knowledge_communities(
    *, agent_id: str | None = None, limit: int = 50, offset: int = 0, members: int = 8
) -> Call[CommunityList]:
    """The agent's entity communities, largest first, with their ``members`` most mentioned members."""
    return Call(
        "GET",
        "/api/knowledge/communities",
        parser(CommunityList),
        params=query(agent_id=agent_id, limit=limit, offset=offset, members=members),
    )


def knowledge_community(
    community_id: str, *, agent_id: str | None = None, limit: int = 200, offset: int = 0
) -> Call[CommunityDetail]:
    """One community with a page of its members."""
    if not isinstance(community_id, str) or not community_id.strip():
        raise InvalidRequest("a community id is required")
    return Call(
        "GET",
        f"/api/knowledge/communities/{quote(community_id, safe='')}",
        parser(CommunityDetail),
        params=query(agent_id=agent_id, limit=limit, offset=offset),
    )


def refresh_communities(*, agent_id: str | None = None) -> Call[RefreshResult]:
    """Recompute the agent's communities now (needs the ``remember`` permission; seconds on a large store)."""
    return Call("POST", "/api/knowledge/communities/refresh", parser(RefreshResult), params=query(agent_id=agent_id))


# --- daemon -----------------------------------------------------------------------------------


def status() -> Call[StatusResponse]:
    """Version, memory counts, embedding coverage, and whether vector search is on."""
    return Call("GET", "/api/status", parser(StatusResponse))


def health() -> Call[HealthResponse]:
    """Liveness: answers as soon as the daemon listens."""
    return Call("GET", "/health", parser(HealthResponse))


# --- harness hooks ----------------------------------------------------------------------------


def session_start(
    req: SessionStartRequest | Mapping[str, Any] | None = None, **fields: Any
) -> Call[SessionStartResponse]:
    """Context for a new session: identity, the last handoff, relevant memories (within a budget)."""
    model = _model(SessionStartRequest, req or {}, "harness", fields)
    return Call("POST", "/api/hooks/session-start", parser(SessionStartResponse), json=body(model))


def prompt_submit(prompt: str | PromptSubmitRequest, **fields: Any) -> Call[PromptSubmitResponse]:
    """Memories worth injecting for one user prompt."""
    model = _model(PromptSubmitRequest, prompt, "prompt", fields)
    return Call("POST", "/api/hooks/user-prompt-submit", parser(PromptSubmitResponse), json=body(model))


def session_end(session_id: str | SessionEndRequest, **fields: Any) -> Call[SessionEndResponse]:
    """Hand over a finished session's transcript (idempotent per session)."""
    model = _model(SessionEndRequest, session_id, "session_id", fields)
    return Call("POST", "/api/hooks/session-end", parser(SessionEndResponse), json=body(model))


def hook_remember(content: str | HookRememberRequest, **fields: Any) -> Call[RememberResponse]:
    """Remember through the hook endpoint (records the harness as the author)."""
    model = _model(HookRememberRequest, content, "content", fields)
    return Call("POST", "/api/hooks/remember", parser(RememberResponse), json=body(model))


def hook_recall(query_text: str | HookRecallRequest, **fields: Any) -> Call[RecallResponse]:
    """Recall through the hook endpoint (same engine as :func:`recall`)."""
    model = _model(HookRecallRequest, query_text, "query", fields)
    return Call("POST", "/api/hooks/recall", parser(RecallResponse), json=body(model))


def pre_compaction(
    req: PreCompactionRequest | Mapping[str, Any] | None = None, **fields: Any
) -> Call[PreCompactionResponse]:
    """Instructions for the harness's compaction summary."""
    model = _model(PreCompactionRequest, req or {}, "harness", fields)
    return Call("POST", "/api/hooks/pre-compaction", parser(PreCompactionResponse), json=body(model))


def compaction_complete(summary: str | CompactionCompleteRequest, **fields: Any) -> Call[CompactionCompleteResponse]:
    """Store a compaction summary as a memory and a handoff."""
    model = _model(CompactionCompleteRequest, summary, "summary", fields)
    return Call("POST", "/api/hooks/compaction-complete", parser(CompactionCompleteResponse), json=body(model))


# --- secrets (admin) --------------------------------------------------------------------------


def secrets() -> Call[SecretList]:
    """The names of the workspace's secrets (``GET /api/secrets``); never a value."""
    return Call("GET", "/api/secrets", parser(SecretList))


def secret_exec(command: Sequence[str] | ExecRequest, **fields: Any) -> Call[ExecRun]:
    """Run an allowed command with named secrets in its environment (``POST /api/secrets/exec``);
    fields as in :class:`~signet.secrets.models.ExecRequest` (``secrets``, ``timeout_s``, ``wait``)."""
    req = _model(ExecRequest, command if isinstance(command, ExecRequest) else list(command), "command", fields)
    return Call("POST", "/api/secrets/exec", parser(ExecRun), json=body(req))


def secret_run(run_id: str) -> Call[ExecRun]:
    """A secret exec run's state and redacted output (``GET /api/secrets/exec/{id}``)."""
    if not isinstance(run_id, str) or not run_id.strip():
        raise InvalidRequest("a run id is required")
    return Call("GET", f"/api/secrets/exec/{quote(run_id, safe='')}", parser(ExecRun))
