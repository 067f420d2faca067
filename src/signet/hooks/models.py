"""Request and response bodies of ``/api/hooks/*``.

The ``signet hook`` command turns each harness's own JSON into these normalized bodies, so
the daemon speaks one dialect and the harness formats live in ``signet.harnesses``.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, Field

from signet.models import (
    MAX_CONTENT_CHARS,
    MAX_QUERY_CHARS,
    Content,
    Importance,
    MemoryType,
    ShortText,
    StrictModel,
    Tags,
    UtcDatetime,
)

BudgetTokens = Annotated[int, Field(ge=0, le=100_000)]
IdentityName = Literal["AGENTS.md", "SOUL.md", "IDENTITY.md", "USER.md", "MEMORY.md"]


class HookRequest(StrictModel):
    harness: ShortText = Field("unknown", description="Which harness fired the hook (claude-code, codex…).")
    session_id: ShortText | None = None
    project: ShortText | None = Field(None, description="Project name (the basename of the project directory).")
    cwd: Annotated[str, Field(max_length=4096)] | None = None
    agent_id: ShortText | None = None


class SessionStartRequest(HookRequest):
    source: ShortText | None = Field(None, description="startup, resume, clear or compact (harness-specific).")
    budget_tokens: BudgetTokens | None = Field(None, description="Default: memory.session_budget.")
    skip_files: Annotated[list[IdentityName], Field(max_length=5)] = Field(
        default_factory=list, description="Identity files the harness already loads itself (e.g. via CLAUDE.md)."
    )


class SectionReport(BaseModel):
    name: str
    tokens: int
    truncated: bool
    dropped: bool


class SessionStartResponse(BaseModel):
    context: str
    tokens: int = Field(description="Estimated tokens of `context`; never more than `budget`.")
    budget: int
    sections: list[SectionReport]
    memory_ids: list[str]
    handoff_id: str | None
    checkpoint_id: str | None = Field(
        None, description="the checkpoint of this same session restored into `context` (resumed within the window)"
    )


class PromptSubmitRequest(HookRequest):
    prompt: Annotated[str, Field(max_length=MAX_CONTENT_CHARS)]
    budget_tokens: Annotated[int, Field(ge=0, le=10_000)] | None = None


PromptOutcome = Literal["injected", "below_threshold", "no_results", "already_injected", "skipped"]


class InjectedMemory(BaseModel):
    id: str
    score: float
    content: str


class InjectedAttribute(BaseModel):
    """A current attribute of an entity the prompt names (signet.search.current_view)."""

    id: str
    entity: str
    aspect: str
    key: str
    value: str
    confidence: float
    source_memory_id: str


class PromptSubmitResponse(BaseModel):
    context: str
    tokens: int
    outcome: PromptOutcome = Field(description="what happened to the memories (attributes are listed in `attributes`)")
    top_score: float | None
    memories: list[InjectedMemory]
    turn: int
    signals: list[InjectedMemory] = Field(
        default_factory=list,
        description="important new memories shown once to this session (docs/lifecycle.md, Signals); "
        "they lead `context` whatever the outcome",
    )
    attributes: list[InjectedAttribute] = Field(
        default_factory=list,
        description="current attributes of the entities the prompt names, injected before the memories "
        "(docs/harnesses.md, prompt-submit)",
    )


class TurnIn(StrictModel):
    role: Literal["user", "assistant"]
    content: Annotated[str, Field(max_length=MAX_CONTENT_CHARS)]
    timestamp: UtcDatetime | None = None


class SessionEndRequest(HookRequest):
    session_id: ShortText
    reason: ShortText | None = None
    turns: Annotated[list[TurnIn], Field(max_length=20_000)] = Field(default_factory=list)


class SessionEndResponse(BaseModel):
    session_key: str
    turns: int
    transcript_path: str | None
    handoff_id: str | None
    job_id: str | None


class HookRememberRequest(HookRequest):
    content: Content
    type: MemoryType | None = None
    importance: Importance | None = None
    tags: Tags = None
    pinned: bool | None = None


class HookRecallRequest(HookRequest):
    query: Annotated[str, Field(min_length=1, max_length=MAX_QUERY_CHARS)]
    limit: Annotated[int, Field(ge=1, le=50)] = 5
    expand: bool = Field(
        False, description="Attach the transcript turns the best results came from (as `POST /api/memory/recall`)."
    )


class PreCompactionRequest(HookRequest):
    trigger: ShortText | None = Field(None, description="manual or auto (Claude Code).")
    custom_instructions: Annotated[str, Field(max_length=10_000)] | None = None


class PreCompactionResponse(BaseModel):
    instructions: str


class CompactionCompleteRequest(HookRequest):
    summary: Content


class CompactionCompleteResponse(BaseModel):
    memory_id: str
    handoff_id: str | None
