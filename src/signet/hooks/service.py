"""HookService: what each ``/api/hooks/*`` endpoint does, on top of MemoryService.

Recall goes through :meth:`MemoryService.recall` and saves through
:meth:`MemoryService.remember` (the one path for each); this module adds sessions,
budgets, injection dedup, transcripts and handoffs.
"""

from __future__ import annotations

import logging
import math
import threading
from collections.abc import Callable, Mapping
from dataclasses import asdict
from pathlib import Path
from typing import Any, Protocol, Self, TypeVar

from signet.config import HooksSettings
from signet.hooks.budget import Section, assemble, estimate_tokens, fit_text
from signet.hooks.identity import HEADER, identity_sections, read_identity
from signet.hooks.models import (
    CompactionCompleteRequest,
    CompactionCompleteResponse,
    HookRecallRequest,
    HookRememberRequest,
    InjectedAttribute,
    InjectedMemory,
    PreCompactionRequest,
    PreCompactionResponse,
    PromptSubmitRequest,
    PromptSubmitResponse,
    SectionReport,
    SessionEndRequest,
    SessionEndResponse,
    SessionStartRequest,
    SessionStartResponse,
)
from signet.hooks.recent_facts import RecentFacts
from signet.hooks.texts import PRE_COMPACTION
from signet.hooks.transcripts import transcript_file, write_transcript
from signet.ingest.base import clean_turns
from signet.memory.service import MemoryService
from signet.models import MemoryType, RecallRequest, RecallResponse, RememberRequest, RememberResponse
from signet.pipeline.llm.base import LlmError
from signet.search.current_view import CurrentAttribute, current_attributes
from signet.search.fts import query_terms
from signet.store import sessions as store
from signet.store.database import Database
from signet.store.filters import MemoryFilter
from signet.store.records import to_iso
from signet.store.scope import UNSCOPED, ReadScope
from signet.store.sqlite import Connection, sqlite3
from signet.transcript import Turn

log = logging.getLogger(__name__)

ATTRIBUTE_SHARE = 0.5
"""Most of a prompt's token budget the current attributes of the entities it names may take
(they come first); the memories always keep at least the other half."""


class ContinuityService(Protocol):
    """What the hooks tell session continuity (signet.continuity.service, which builds on
    hooks: a protocol here keeps the two packages from importing each other)."""

    def restore(self, key: str, agent_id: str) -> tuple[Section, str] | None: ...
    def on_prompt(
        self, key: str, harness: str, project: str | None, agent_id: str, prompt: str, injected: int
    ) -> None: ...
    def on_remember(self, key: str, harness: str, project: str | None, agent_id: str, content: str) -> None: ...
    def on_pre_compaction(
        self, conn: Connection, key: str, harness: str, project: str | None, agent_id: str
    ) -> None: ...
    def on_compaction_complete(
        self, conn: Connection, key: str, harness: str, project: str | None, agent_id: str, summary: str
    ) -> None: ...
    def on_session_end(
        self,
        conn: Connection,
        key: str,
        *,
        session_id: str,
        harness: str,
        project: str | None,
        agent_id: str,
        turns: list[Turn],
        handoff: str,
    ) -> str | None: ...
    def after_session_end(self, agent_id: str) -> None: ...
    def notify(self) -> None: ...


Summarizer = Callable[[list[Turn]], str | None]


class _Owned(Protocol):
    @property
    def agent_id(self) -> str | None: ...
    @property
    def project(self) -> str | None: ...
    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Self: ...


_R = TypeVar("_R", bound=_Owned)


def owned(req: _R, scope: ReadScope) -> tuple[_R, str]:
    """The request with its owner settled by the caller's scope (named fields checked, absent
    ones filled from a scoped token), and the agent the session's rows belong to."""
    agent, project = scope.owner(req.agent_id, req.project)
    return req.model_copy(update={"agent_id": agent, "project": project}), agent or scope.agent_id


def format_memory(row: dict[str, Any]) -> str:
    day = str(row.get("created_at") or "")[:10]
    kind = row.get("type") or "fact"
    pin = " pinned" if row.get("pinned") else ""
    return f"- [{kind}{pin}{', ' + day if day else ''}] {str(row.get('content', '')).strip()}"


