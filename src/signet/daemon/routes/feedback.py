"""Agent feedback on recalled memories (``memory_feedback`` MCP tool, SDK ``feedback``)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from signet.daemon.deps import ActorDep, RuntimeDep, ScopeDep
from signet.memory.feedback import FeedbackList, FeedbackRequest, FeedbackResponse, list_feedback, record_feedback
from signet.models import ErrorResponse

router = APIRouter(
    tags=["feedback"],
    responses={400: {"model": ErrorResponse}, 404: {"model": ErrorResponse}, 422: {"model": ErrorResponse}},
)


@router.post("/api/feedback", response_model=FeedbackResponse)
def post_feedback(body: FeedbackRequest, runtime: RuntimeDep, actor: ActorDep, scope: ScopeDep) -> FeedbackResponse:
    """Rate memories recalled in a session (positive / negative / correction); all or nothing."""
    return runtime.db.write(lambda conn: record_feedback(conn, body, actor=actor, scope=scope))


@router.get("/api/feedback", response_model=FeedbackList)
def get_feedback(
    runtime: RuntimeDep,
    scope: ScopeDep,
    session_id: Annotated[str | None, Query(min_length=1, max_length=200)] = None,
    memory_id: Annotated[str | None, Query(min_length=1, max_length=200)] = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
) -> FeedbackList:
    """Stored ratings, newest first, filtered by session and/or memory."""
    return runtime.db.read(
        lambda conn: list_feedback(conn, session_id=session_id, memory_id=memory_id, limit=limit, scope=scope)
    )
