"""The answers of the continuity routes (checkpoints, MEMORY.md synthesis, summary removal,
status), here rather than in the route module so the SDK returns them typed: the SDK sits
below the daemon in the import layers and may not import route modules."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field


class Checkpoint(BaseModel):
    id: str
    session_key: str
    harness: str
    project: str | None
    agent_id: str
    trigger: str = Field(description="pre_compaction, periodic, compaction, compaction_summary, session_end, "
                         "session_summary")  # fmt: skip
    turn: int
    content: str
    state: dict[str, Any]
    created_at: str


class CheckpointList(BaseModel):
    checkpoints: list[Checkpoint]
    count: int


class SynthesisRequest(BaseModel):
    agent_id: str
    path: str = Field(description="MEMORY.md's path in the workspace")
    prompt: str = Field(description="the prompt to give a model; its answer is POSTed back")
    max_chars: int
    material: dict[str, int]
    fingerprint: str = Field(description="changes when the material does")


class SynthesisWritten(BaseModel):
    agent_id: str
    path: str
    source: str = Field(description="llm, harness or deterministic (lists, no LLM)")
    model: str | None
    chars: int
    truncated: bool
    changed: bool
    material: dict[str, int]
    at: str


class ArtifactRemoval(BaseModel):
    session_token: str
    removed_paths: list[str]


class ContinuityStatus(BaseModel):
    summaries: dict[str, Any]
    provider: str | None
    waiting_reason: str | None
    last_synthesis: dict[str, Any] | None
    last_error: str | None
    worker_alive: bool
