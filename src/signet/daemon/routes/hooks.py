"""Harness hook endpoints (``/api/hooks/*``): session start, prompt submit, session end,
remember, recall, and the compaction pair. ``signet hook`` is their usual caller.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends
from starlette.concurrency import run_in_threadpool

from signet.daemon.deps import ActorDep, RuntimeDep, ScopeDep
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
from signet.hooks.service import HookService
from signet.models import ErrorResponse, RecallResponse, RememberResponse

router = APIRouter(
    prefix="/api/hooks", tags=["hooks"], responses={400: {"model": ErrorResponse}, 422: {"model": ErrorResponse}}
)


async def _hooks(runtime: RuntimeDep) -> HookService:
    # async: no worker-thread hop for a lookup (signet.daemon.deps)
    return runtime.hooks


HooksDep = Annotated[HookService, Depends(_hooks)]


@router.post("/session-start", response_model=SessionStartResponse)
def session_start(body: SessionStartRequest, hooks: HooksDep, scope: ScopeDep) -> SessionStartResponse:
    """Identity files, the last session's handoff and the most relevant memories, within the budget."""
    return hooks.session_start(body, scope=scope)


@router.post("/user-prompt-submit", response_model=PromptSubmitResponse)
async def user_prompt_submit(body: PromptSubmitRequest, hooks: HooksDep, scope: ScopeDep) -> PromptSubmitResponse:
    """A few short memories for this prompt, only when the best one clears the threshold."""
    # Runs on every prompt: one worker-thread hop for the recall, not a second one for
    # FastAPI's response check (it runs sync handlers' checks on the pool too).
    return await run_in_threadpool(hooks.prompt_submit, body, scope=scope)


@router.post("/session-end", response_model=SessionEndResponse)
def session_end(body: SessionEndRequest, hooks: HooksDep, scope: ScopeDep) -> SessionEndResponse:
    """Keep the cleaned transcript, write the handoff, enqueue extraction. Idempotent per session."""
    return hooks.session_end(body, scope=scope)


@router.post("/remember", response_model=RememberResponse)
def remember(body: HookRememberRequest, hooks: HooksDep, actor: ActorDep, scope: ScopeDep) -> RememberResponse:
    return hooks.remember(body, changed_by=body.harness if actor in ("api", "cli") else actor, scope=scope)


@router.post("/recall", response_model=RecallResponse)
async def recall(body: HookRecallRequest, hooks: HooksDep, scope: ScopeDep) -> RecallResponse:
    return await run_in_threadpool(hooks.recall, body, scope=scope)


@router.post("/pre-compaction", response_model=PreCompactionResponse)
def pre_compaction(body: PreCompactionRequest, hooks: HooksDep, scope: ScopeDep) -> PreCompactionResponse:
    """The compaction instructions; with a session id, a checkpoint of the session first."""
    return hooks.pre_compaction(body, scope=scope)


@router.post("/compaction-complete", response_model=CompactionCompleteResponse)
def compaction_complete(
    body: CompactionCompleteRequest, hooks: HooksDep, actor: ActorDep, scope: ScopeDep
) -> CompactionCompleteResponse:
    return hooks.compaction_complete(body, changed_by=body.harness if actor in ("api", "cli") else actor, scope=scope)
