"""The decision engine (spec 004 "Decision Engine").

For each fact, a focused hybrid recall (the same :meth:`MemoryService.recall` the API
uses) finds up to five candidates. No candidates: ``add`` at once, without an LLM call.
Otherwise the model picks add / update / delete / none; a proposal naming a non-candidate
id, missing required fields or not JSON is rejected with a warning (no write follows).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from signet.memory.service import MemoryService
from signet.models import RecallRequest
from signet.pipeline.extraction import Fact, parse_json_object, render
from signet.pipeline.llm.base import RecordingLlm
from signet.store.scope import UNSCOPED, ReadScope

ACTIONS = ("add", "update", "delete", "none")


@dataclass(frozen=True)
class Candidate:
    id: str
    content: str
    score: float
    pinned: bool


@dataclass
class Proposal:
    fact: Fact
    action: str
    target_id: str | None
    confidence: float
    reason: str
    candidates: list[Candidate] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    rejected: bool = False


def find_candidates(
    service: MemoryService,
    fact: Fact,
    *,
    limit: int = 5,
    scope: ReadScope = UNSCOPED,
    exclude: set[str] | None = None,
) -> list[Candidate]:
    req = RecallRequest(query=fact.content, limit=limit + len(exclude or ()), track_access=False)
    # An embedder failing at query time does not raise here: recall falls back to its
    # keyword leg itself (signet.search.recall), so the decision still gets candidates.
    res = service.recall(req, scope=scope)
    out = [
        Candidate(r.id, r.content, float(r.score), bool(r.pinned))
        for r in res.results
        if r.id not in (exclude or set())
    ]
    return out[:limit]


def decision_prompt(fact: Fact, candidates: list[Candidate]) -> str:
    listing = "\n".join(f"{c.id}: {c.content}" for c in candidates)
    return render("decision", fact=f"[{fact.type}] {fact.content}", candidates=listing)


def parse_decision(raw: str, fact: Fact, candidates: list[Candidate]) -> Proposal:
    """Validate the model's decision against the candidate list."""

    def reject(msg: str) -> Proposal:
        return Proposal(fact, "none", None, 0.0, msg, candidates, [msg], rejected=True)

    try:
        data: dict[str, Any] = parse_json_object(raw)
    except ValueError as exc:
        return reject(f"decision rejected: {exc}")
    action = data.get("action")
    if action not in ACTIONS:
        return reject(f"decision rejected: invalid action {action!r}")
    conf = data.get("confidence")
    if isinstance(conf, bool) or not isinstance(conf, int | float) or not 0 <= conf <= 1:
        return reject("decision rejected: 'confidence' must be a number in 0..1")
    reason = data.get("reason")
    if not isinstance(reason, str) or not reason.strip():
        return reject("decision rejected: 'reason' is required")
    target = data.get("targetId")
    ids = {c.id for c in candidates}
    if action in ("update", "delete"):
        if not isinstance(target, str) or not target:
            return reject(f"decision rejected: '{action}' needs a targetId")
        if target not in ids:
            return reject(f"decision rejected: targetId {target!r} is not one of the candidates")
    elif isinstance(target, str) and target and target not in ids:
        return reject(f"decision rejected: targetId {target!r} is not one of the candidates")
    return Proposal(
        fact,
        str(action),
        target if isinstance(target, str) and target else None,
        float(conf),
        reason.strip(),
        candidates,
    )


def decide(
    llm: RecordingLlm,
    service: MemoryService,
    fact: Fact,
    *,
    limit: int = 5,
    job_id: str | None = None,
    exclude: set[str] | None = None,
    scope: ReadScope = UNSCOPED,
) -> Proposal:
    """One proposal for one fact. LLM errors propagate (the job retries)."""
    candidates = find_candidates(service, fact, limit=limit, exclude=exclude, scope=scope)
    if not candidates:
        return Proposal(fact, "add", None, fact.confidence, "no similar memory exists", [])
    raw = llm.complete(decision_prompt(fact, candidates), purpose="decision", job_id=job_id)
    return parse_decision(raw, fact, candidates)
