"""Agent feedback on recalled memories (the ``memory_feedback`` MCP tool, ``/api/feedback``).

An agent that used (or was misled by) memories in a session rates them: ``positive``,
``negative``, or ``correction`` with the corrected text. Ratings are stored in
``agent_feedback`` (migration 5; spec 001 names the table and its fields) for later use by
ranking and repair; nothing reads them back into scores yet, so a rating never changes a
recall by itself.

This module is the whole feature: models, schema, and the two database functions. It
imports neither the ``mcp`` library nor the daemon, so the SDK can use its models.
"""

from __future__ import annotations

import uuid
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, model_validator

from signet.errors import NotFound
from signet.models import ShortText, StrictModel
from signet.store.records import now_iso
from signet.store.scope import UNSCOPED, ReadScope
from signet.store.sqlite import Connection

FeedbackType = Literal["positive", "negative", "correction"]
MemoryRef = Annotated[str, Field(min_length=1, max_length=200)]


class FeedbackItem(StrictModel):
    memory_id: MemoryRef
    feedback: FeedbackType = Field(
        description="positive: it helped; negative: wrong or useless; correction: "
        "it is wrong and `correction` says what is right."
    )
    correction: Annotated[str, Field(min_length=1, max_length=10_000)] | None = Field(
        None, description="Required with feedback=correction, refused otherwise."
    )

    @model_validator(mode="after")
    def _correction_goes_with_type(self) -> FeedbackItem:
        if self.feedback == "correction" and not (self.correction and self.correction.strip()):
            raise ValueError("feedback=correction needs the corrected text in 'correction'")
        if self.feedback != "correction" and self.correction is not None:
            raise ValueError("'correction' is only allowed with feedback=correction")
        return self


class FeedbackRequest(StrictModel):
    session_id: Annotated[str, Field(min_length=1, max_length=200)] = Field(
        description="The session in which the memories were recalled."
    )
    ratings: Annotated[list[FeedbackItem], Field(min_length=1, max_length=100)]
    actor: ShortText | None = Field(None, description="Who rates (defaults to the caller: mcp, sdk, api…).")


class FeedbackRecord(BaseModel):
    id: str
    memory_id: str
    session_id: str
    feedback: FeedbackType
    correction: str | None
    actor: str
    created_at: str


class FeedbackResponse(BaseModel):
    session_id: str
    recorded: int
    items: list[FeedbackRecord]


class FeedbackList(BaseModel):
    items: list[FeedbackRecord]
    count: int


def _record(row: Any) -> FeedbackRecord:
    return FeedbackRecord(
        id=row["id"],
        memory_id=row["memory_id"],
        session_id=row["session_id"],
        feedback=row["feedback_type"],
        correction=row["correction_text"],
        actor=row["actor"],
        created_at=row["created_at"],
    )


def record_feedback(
    conn: Connection, req: FeedbackRequest, *, actor: str, scope: ReadScope = UNSCOPED
) -> FeedbackResponse:
    """Store every rating in ``req`` (inside the caller's write transaction): all or none.

    A rating of a memory that does not exist, or that the caller cannot read, fails the
    whole batch with NotFound, so a typo never stores half a session's ratings.
    """
    ids = sorted({r.memory_id for r in req.ratings})
    marks = ",".join("?" * len(ids))
    rows = conn.execute(f"SELECT * FROM memories WHERE id IN ({marks})", ids).fetchall()
    visible = {r["id"] for r in rows if scope.allows(r) and not r["is_deleted"]}
    missing = [i for i in ids if i not in visible]
    if missing:
        raise NotFound(f"no such memory: {', '.join(missing)}", ids=missing)
    who = req.actor or actor
    created = now_iso()
    out: list[FeedbackRecord] = []
    for item in req.ratings:
        rec = FeedbackRecord(
            id=str(uuid.uuid4()),
            memory_id=item.memory_id,
            session_id=req.session_id,
            feedback=item.feedback,
            correction=item.correction,
            actor=who,
            created_at=created,
        )
        conn.execute(
            "INSERT INTO agent_feedback (id, memory_id, session_id, feedback_type, correction_text, actor, "
            "agent_id, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (
                rec.id,
                rec.memory_id,
                rec.session_id,
                rec.feedback,
                rec.correction,
                rec.actor,
                scope.agent_id,
                rec.created_at,
            ),
        )
        out.append(rec)
    return FeedbackResponse(session_id=req.session_id, recorded=len(out), items=out)


def list_feedback(
    conn: Connection,
    *,
    session_id: str | None = None,
    memory_id: str | None = None,
    limit: int = 100,
    scope: ReadScope = UNSCOPED,
) -> FeedbackList:
    """Ratings, newest first, of memories the caller can read."""
    scope_sql, scope_args = scope.sql("m")
    where: list[str] = [scope_sql]
    args: list[Any] = list(scope_args)
    if session_id is not None:
        where.append("f.session_id = ?")
        args.append(session_id)
    if memory_id is not None:
        where.append("f.memory_id = ?")
        args.append(memory_id)
    rows = conn.execute(
        "SELECT f.* FROM agent_feedback f JOIN memories m ON m.id = f.memory_id "
        f"WHERE {' AND '.join(where)} ORDER BY f.created_at DESC, f.rowid DESC LIMIT ?",
        [*args, limit],
    ).fetchall()
    items = [_record(r) for r in rows]
    return FeedbackList(items=items, count=len(items))