def last_exchanges(turns: list[Turn], n: int, max_chars: int = 600) -> str:
    """The last ``n`` user/assistant exchanges, each side capped, as the fallback handoff."""
    picked: list[Turn] = []
    users = 0
    for t in reversed(turns):
        picked.append(t)
        if t.role == "user":
            users += 1
            if users >= n:
                break
    lines = []
    for t in reversed(picked):
        text = t.content if len(t.content) <= max_chars else t.content[: max_chars - 1] + "…"
        lines.append(f"{t.role}: {text}")
    return "\n".join(lines)


class HookService:
    def __init__(
        self,
        db: Database,
        memory: MemoryService,
        settings: HooksSettings,
        workspace_root: Path,
        *,
        session_budget: int = 2000,
        pipeline_enabled: bool = True,
        max_attempts: int,
    ) -> None:
        self.db = db
        self.memory = memory
        self.settings = settings
        self.session_budget = session_budget
        """Default session-start budget in tokens (``memory.session_budget``; 0 turns it off)."""
        self.root = workspace_root
        self.pipeline_enabled = pipeline_enabled
        self.max_attempts = max_attempts
        self.recent_facts = RecentFacts()
        """The attributes each session was given lately (not repeated within ``prompt_dedup_turns``)."""
        """Attempts each queued extraction job gets (``memory.pipelineV2.maxAttempts``)."""
        self.summarizer: Summarizer | None = None
        """Set by the pipeline when an LLM provider is configured: upgrades the handoff."""
        self.continuity: ContinuityService | None = None
        """Checkpoints, summaries, scores and MEMORY.md (signet.continuity), set by the runtime."""
        self._llm_down_said = threading.Lock()
        """Taken (never released) by the first summary that finds the LLM not answering: the
        warning is said once per daemon run, atomically, though summaries run on their own threads."""

    # -- session start ---------------------------------------------------------------------
    def session_start(self, req: SessionStartRequest, *, scope: ReadScope = UNSCOPED) -> SessionStartResponse:
        req, agent = owned(req, scope)
        budget = req.budget_tokens if req.budget_tokens is not None else self.session_budget
        if budget <= 0:
            return SessionStartResponse(context="", tokens=0, budget=0, sections=[], memory_ids=[], handoff_id=None)
        key = store.session_key(req.harness, req.session_id) if req.session_id else None

        def read(conn: Connection) -> Any:
            return store.latest_handoff(conn, project=req.project, agent_id=agent, exclude_key=key)

        handoff = self.db.read(read)
        memories = self._session_memories(req, handoff, scope)
        sections = identity_sections(read_identity(self.root, agent, skip=frozenset(req.skip_files)))
        if handoff is not None:
            when = str(handoff["updated_at"])[:16].replace("T", " ")
            where = f" in {handoff['project']}" if handoff["project"] else ""
            sections.append(
                Section(
                    "handoff",
                    f"Last session ({handoff['harness']}{where}, {when} UTC)",
                    handoff["content"],
                    share=0.25,
                )
            )
        checkpoint_id = None
        if key is not None and self.continuity is not None:
            restored = self.continuity.restore(key, agent)
            if restored is not None:  # first: a resumed session needs where it was more than anything
                sections.insert(0, restored[0])
                checkpoint_id = restored[1]
        if memories:
            sections.append(Section("memories", "Relevant memories", "\n".join(format_memory(m) for m in memories)))
        out = assemble(sections, budget, header=HEADER)
        # Memories whose text made it into the (possibly cut) context count as injected.
        kept = [m["id"] for m in memories if m["content"].strip()[:60] in out.text]
        if key is not None:
            session = key

            def write(conn: Connection) -> None:
                turn = store.touch_session(conn, session, req.harness, req.project, agent)
                store.record_injections(conn, session, kept, turn, "session-start")

            self.db.write(write)
        return SessionStartResponse(
            context=out.text,
            tokens=out.tokens,
            budget=budget,
            sections=[SectionReport.model_validate(s) for s in out.sections],
            memory_ids=kept,
            handoff_id=handoff["id"] if handoff is not None else None,
            checkpoint_id=checkpoint_id
            if any(s["name"] == "checkpoint" and not s["dropped"] for s in out.sections)
            else None,
        )

    def _session_memories(self, req: SessionStartRequest, handoff: Any, scope: ReadScope) -> list[dict[str, Any]]:
        """Pinned first, then what the project's last handoff points at, then recent project
        work, then recent work anywhere."""
        limit = self.settings.session_memories
        if limit <= 0:
            return []
        found: dict[str, dict[str, Any]] = {}

        def add(rows: list[dict[str, Any]]) -> None:
            for r in rows:
                if len(found) < limit:
                    found.setdefault(r["id"], r)

        pinned = self.memory.list_memories(MemoryFilter(pinned=True, scope=scope), limit=limit)
        add([m.model_dump() for m in pinned.items])
        seed = " ".join(p for p in (req.project, handoff["content"][:800] if handoff is not None else None) if p)
        if seed and len(found) < limit:
            res = self.memory.recall(RecallRequest(query=seed, limit=limit, track_access=False), scope=scope)
            add([r.model_dump() for r in res.results])
        if req.project and len(found) < limit:
            recent = self.memory.list_memories(MemoryFilter(project=req.project, scope=scope), limit=limit)
            add([m.model_dump() for m in recent.items])
        if len(found) < limit:  # what was learned lately, whatever the project (agenr's browse recall)
            recent = self.memory.list_memories(MemoryFilter(scope=scope), limit=limit)
            add([m.model_dump() for m in recent.items])
        return list(found.values())

    # -- prompt submit ---------------------------------------------------------------------
    def prompt_submit(self, req: PromptSubmitRequest, *, scope: ReadScope = UNSCOPED) -> PromptSubmitResponse:
        req, agent = owned(req, scope)
        key = store.session_key(req.harness, req.session_id) if req.session_id else None
        turn = 0
        if key is not None:
            turn = self.db.write(lambda c: store.touch_session(c, key, req.harness, req.project, agent, advance=True))
        out = self._prompt_context(req, agent, key, turn, scope)
        if key is not None and self.continuity is not None:
            self.continuity.on_prompt(key, req.harness, req.project, agent, req.prompt, len(out.memories))
        if key is None or not self.memory.settings.memory.signals.enabled:
            return out
        # Signals: important new memories, given once to each session (its key is the consumer).
        board = self.memory.signals.deliver(key, scope=scope, own_session=req.session_id)
        if not board.signals:
            return out
        lines = ["Signet signals (important new memories):"]
        lines += [
            format_memory({"type": s.type, "created_at": s.created_at, "content": s.content}) for s in board.signals
        ]
        context = "\n".join(lines) + ("\n\n" + out.context if out.context else "")
        return out.model_copy(
            update={
                "context": context,
                "tokens": estimate_tokens(context),
                "signals": [InjectedMemory(id=s.id, score=1.0, content=s.content) for s in board.signals],
            }
        )

    def _prompt_context(
        self, req: PromptSubmitRequest, agent: str, key: str | None, turn: int, scope: ReadScope
    ) -> PromptSubmitResponse:
        """The prompt's context: the current attributes of the entities it names, then the
        memories relevant to it, both within its one budget. The attributes come first (a
        current fact outranks a memory that may state an old value) but take at most
        ``ATTRIBUTE_SHARE`` of the budget; the memories get what they leave."""
        prompt = req.prompt.strip()
        budget = self.settings.prompt_budget_tokens if req.budget_tokens is None else req.budget_tokens
        if len(prompt) < 3 or prompt.startswith("/") or budget <= 0:
            return PromptSubmitResponse(context="", tokens=0, outcome="skipped", top_score=None, memories=[], turn=turn)
        facts, block = self._prompt_attributes(prompt, agent, scope, math.floor(budget * ATTRIBUTE_SHARE), key, turn)
        # The separator costs at most one token more than the two parts estimated apart.
        out = self._prompt_memories(prompt, budget - (estimate_tokens(block) + 1 if block else 0), key, turn, scope)
        if not facts:
            return out
        context = block + ("\n\n" + out.context if out.context else "")
        return out.model_copy(update={"context": context, "tokens": estimate_tokens(context), "attributes": facts})

    def _prompt_attributes(
        self, prompt: str, agent: str, scope: ReadScope, cap: int, key: str | None, turn: int
    ) -> tuple[list[InjectedAttribute], str]:
        """The current attributes of the agent's entities the prompt names (signet.search.current_view)
        and their lines, within ``cap`` tokens; none when the graph or the setting is off. In a
        session, an attribute given within ``prompt_dedup_turns`` prompts is not given again.

        A graph read that fails costs the attributes, never the prompt's memories."""
        cfg = self.settings
        pipeline = self.memory.settings.memory.pipeline
        if cfg.prompt_max_attributes <= 0 or not pipeline.graph.enabled:
            return [], ""
        where, params = MemoryFilter(scope=scope).sql(self.memory.decay_rate)

        def read(conn: Connection) -> list[CurrentAttribute]:
            return current_attributes(
                conn,
                prompt,
                agent_id=agent,
                where=where,
                params=params,
                min_confidence=cfg.prompt_attribute_min_confidence,
                limit=cfg.prompt_max_attributes,
                max_focal=pipeline.traversal.max_focal,
            )

        try:
            found = self.db.read(read)
        except sqlite3.Error as exc:
            log.warning("prompt-submit: reading entity attributes failed, memories only: %s", exc)
            return [], ""
        if key is not None:
            given = self.recent_facts.given_since(key, turn - cfg.prompt_dedup_turns)
            found = [a for a in found if a.id not in given]
        lines: list[str] = []
        chosen: list[InjectedAttribute] = []
        for attr in found:
            if estimate_tokens("\n".join([*lines, attr.line()])) > cap:
                break
            lines.append(attr.line())
            chosen.append(InjectedAttribute.model_validate(asdict(attr)))
        if key is not None and chosen:
            self.recent_facts.record(key, [a.id for a in chosen], turn)
        return chosen, "\n".join(lines)

    def _prompt_memories(
        self, prompt: str, budget: int, key: str | None, turn: int, scope: ReadScope
    ) -> PromptSubmitResponse:
        """The memories relevant to the prompt, within ``budget`` and not injected lately."""
        cfg = self.settings
        if cfg.prompt_max_memories == 0 or budget <= 0:
            return PromptSubmitResponse(context="", tokens=0, outcome="skipped", top_score=None, memories=[], turn=turn)
        res = self.memory.recall(
            RecallRequest(query=prompt[:2000], limit=max(cfg.prompt_max_memories * 4, 10), track_access=False),
            scope=scope,
        )
        scored = self._relevance(prompt, res)
        if not scored:
            return PromptSubmitResponse(
                context="", tokens=0, outcome="no_results", top_score=None, memories=[], turn=turn
            )
        top = scored[0][1]
        passing = [(r, s) for r, s in scored if s >= cfg.prompt_min_score]
        if not passing:
            return PromptSubmitResponse(
                context="", tokens=0, outcome="below_threshold", top_score=round(top, 4), memories=[], turn=turn
            )
        seen: set[str] = set()
        if key is not None:
            since = max(turn - cfg.prompt_dedup_turns, 0)
            seen = self.db.read(lambda c: store.recently_injected(c, key, since))
        fresh = [(r, s) for r, s in passing if r.id not in seen][: cfg.prompt_max_memories]
        if not fresh:
            return PromptSubmitResponse(
                context="", tokens=0, outcome="already_injected", top_score=round(top, 4), memories=[], turn=turn
            )
        lines: list[str] = []
        chosen: list[InjectedMemory] = []
        title = "Signet memories relevant to this prompt:"
        for r, s in fresh:
            line = format_memory(r.model_dump())
            candidate = "\n".join([title, *lines, line])
            if estimate_tokens(candidate) > budget:
                room = budget - estimate_tokens("\n".join([title, *lines]))
                line = fit_text(line, room - 1) if room > 8 else ""
                if not line:
                    break
            lines.append(line)
            chosen.append(InjectedMemory(id=r.id, score=round(s, 4), content=r.content))
        if not chosen:
            return PromptSubmitResponse(
                context="", tokens=0, outcome="below_threshold", top_score=round(top, 4), memories=[], turn=turn
            )
        context = "\n".join([title, *lines])
        if key is not None:
            ids = [m.id for m in chosen]
            self.db.write(lambda c: store.record_injections(c, key, ids, turn, "user-prompt-submit"))
        return PromptSubmitResponse(
            context=context,
            tokens=estimate_tokens(context),
            outcome="injected",
            top_score=round(top, 4),
            memories=chosen,
            turn=turn,
        )

    @staticmethod
    def _relevance(prompt: str, res: RecallResponse) -> list[tuple[Any, float]]:
        """Scores to threshold on. Keyword-only recall normalizes the best hit to 1.0 whatever
        it matched, so there the score is weighted by how many of the prompt's content words
        the memory actually contains.
        """
        if res.method == "hybrid":
            return [(r, r.score) for r in res.results]
        terms = set(query_terms(prompt))
        out = []
        for r in res.results:
            words = set(query_terms(r.content))
            coverage = len(terms & words) / len(terms) if terms else 0.0
            out.append((r, r.score * coverage))
        out.sort(key=lambda x: x[1], reverse=True)
        return out

    # -- session end -----------------------------------------------------------------------
    def transcript_path(self, harness: str, session_id: str) -> Path:
        return transcript_file(self.root, harness, session_id)

    def recovered(self, key: str, session_id: str, harness: str, turns: list[Turn]) -> None:
        """A session that ended while the daemon was down was stored at start-up (its
        transcript and extraction by signet.hooks.recovery): give it the rest of what its
        session-end hook would have, a checkpoint, a continuity score and a summary job."""
        if self.continuity is None:
            return
        continuity = self.continuity
        handoff = last_exchanges(turns, self.settings.handoff_exchanges)
        self.db.write(
            lambda conn: continuity.on_session_end(
                conn,
                key,
                session_id=session_id,
                harness=harness,
                project=None,
                agent_id="default",
                turns=turns,
                handoff=handoff,
            )
        )
        continuity.after_session_end("default")

    def session_end(self, req: SessionEndRequest, *, scope: ReadScope = UNSCOPED) -> SessionEndResponse:
        req, agent = owned(req, scope)
        key = store.session_key(req.harness, req.session_id)
        turns = clean_turns([Turn(t.role, t.content, to_iso(t.timestamp) if t.timestamp else None) for t in req.turns])
        if not turns:
            self.db.write(lambda c: store.touch_session(c, key, req.harness, req.project, agent))
            return SessionEndResponse(session_key=key, turns=0, transcript_path=None, handoff_id=None, job_id=None)
        path = self.transcript_path(req.harness, req.session_id)
        write_transcript(path, key, (t.to_dict() for t in turns))
        handoff = last_exchanges(turns, self.settings.handoff_exchanges)
        now = store.now_iso()

        def write(conn: Connection) -> tuple[str, str | None]:
            store.touch_session(conn, key, req.harness, req.project, agent)
            store.store_transcript(conn, key, turns, harness=req.harness, project=req.project, agent_id=agent)
            store.upsert_conversation(
                conn,
                key,
                req.session_id,
                harness=req.harness,
                project=req.project,
                agent_id=agent,
                started_at=turns[0].timestamp or now,
                ended_at=turns[-1].timestamp or now,
                summary=handoff,
            )
            hid = store.upsert_handoff(
                conn, key, harness=req.harness, project=req.project, agent_id=agent, kind="exchange", content=handoff
            )
            job = None
            followed = False
            if self.pipeline_enabled:
                followed, job = store.flush_captured(conn, key, agent_id=agent, max_attempts=self.max_attempts)
            if self.pipeline_enabled and not followed:
                job = store.enqueue_extraction(
                    conn,
                    {
                        "source": "session_transcript",
                        "session_key": key,
                        "harness": req.harness,
                        "project": req.project,
                        "agent_id": agent,
                        "transcript_path": str(path),
                    },
                    max_attempts=self.max_attempts,
                )
            if self.continuity is not None:
                self.continuity.on_session_end(
                    conn,
                    key,
                    session_id=req.session_id,
                    harness=req.harness,
                    project=req.project,
                    agent_id=agent,
                    turns=turns,
                    handoff=handoff,
                )
            return hid, job

        hid, job = self.db.write(write)
        if self.continuity is not None:
            self.continuity.after_session_end(agent)
        if self.summarizer is not None:
            self._upgrade_handoff_later(key, turns, req, agent)
        return SessionEndResponse(
            session_key=key, turns=len(turns), transcript_path=str(path), handoff_id=hid, job_id=job
        )

    def _upgrade_handoff_later(self, key: str, turns: list[Turn], req: SessionEndRequest, agent: str) -> None:
        """Replace the last-exchanges handoff with an LLM summary, off the request path."""
        summarize = self.summarizer
        if summarize is None:
            return

        def run() -> None:
            try:
                summary = summarize(turns)
            except LlmError as exc:  # no LLM answering: the last-exchanges handoff stays; said once
                if self._llm_down_said.acquire(blocking=False):
                    log.warning(
                        "handoff summaries use the last exchanges: the LLM did not answer (%s); "
                        "said once per daemon run",
                        exc,
                    )
                return
            except Exception:  # a bug in summarizing keeps the fallback handoff; the session is saved
                log.exception("handoff summary failed for %s", key)
                return
            if summary and summary.strip():
                self.db.write(
                    lambda c: store.upsert_handoff(
                        c,
                        key,
                        harness=req.harness,
                        project=req.project,
                        agent_id=agent,
                        kind="summary",
                        content=summary.strip(),
                    )
                )

        threading.Thread(target=run, name=f"signet-handoff-{key[:40]}", daemon=True).start()

    # -- remember / recall -----------------------------------------------------------------
    def remember(self, req: HookRememberRequest, *, changed_by: str, scope: ReadScope = UNSCOPED) -> RememberResponse:
        body = RememberRequest(
            content=req.content,
            type=req.type,
            importance=req.importance,
            tags=req.tags,
            pinned=req.pinned,
            who=req.harness,
            project=req.project,
            agent_id=req.agent_id,
            source_type="hook",
            source_id=req.session_id,
        )
        saved = self.memory.remember(body, changed_by=changed_by, scope=scope)
        if req.session_id and self.continuity is not None:  # the session's continuity state
            owner, agent = owned(req, scope)
            key = store.session_key(req.harness, req.session_id)
            self.continuity.on_remember(key, req.harness, owner.project, agent, req.content)
        return saved

    def recall(self, req: HookRecallRequest, *, scope: ReadScope = UNSCOPED) -> RecallResponse:
        return self.memory.recall(RecallRequest(query=req.query, limit=req.limit, expand=req.expand), scope=scope)

    # -- compaction ------------------------------------------------------------------------
    def pre_compaction(self, req: PreCompactionRequest, *, scope: ReadScope = UNSCOPED) -> PreCompactionResponse:
        if req.session_id and self.continuity is not None:
            req, agent = owned(req, scope)
            key = store.session_key(req.harness, req.session_id or "")
            cont = self.continuity

            def write(conn: Connection) -> None:
                store.touch_session(conn, key, req.harness, req.project, agent)
                cont.on_pre_compaction(conn, key, req.harness, req.project, agent)

            self.db.write(write)
            cont.notify()
        text = PRE_COMPACTION
        if req.custom_instructions:
            text += "\n\nThe user also asked: " + req.custom_instructions.strip()
        return PreCompactionResponse(instructions=text)

    def compaction_complete(
        self, req: CompactionCompleteRequest, *, changed_by: str, scope: ReadScope = UNSCOPED
    ) -> CompactionCompleteResponse:
        req, agent = owned(req, scope)
        saved = self.memory.remember(
            RememberRequest(
                content=f"Session summary ({req.harness}{', ' + req.project if req.project else ''}): {req.summary}",
                type=MemoryType.EPISODIC,
                importance=0.6,
                tags=["compaction", "session"],
                who=req.harness,
                project=req.project,
                agent_id=req.agent_id,
                source_type="compaction",
                source_id=req.session_id,
            ),
            changed_by=changed_by,
            scope=scope,
        )
        hid = None
        if req.session_id:
            key = store.session_key(req.harness, req.session_id)
            cont = self.continuity

            def write(conn: Connection) -> str:
                if cont is not None:
                    cont.on_compaction_complete(conn, key, req.harness, req.project, agent, req.summary)
                return store.upsert_handoff(
                    conn,
                    key,
                    harness=req.harness,
                    project=req.project,
                    agent_id=agent,
                    kind="compaction",
                    content=req.summary,
                )

            hid = self.db.write(write)
        return CompactionCompleteResponse(memory_id=saved.id, handoff_id=hid)
