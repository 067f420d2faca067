"""SDK operations on a memory's lifecycle and on session continuity: split, unretire and
the retirement ledger, provenance, signals, consolidation runs, checkpoints, session summaries
and MEMORY.md synthesis (docs/lifecycle.md, docs/continuity.md).

Answers are the shared models (signet.models, signet.ops.consolidation, signet.continuity.models).
"""

from __future__ import annotations

from typing import Any

from signet.continuity.models import (
    ArtifactRemoval,
    CheckpointList,
    ContinuityStatus,
    SynthesisRequest,
    SynthesisWritten,
)
from signet.models import (
    RetirementList,
    SignalAckRequest,
    SignalAckResponse,
    SignalsResponse,
    SplitRequest,
    SplitResponse,
    UnretireRequest,
    UnretireResponse,
)
from signet.ops.consolidation_models import ConsolidateRequest, ConsolidationRun, RunList, SourcesResponse, UndoRequest
from signet.sdk._core import Call, body, build, parser, query, segment

# --- lifecycle --------------------------------------------------------------------------------


def split(memory_id: str, event_id: str, *, reason: str, changed_by: str | None = None) -> Call[SplitResponse]:
    """Undo one reinforcement: the wording of that ``reinforced`` history event becomes a memory of its own."""
    req = build(SplitRequest, {"event_id": event_id, "reason": reason, "changed_by": changed_by})
    return Call("POST", f"/api/memory/{segment(memory_id, 'memory id')}/split", parser(SplitResponse), json=body(req))


def unretire(memory_id: str, *, reason: str, changed_by: str | None = None) -> Call[UnretireResponse]:
    """Take a retired memory's text out of the ledger: later writes of it are stored again."""
    req = build(UnretireRequest, {"reason": reason, "changed_by": changed_by})
    path = f"/api/memory/{segment(memory_id, 'memory id')}/unretire"
    return Call("POST", path, parser(UnretireResponse), json=body(req))


def retirements(*, limit: int = 100) -> Call[RetirementList]:
    """The retirement ledger, oldest first: the texts no write brings back."""
    return Call("GET", "/api/retirements", parser(RetirementList), params=query(limit=limit))


def sources(memory_id: str) -> Call[SourcesResponse]:
    """The memories a merged memory was made from (its provenance links)."""
    return Call("GET", f"/api/memory/{segment(memory_id, 'memory id')}/sources", parser(SourcesResponse))


def signals(consumer: str, *, limit: int = 20) -> Call[SignalsResponse]:
    """Important new memories ``consumer`` (any stable name) has not acknowledged."""
    segment(consumer, "consumer name")
    return Call("GET", "/api/signals", parser(SignalsResponse), params=query(consumer=consumer, limit=limit))


def ack_signals(consumer: str, cursor: int) -> Call[SignalAckResponse]:
    """Advance ``consumer``'s watermark to ``cursor``: those signals are not given again."""
    req = build(SignalAckRequest, {"consumer": consumer, "cursor": cursor})
    return Call("POST", "/api/signals/ack", parser(SignalAckResponse), json=body(req))


# --- consolidation ----------------------------------------------------------------------------


def consolidation_plan(*, tier2: bool = True) -> Call[ConsolidationRun]:
    """Plan a run and store the plan, changing nothing; apply exactly it with :func:`consolidation_apply`."""
    req = build(ConsolidateRequest, {"dry_run": True, "tier2": tier2})
    return Call("POST", "/api/memory/consolidate", parser(ConsolidationRun), json=body(req))


def consolidation_apply(plan_id: str | None = None, *, tier2: bool = True) -> Call[ConsolidationRun]:
    """Apply a stored plan exactly (Conflict when a memory it touches changed since), or plan
    and apply in one step without ``plan_id``."""
    if plan_id is not None:
        segment(plan_id, "plan id")
        req = build(ConsolidateRequest, {"plan_id": plan_id})
    else:
        req = build(ConsolidateRequest, {"tier2": tier2})
    return Call("POST", "/api/memory/consolidate", parser(ConsolidationRun), json=body(req))


def consolidation_runs(*, limit: int = 50) -> Call[RunList]:
    """Consolidation runs, newest first."""
    return Call("GET", "/api/consolidations", parser(RunList), params=query(limit=limit))


def consolidation_run(run_id: str) -> Call[ConsolidationRun]:
    """One run with its plan and the merged memories' ids."""
    return Call("GET", f"/api/consolidations/{segment(run_id, 'run id')}", parser(ConsolidationRun))


def consolidation_undo(run_id: str, *, reason: str | None = None) -> Call[ConsolidationRun]:
    """Undo an applied run: its sources come back, its merged memories are removed."""
    req = build(UndoRequest, {"reason": reason} if reason is not None else {})
    path = f"/api/consolidations/{segment(run_id, 'run id')}/undo"
    return Call("POST", path, parser(ConsolidationRun), json=body(req))


# --- continuity -------------------------------------------------------------------------------


def checkpoints(*, project: str | None = None, limit: int = 50) -> Call[CheckpointList]:
    """Session checkpoints, newest first, of one project or all: ``{checkpoints, count}``."""
    return Call("GET", "/api/checkpoints", parser(CheckpointList), params=query(project=project, limit=limit))


def session_checkpoints(session_key: str, *, limit: int = 50) -> Call[CheckpointList]:
    """One session's checkpoints (``<harness>:<session id>``), newest first; NotFound when none."""
    path = f"/api/checkpoints/{segment(session_key, 'session key')}"
    return Call("GET", path, parser(CheckpointList), params=query(limit=limit))


def continuity_status() -> Call[ContinuityStatus]:
    """Summary jobs by status, why they wait, the last MEMORY.md synthesis and the worker."""
    return Call("GET", "/api/continuity/status", parser(ContinuityStatus))


def synthesis_request(*, agent_id: str = "default") -> Call[SynthesisRequest]:
    """The current MEMORY.md synthesis prompt, for a harness to run on its own model."""
    return Call("GET", "/api/hooks/synthesis", parser(SynthesisRequest), params=query(agent_id=agent_id))


def write_synthesis(content: str, *, agent_id: str = "default") -> Call[SynthesisWritten]:
    """Write a harness's synthesis into MEMORY.md's generated block."""
    return Call(
        "POST", "/api/hooks/synthesis", parser(SynthesisWritten), json={"content": content, "agent_id": agent_id}
    )


def synthesize(*, agent_id: str = "default") -> Call[SynthesisWritten]:
    """Regenerate MEMORY.md's block now: with the configured LLM, or as lists without one."""
    return Call("POST", "/api/hooks/synthesis/run", parser(SynthesisWritten), json={"agent_id": agent_id})


def remove_summaries(
    session_token: str, *, agent_id: str = "default", reason: str | None = None
) -> Call[ArtifactRemoval]:
    """Delete a session's summary files and index rows and tombstone the session (privacy):
    ``{session_token, removed_paths}``; NotFound when it has none."""
    payload: dict[str, Any] = {"agent_id": agent_id}
    if reason is not None:
        payload["reason"] = reason
    path = f"/api/artifacts/{segment(session_token, 'session token')}/remove"
    return Call("POST", path, parser(ArtifactRemoval), json=payload)
