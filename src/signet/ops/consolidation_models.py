"""The consolidation API's models (plans, runs, requests), apart from the code that makes
them: the SDK and the daemon's routes import these without numpy and the store
(signet.ops.consolidation), so `signet mcp` and other thin clients start fast."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from signet.models import ShortText, StrictModel

Kind = Literal["duplicate", "expired", "stale_todo", "merge"]


class Action(BaseModel):
    """One change of a plan. ``retire``: the memories it retires; ``keep``: a duplicate's
    survivor; ``content``: a merge's new memory; ``versions``: every touched memory's version
    when planned."""

    kind: Kind
    tier: Literal[1, 2]
    agent_id: str
    project: str | None
    visibility: str
    type: str
    retire: list[str]
    keep: str | None = None
    similarity: float | None = None
    content: str | None = None
    importance: float | None = None
    tags: list[str] = Field(default_factory=list)
    reason: str
    versions: dict[str, int]
    previews: dict[str, str] = Field(default_factory=dict)


class Plan(BaseModel):
    actions: list[Action]
    scanned: int
    tier2: str = Field(description="`ran`, or `skipped: <why>`")
    notes: list[str] = Field(default_factory=list, description="clusters the model could not merge, and why")


class ConsolidateRequest(StrictModel):
    dry_run: bool = Field(False, description="plan and store the plan; change nothing")
    plan_id: ShortText | None = Field(None, description="apply this dry-run's stored plan (exactly it)")
    tier2: bool = Field(True, description="ask the LLM to merge clusters (when a provider is configured)")


class UndoRequest(StrictModel):
    reason: ShortText | None = None


class ConsolidationRun(BaseModel):
    id: str
    status: Literal["planned", "applied", "undone"]
    trigger: str
    actor: str
    created_at: str
    applied_at: str | None
    undone_at: str | None
    plan: Plan
    created: dict[str, str] = Field(description="action index -> id of the memory a merge wrote")
    counts: dict[str, int]


class RunSummary(BaseModel):
    id: str
    status: str
    trigger: str
    actor: str
    created_at: str
    applied_at: str | None
    undone_at: str | None
    actions: int
    retired: int
    tier2: str


class RunList(BaseModel):
    items: list[RunSummary]


class MemorySource(BaseModel):
    source_id: str
    run_id: str
    content: str | None
    is_deleted: bool | None


class SourcesResponse(BaseModel):
    id: str
    sources: list[MemorySource]
