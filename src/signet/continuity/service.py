"""Session continuity: what the hooks call, and the worker that writes summaries and MEMORY.md.

The hook service (:mod:`signet.hooks.service`) calls in at each hook: a prompt updates the
session's continuity state (and every N prompts writes a checkpoint), pre-compaction writes a
checkpoint and queues a compaction summary, session end writes a checkpoint and a continuity
score and queues the session summary, all inside the hook's own transaction. Session start
asks for the checkpoint to restore.

One worker thread runs the summary jobs and, after each session summary, MEMORY.md's
synthesis. It reads the LLM from the pipeline on every turn (``llm_source``), so a provider
configured later is used without a restart; with none, jobs wait as ``waiting_for_provider``
and MEMORY.md is refreshed from lists.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from signet.config import ContinuitySettings
from signet.continuity import artifacts, checkpoints, summary_queue, synthesis
from signet.continuity.checkpoints import ContinuityTracker
from signet.errors import InvalidRequest, NotFound, SignetError
from signet.hooks.budget import Section
from signet.pipeline.extraction import cap_input, render, strip_think
from signet.pipeline.llm.base import LlmError, LlmUnavailable, RecordingLlm
from signet.store import sessions as store
from signet.store.database import Database
from signet.store.records import now_iso
from signet.store.sqlite import Connection
from signet.transcript import Turn

log = logging.getLogger(__name__)

LEASE_TIMEOUT_MS = 600_000
REAP_EVERY_S = 60.0


def _waits(exc: LlmError) -> bool:
    """An error that means "no provider to ask" (none configured, unreachable, over budget):
    the job waits instead of spending an attempt."""
    return isinstance(exc, LlmUnavailable) or bool(getattr(exc, "waits", False))


def _label(llm: RecordingLlm) -> str:
    """``provider:model``, or the provider alone when it runs its own default model."""
    return f"{llm.name}:{llm.model}" if llm.model else llm.name


class ContinuityService:
    def __init__(
        self,
        db: Database,
        settings: ContinuitySettings,
        root: Path,
        *,
        llm_source: Callable[[], RecordingLlm | None],
        gate: Callable[[], tuple[str, str] | None] = lambda: None,
        on_unavailable: Callable[[str], None] = lambda why: None,
        handoff_summaries: bool = True,
        poll_s: float = 1.0,
        wait_s: float = 30.0,
    ) -> None:
        self.db = db
        self.settings = settings
        self.root = root
        self.llm_source = llm_source
        """The LLM to use now; None when there is none (the pipeline's, read on every turn)."""
        self.gate = gate
        """``(waiting status, reason)`` while no call may be made (no provider, unreachable, budget
        spent: the pipeline's LlmSupply.blocked), else None."""
        self.on_unavailable = on_unavailable
        """Told when a call found the provider gone, so the gate trusts that over a stale probe."""
        self.handoff_summaries = handoff_summaries
        """A session summary also replaces the last-exchanges handoff (pipelineV2.summarizeHandoff)."""
        self.poll_s = poll_s
        self.wait_s = wait_s
        """How long a job that found no provider answering waits before it is tried again."""
        self.tracker = ContinuityTracker()
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._synthesis_due: set[str] = set()
        self._reaped = 0.0
        self.last_synthesis: dict[str, Any] | None = None
        self.last_error: str | None = None

    def usable_llm(self) -> RecordingLlm | None:
        """The LLM when a call may be made now, else None (the jobs wait)."""
        llm = self.llm_source()
        if llm is None or llm.name == "none" or self.gate() is not None:
            return None
        return llm

    def wait_reason(self) -> tuple[str, str]:
        gate = self.gate()
        if gate is not None:
            return gate
        return "waiting_for_provider", "waiting for a provider: no LLM provider is configured"

    # -- hooks: session start ------------------------------------------------------------------
    def restore(self, key: str, agent_id: str) -> tuple[Section, str] | None:
        """The section restoring the session's latest checkpoint (and its id), when recent."""
        hours = self.settings.restore_window_hours
        cp = self.db.read(lambda c: checkpoints.for_restore(c, key, agent_id, hours))
        if cp is None:
            return None
        when = str(cp["created_at"])[:16].replace("T", " ")
        title = f"Where this session left off (checkpoint at {cp['trigger'].replace('_', ' ')}, {when} UTC)"
        return Section("checkpoint", title, cp["content"], share=0.3), str(cp["id"])

    # -- hooks: prompts and remember ----------------------------------------------------------
    def on_prompt(self, key: str, harness: str, project: str | None, agent_id: str, prompt: str, injected: int) -> None:
        n = self.tracker.prompt(key, harness, project, agent_id, prompt, injected)
        every = self.settings.checkpoint_every_prompts
        if every and n % every == 0:
            state = self.tracker.snapshot(key)
            self.db.submit(
                lambda c: checkpoints.record(
                    c,
                    key,
                    harness=harness,
                    project=project,
                    agent_id=agent_id,
                    trigger="periodic",
                    content=checkpoints.render_state(state),
                    state=state,
                    turn=n,
                    keep=self.settings.checkpoints_per_session,
                )
            )

    def on_remember(self, key: str, harness: str, project: str | None, agent_id: str, content: str) -> None:
        self.tracker.remembered(key, harness, project, agent_id, content)

    # -- hooks: compaction --------------------------------------------------------------------
    def on_pre_compaction(self, conn: Connection, key: str, harness: str, project: str | None, agent_id: str) -> None:
        """Checkpoint what the session was doing before the harness forgets it; queue a summary."""
        state = self.tracker.snapshot(key)
        checkpoints.record(
            conn,
            key,
            harness=harness,
            project=project,
            agent_id=agent_id,
            trigger="pre_compaction",
            content=checkpoints.render_state(state),
            state=state,
            turn=int((state or {}).get("prompt_count", 0)),
            keep=self.settings.checkpoints_per_session,
        )
        if self.settings.summaries:
            summary_queue.enqueue(
                conn,
                session_key=key,
                session_id=key.split(":", 1)[1],
                harness=harness,
                project=project,
                agent_id=agent_id,
                trigger="compaction",
                max_attempts=self.settings.summary_max_attempts,
            )

    def on_compaction_complete(
        self, conn: Connection, key: str, harness: str, project: str | None, agent_id: str, summary: str
    ) -> None:
        state = self.tracker.snapshot(key)
        checkpoints.record(
            conn,
            key,
            harness=harness,
            project=project,
            agent_id=agent_id,
            trigger="compaction",
            content=checkpoints.render_state(state, "Compaction summary:\n" + summary),
            state=state,
            keep=self.settings.checkpoints_per_session,
        )

    # -- hooks: session end -------------------------------------------------------------------
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
    ) -> str | None:
        """Inside the session-end transaction: checkpoint, score, summary job (its id)."""
        state = self.tracker.snapshot(key)
        checkpoints.record(
            conn,
            key,
            harness=harness,
            project=project,
            agent_id=agent_id,
            trigger="session_end",
            content="Last exchanges:\n" + handoff,
            state=state,
            turn=len(turns),
            keep=self.settings.checkpoints_per_session,
        )
        checkpoints.score_session(conn, key, turns, harness=harness, project=project, agent_id=agent_id)
        if not self.settings.summaries:
            return None
        jid, _ = summary_queue.enqueue(
            conn,
            session_key=key,
            session_id=session_id,
            harness=harness,
            project=project,
            agent_id=agent_id,
            trigger="session_end",
            started_at=turns[0].timestamp if turns else None,
            ended_at=turns[-1].timestamp if turns else None,
            turns=len(turns),
            max_attempts=self.settings.summary_max_attempts,
        )
        return jid

    def after_session_end(self, agent_id: str) -> None:
        """Wake the worker; with no LLM to summarize, MEMORY.md is still refreshed (lists)."""
        if self.settings.synthesis and (not self.settings.summaries or self.usable_llm() is None):
            self.request_synthesis(agent_id)
        self._wake.set()

    # -- worker -------------------------------------------------------------------------------
    def start(self) -> None:
        n = self.db.write(lambda c: summary_queue.release_at_start(c, LEASE_TIMEOUT_MS, self.db.lease_owner))
        if n:
            log.info("continuity: released %d summary leases left by a previous run", n)
        self.db.write(lambda c: artifacts.rebuild(c, self.root))
        self._stop.clear()
        self._thread = threading.Thread(target=self._loop, name="signet-continuity", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=5)  # one inside a long LLM call is abandoned; its lease is released at start
            self._thread = None

    def notify(self) -> None:
        self._wake.set()

    def request_synthesis(self, agent_id: str) -> None:
        with self._lock:
            self._synthesis_due.add(agent_id)
        self._wake.set()

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                worked = self._turn()
            except RuntimeError:  # the database closed under us at shutdown
                return
            if not worked:
                self._wake.wait(self.poll_s)
                self._wake.clear()

    def _turn(self) -> bool:
        """One step: a summary job, else a due synthesis. True when something was done."""
        llm = self.usable_llm()
        if llm is None:
            status, reason = self.wait_reason()
            if self.db.read(summary_queue.has_pending):
                self.db.write(lambda c: summary_queue.park(c, reason, status))
        else:
            job = self.db.write(self._lease)
            if job is not None:
                self._run_job(dict(job), llm)
                return True
        with self._lock:
            due = sorted(self._synthesis_due)
            self._synthesis_due.clear()
        for agent in due:
            try:
                self.synthesize(agent, llm)
            except (OSError, SignetError) as exc:  # a full disk, an agent with no folder: said in status
                self.last_error = f"MEMORY.md for {agent}: {exc}"
                log.warning("continuity: could not write MEMORY.md for %s: %s", agent, exc)
        return bool(due)

    def _lease(self, conn: Connection) -> Any:
        """Release stale leases now and then (a worker that died mid-job), then lease."""
        now = time.monotonic()
        if now - self._reaped > REAP_EVERY_S:
            self._reaped = now
            summary_queue.release(conn, LEASE_TIMEOUT_MS)
        return summary_queue.lease(conn, self.db.lease_owner)

    def _run_job(self, job: dict[str, Any], llm: RecordingLlm) -> None:
        jid, attempt = str(job["id"]), int(job["attempts"])
        try:
            result = self.run_job(job, llm)
        except LlmError as exc:
            wait, message = (self.wait_s if _waits(exc) else None), exc.message
            retry_at = getattr(exc, "retry_at", None)  # a budget window: wait until it ends
            if wait is not None and isinstance(retry_at, int | float):
                wait = max(retry_at - time.time(), 0.0)
            waiting = "waiting_for_budget" if exc.kind == "refused" else "waiting_for_provider"
            if waiting == "waiting_for_provider":
                self.on_unavailable(message)
            status = self.db.write(lambda c: summary_queue.fail(c, jid, attempt, message, wait_s=wait, waiting=waiting))
            self.last_error = message
            log.warning("continuity: summary job %s: %s (now %s)", jid, message, status)
            return
        except Exception as exc:  # a bug in one job must not kill the worker; the job records it
            log.exception("continuity: summary job %s crashed", jid)
            crash = f"{type(exc).__name__}: {exc}"
            self.db.write(lambda c: summary_queue.fail(c, jid, attempt, crash))
            return
        if result.get("synthesis") and self.settings.synthesis:
            self.request_synthesis(str(job["agent_id"]))

    def _session_text(self, key: str) -> str:
        turns = self.db.read(lambda c: store.transcript_turns(c, key))
        return "\n".join(f"{t.role}: {t.content}" for t in turns)

    def run_job(self, job: dict[str, Any], llm: RecordingLlm) -> dict[str, Any]:
        """Summarize one session (LLM call outside any transaction), then store the result and
        complete the job in one transaction; a session-end summary's file is written first."""
        key, agent, trigger = str(job["session_key"]), str(job["agent_id"]), str(job["trigger"])
        jid, attempt = str(job["id"]), int(job["attempts"])
        text = self._session_text(key)
        if not text and trigger == "compaction":
            cp = self.db.read(lambda c: checkpoints.by_session(c, key, (agent,), 1))
            text = cp[0]["content"] if cp else ""
        if not text.strip():
            skipped = {"skipped": "nothing recorded for this session"}
            self.db.write(lambda c: summary_queue.complete(c, jid, attempt, skipped))
            return skipped
        raw = llm.complete(render("summary", text=cap_input(text)), purpose="session_summary", job_id=jid)
        summary = strip_think(raw).strip()
        if not summary:
            raise LlmError("the model returned an empty summary")
        model = _label(llm)
        if trigger == "compaction":
            return self.db.write(lambda c: self._store_compaction(c, job, summary, model))
        token = artifacts.session_token(agent, key)
        meta = {
            "kind": "summary",
            "job_id": jid,
            "session_key": key,
            "session_id": job["session_id"],
            "session_token": token,
            "agent_id": agent,
            "harness": job["harness"],
            "project": job["project"],
            "captured_at": job["captured_at"],
            "started_at": job["started_at"],
            "ended_at": job["ended_at"],
            "model": model,
        }
        title = f"# Session summary: {job['harness']}{' in ' + job['project'] if job['project'] else ''}"
        if self.db.read(lambda c: artifacts.tombstoned(c, agent, token)):
            skipped = {"skipped": "the session's history was removed (tombstoned)"}
            self.db.write(lambda c: summary_queue.complete(c, jid, attempt, skipped))
            return skipped
        path = artifacts.write_summary(self.root, meta, f"{title}\n\n{summary}")
        art = artifacts.parse(path)
        if art is None:
            raise OSError(f"the summary file {path} just written cannot be read back")
        return self.db.write(lambda c: self._store_summary(c, job, art, summary))

    def _store_summary(self, conn: Connection, job: dict[str, Any], art: artifacts.Artifact, summary: str) -> Any:
        key, agent = str(job["session_key"]), str(job["agent_id"])
        artifacts.index(conn, self.root, art)
        if self.handoff_summaries:
            store.upsert_handoff(
                conn,
                key,
                harness=job["harness"],
                project=job["project"],
                agent_id=agent,
                kind="summary",
                content=summary,
            )
        checkpoints.record(
            conn,
            key,
            harness=job["harness"],
            project=job["project"],
            agent_id=agent,
            trigger="session_summary",
            content="Session summary:\n" + summary,
            keep=self.settings.checkpoints_per_session,
        )
        result = {"path": artifacts.relative(self.root, art.path), "chars": len(summary), "synthesis": True}
        if not summary_queue.complete(conn, str(job["id"]), int(job["attempts"]), result):
            raise RuntimeError(f"summary job {job['id']}: lease lost")
        return result

    def _store_compaction(self, conn: Connection, job: dict[str, Any], summary: str, model: str) -> Any:
        cid = checkpoints.record(
            conn,
            str(job["session_key"]),
            harness=job["harness"],
            project=job["project"],
            agent_id=str(job["agent_id"]),
            trigger="compaction_summary",
            content="Session summary at compaction:\n" + summary,
            keep=self.settings.checkpoints_per_session,
        )
        result = {"checkpoint_id": cid, "chars": len(summary), "model": model}
        if not summary_queue.complete(conn, str(job["id"]), int(job["attempts"]), result):
            raise RuntimeError(f"summary job {job['id']}: lease lost")
        return result

    # -- MEMORY.md ------------------------------------------------------------------------------
    def _material(self, agent_id: str) -> synthesis.Material:
        s = self.settings
        return self.db.read(
            lambda c: synthesis.gather(
                c, agent_id, min_importance=s.synthesis_min_importance, summaries=s.synthesis_summaries
            )
        )

    def _path(self, agent_id: str) -> Path:
        path = synthesis.memory_md_path(self.root, agent_id)
        if path is None:
            raise NotFound(f"agent {agent_id!r} has no workspace folder (agents/<id>/) for a MEMORY.md")
        return path

    def synthesize(self, agent_id: str, llm: RecordingLlm | None) -> dict[str, Any]:
        """Regenerate the agent's MEMORY.md block: by the LLM when there is one answering,
        else deterministically (lists)."""
        path = self._path(agent_id)
        mat = self._material(agent_id)
        limit = self.settings.synthesis_max_chars
        source = "deterministic"
        body = synthesis.material_text(mat)
        if llm is not None:
            try:
                answer = synthesis.clean_answer(llm.complete(synthesis.prompt(mat, limit), purpose="synthesis"))
            except LlmError as exc:
                self.last_error = f"synthesis: {exc.message}"
                log.warning("continuity: MEMORY.md synthesis falls back to lists: %s", exc.message)
            else:
                if answer:
                    body, source = answer, f"llm:{_label(llm)}"
        return self._write(path, agent_id, mat, body, source)

    def _write(self, path: Path, agent_id: str, mat: synthesis.Material, body: str, source: str) -> dict[str, Any]:
        at = now_iso()
        fitted, truncated = synthesis.fit(body, self.settings.synthesis_max_chars)
        changed = synthesis.write(path, synthesis.block(fitted, source=source, mat=mat, at=at))
        out = {
            "agent_id": agent_id,
            "path": path.relative_to(self.root).as_posix(),
            "source": source.split(":", 1)[0],
            "model": source.split(":", 1)[1] if ":" in source else None,
            "chars": len(fitted),
            "truncated": truncated,
            "changed": changed,
            "material": mat.counts(),
            "at": at,
        }
        self.last_synthesis = out
        return out

    def synthesis_request(self, agent_id: str) -> dict[str, Any]:
        """What a harness needs to write MEMORY.md with its own model (GET /api/hooks/synthesis)."""
        path = self._path(agent_id)
        mat = self._material(agent_id)
        limit = self.settings.synthesis_max_chars
        return {
            "agent_id": agent_id,
            "path": path.relative_to(self.root).as_posix(),
            "prompt": synthesis.prompt(mat, limit),
            "max_chars": limit,
            "material": mat.counts(),
            "fingerprint": mat.fingerprint,
        }

    def synthesis_result(self, agent_id: str, content: str) -> dict[str, Any]:
        """Write a harness's synthesis into the block (POST /api/hooks/synthesis)."""
        body = synthesis.clean_answer(content)
        if not body:
            raise InvalidRequest("content is empty once think tags, fences and block markers are removed")
        return self._write(self._path(agent_id), agent_id, self._material(agent_id), body, "harness")

    # -- status -------------------------------------------------------------------------------
    def status(self) -> dict[str, Any]:
        llm = self.usable_llm()
        return {
            "summaries": self.db.read(summary_queue.stats),
            "provider": None if llm is None else _label(llm),
            "waiting_reason": None if llm is not None else self.wait_reason()[1],
            "last_synthesis": self.last_synthesis,
            "last_error": self.last_error,
            "worker_alive": self._thread is not None and self._thread.is_alive(),
        }
