"""The pipeline worker: lease a job, extract, decide, write, persist the graph, complete.

Order inside one job, and why:
1. read the source text (memory, transcript turns) - a read;
2. extraction and one decision call per fact - LLM calls, no transaction open;
3. embeddings for the adds, then one write transaction for the facts and their history;
4. updates / deletes through MemoryService (their own transactions);
5. graph persistence, the source memory's ``extraction_status`` and ``complete`` in one last
   transaction (:meth:`Processor.finish`).

Step 5 is one transaction because the graph counts (``entities.mentions``,
``relations.mentions``) are increments, not upserts of a value: applied by a run that then
died before completing, they would be applied again by the next run of the job. Committed
together with the completion, a job's graph effects happen exactly once: either the job is
completed with them, or neither is (and the job runs again). The graph writes sit in a
SAVEPOINT inside that transaction, so a graph failure rolls back alone, is logged and stored
in ``result.graph_error``, and the job still completes: it never reverts the facts. The
completion is fenced by the lease's attempt number; if this run's lease expired and another
worker leased the job again, the whole transaction rolls back (:class:`LeaseLost`) and the
other run's graph and result stand.

A crash anywhere before step 5 commits leaves the job ``leased``; it is released at the next
start (or by the reaper) and runs again. The adds of the first run are then hash
duplicates, so they are recorded as ``dedupedExistingId`` and no fact is written twice; the
graph step links those already-written facts as if this run had written them.
"""

from __future__ import annotations

import functools
import logging
import random
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from signet.config import PipelineSettings
from signet.knowledge import attributes
from signet.knowledge import hints as stored_hints
from signet.knowledge.claims import Knowledge
from signet.memory.service import MemoryService
from signet.pipeline import graph, hints, queue
from signet.pipeline.decision import Proposal, decide
from signet.pipeline.extraction import (
    EntityTriple,
    Extraction,
    chunk_transcript,
    extraction_prompt,
    merge,
    parse_extraction,
)
from signet.pipeline.knowledge import knowledge_prompt, known_claims, parse_knowledge
from signet.pipeline.llm.base import LlmBudgetExceeded, LlmError, LlmUnavailable, RecordingLlm
from signet.pipeline.llm.supply import Blocked
from signet.pipeline.writes import Source, Writer
from signet.store.scope import ReadScope
from signet.store.sqlite import Connection

log = logging.getLogger(__name__)

JITTER_MS = 500
CONTEXT_TURNS = 2
"""Turns before a job's ``turn_from`` read along with the new ones, for context."""
EXTRACT_JOBS = ("extract", "hints")
"""The job types this worker leases (both need the LLM: they wait for it together)."""


class PermanentJobError(Exception):
    """The job can never succeed (its source is gone or unreadable): dead at once."""


class LeaseLost(Exception):
    """The job is no longer this run's: its lease expired and another worker leased it again.

    Raised inside the final transaction, so this run's graph writes and completion roll back
    with it; the run that holds the lease now applies its own. Neither a success nor a failure
    of the job: the worker records nothing for it.
    """


def backoff_seconds(failures: int, base_ms: int, max_ms: int, rng: random.Random | None = None) -> float:
    """``min(base * 2^n, max)`` plus up to 500 ms of jitter (never more than ``base``)."""
    if failures <= 0:
        return 0.0
    delay = min(base_ms * (2 ** (failures - 1)), max_ms)
    jitter = (rng or random).random() * min(JITTER_MS, base_ms)
    return float(delay + jitter) / 1000.0


@dataclass
class JobResult:
    facts: int
    entities: int
    warnings: list[str]
    writes: dict[str, Any]
    graph: dict[str, int] | None
    graph_error: str | None = None
    knowledge: dict[str, int] | None = None
    """What the knowledge builder wrote (signet.knowledge.attributes); None when it did not run."""
    knowledge_error: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "facts": self.facts,
            "entities": self.entities,
            "warnings": self.warnings[:50],
            "writes": self.writes,
            "graph": self.graph,
            "graph_error": self.graph_error,
            "knowledge": self.knowledge,
            "knowledge_error": self.knowledge_error,
        }


class Processor:
    """Runs one leased job end to end (no threads here: the worker owns those)."""

    def __init__(self, service: MemoryService, settings: PipelineSettings, llm: RecordingLlm) -> None:
        self.service = service
        self.db = service.db
        self.settings = settings
        self.llm = llm
        self.writer = Writer(service, settings)

    def source(self, job: queue.Job) -> Source | None:
        """The text to extract from; None when there is nothing (left) to do."""
        if job.memory_id is not None:
            mid = job.memory_id
            row = self.db.read(
                lambda c: c.execute(
                    "SELECT id, content, agent_id, project, visibility, is_deleted FROM memories WHERE id = ?", (mid,)
                ).fetchone()
            )
            if row is None or row["is_deleted"]:
                return None
            return Source(
                "memory",
                row["id"],
                row["content"],
                row["agent_id"],
                row["project"],
                memory_id=row["id"],
                visibility=row["visibility"],
            )
        key = job.payload.get("session_key")
        if isinstance(key, str) and key:
            # Live capture queues the turns that arrived since its last job (``turn_from``);
            # a couple of turns before them come along as context.
            start = job.payload.get("turn_from")
            first = max(0, start - CONTEXT_TURNS) if isinstance(start, int) and not isinstance(start, bool) else 0
            turns = self.db.read(
                lambda c: c.execute(
                    "SELECT role, content FROM transcript_turns WHERE session_key = ? AND turn_index >= ?"
                    " ORDER BY turn_index",
                    (key, first),
                ).fetchall()
            )
            if turns:
                text = "\n".join(f"{t['role']}: {t['content']}" for t in turns)
            else:
                row = self.db.read(
                    lambda c: c.execute(
                        "SELECT content FROM session_transcripts WHERE session_key = ?", (key,)
                    ).fetchone()
                )
                if row is None:
                    raise PermanentJobError(f"no transcript stored for session {key!r}")
                text = row["content"]
            return Source(
                "transcript", key, text, str(job.payload.get("agent_id") or "default"), job.payload.get("project")
            )
        raise PermanentJobError("extract job with neither memory_id nor payload.session_key")

    def extract(self, src: Source, job_id: str) -> Extraction:
        if src.kind != "transcript":
            raw = self.llm.complete(extraction_prompt(src.text), purpose="extraction", job_id=job_id)
            return parse_extraction(raw)
        # A transcript that fits the model's context goes whole (one call); a longer one chunk by
        # chunk, all of it, with overlap, then one dedupe pass (memories and documents are capped).
        cfg = self.settings.transcripts
        if cfg.mode != "chunked" and len(src.text) <= cfg.context_chars:
            raw = self.llm.complete(extraction_prompt(src.text, cfg.context_chars), purpose="extraction", job_id=job_id)
            return parse_extraction(raw)
        size = cfg.context_chars if cfg.mode == "whole" else min(cfg.chunk_chars, cfg.context_chars)
        parts = []
        for chunk in chunk_transcript(src.text, size=size, overlap=cfg.chunk_overlap):
            self.db.submit(functools.partial(queue.heartbeat, job_id=job_id))
            parts.append(
                parse_extraction(self.llm.complete(extraction_prompt(chunk, size), purpose="extraction", job_id=job_id))
            )
        return merge(parts)

    def build_knowledge(self, src: Source, ex: Extraction, job_id: str) -> Knowledge | None:
        """The LLM knowledge builder (signet.pipeline.knowledge): entities, aspects and attribute
        claims of a memory's text, or of the facts extracted from a transcript (a transcript can
        be longer than one call; its facts are what it said worth keeping). None when the graph is
        off, in shadow mode, or extraction found nothing worth keeping (then there is no knowledge
        to build either, and the call is not paid for). A malformed answer raises
        :class:`~signet.pipeline.knowledge.KnowledgeError` before anything is written: the job
        fails and is retried by the queue's rules."""
        if not self.settings.graph.enabled or self.settings.shadow_mode or not ex.facts:
            return None
        text = src.text if src.kind != "transcript" else "\n".join(f.content for f in ex.facts)
        if not text.strip():
            return None
        known = self.db.read(lambda c: known_claims(c, text, src.agent_id))
        raw = self.llm.complete(knowledge_prompt(text, known), purpose="knowledge", job_id=job_id)
        return parse_knowledge(raw)

    def run_hints(self, job: queue.Job) -> dict[str, Any]:
        """A ``hints`` job (signet.pipeline.hints): ask the model for the memory's questions
        (no transaction open), then replace its LLM hints and complete in one transaction. A
        malformed answer raises before anything is written; the queue retries."""
        mid = job.memory_id
        if mid is None:
            raise PermanentJobError("hints job without a memory_id")
        text = self.db.read(lambda c: hints.memory_text(c, mid))
        if text is None:
            skipped = {"skipped": "source memory is gone"}
            return self.db.write(lambda c: self._complete(c, job, skipped))
        questions = hints.generate(self.llm, text, self.settings.hints.max, job.id)

        def finish(conn: Connection) -> dict[str, Any]:
            written = stored_hints.replace_llm(conn, mid, questions)
            return self._complete(conn, job, hints.result(written, questions))

        return self.db.write(finish)

    def run(self, job: queue.Job) -> dict[str, Any]:
        """Process ``job`` and complete it; returns the stored result. Raises :class:`LeaseLost`."""
        if job.job_type == "hints":
            return self.run_hints(job)
        src = self.source(job)
        if src is None:
            skipped = {"skipped": "source memory is gone"}
            return self.db.write(lambda c: self._complete(c, job, skipped))
        ex = self.extract(src, job.id)
        self.db.submit(functools.partial(queue.heartbeat, job_id=job.id))
        knowledge = self.build_knowledge(src, ex, job.id)
        scope = ReadScope(agent_id=src.agent_id, policy="isolated")
        exclude = {src.memory_id} if src.memory_id else set()
        proposals: list[Proposal] = []
        for f in ex.facts:
            # Each LLM call can take a while on a local model: keep the lease fresh so the
            # reaper does not hand this job to another worker mid-way.
            self.db.submit(functools.partial(queue.heartbeat, job_id=job.id))
            proposals.append(
                decide(
                    self.llm,
                    self.service,
                    f,
                    limit=self.settings.decision_candidates,
                    job_id=job.id,
                    exclude=exclude,
                    scope=scope,
                )
            )
        self.db.submit(functools.partial(queue.heartbeat, job_id=job.id))
        warnings = list(ex.warnings) + [w for p in proposals for w in p.warnings]
        warnings += knowledge.warnings if knowledge is not None else []
        report = self.writer.apply(proposals, src, job_id=job.id, model=f"{self.llm.name}:{self.llm.model}")
        result = JobResult(len(ex.facts), len(ex.entities), warnings, report.as_dict(), None)
        do_graph = self.settings.graph.enabled and not self.settings.shadow_mode and bool(ex.entities)
        triples = ex.entities if do_graph else []
        return self.db.write(
            lambda c: self.finish(c, job, src, result, triples, report.memories, report.deduped, knowledge)
        )

    def finish(
        self,
        conn: Connection,
        job: queue.Job,
        src: Source,
        result: JobResult,
        triples: list[EntityTriple],
        written: dict[str, str],
        deduped: list[str],
        knowledge: Knowledge | None = None,
    ) -> dict[str, Any]:
        """The job's last transaction: graph and knowledge (each in a savepoint), extraction
        status, completion.

        ``written`` maps the facts this run wrote to their content. ``deduped`` are facts that
        were already stored; those derived from this same source by this agent are linked too,
        since they are usually this job's own facts written by an earlier, interrupted run
        (whose graph writes were rolled back with its unfinished transaction).
        """
        memories = dict(written)
        if triples or knowledge is not None:
            memories.update(_same_source_facts(conn, deduped, src))
        if knowledge is not None and knowledge.entities:
            conn.execute("SAVEPOINT job_knowledge")
            try:
                counts = attributes.write(
                    conn, knowledge, agent_id=src.agent_id, source_memory_id=src.memory_id, memories=memories
                )
                result.knowledge = counts.as_dict()
            except Exception as exc:  # like the graph's: roll the knowledge back alone, keep the facts
                conn.execute("ROLLBACK TO job_knowledge")
                log.exception("pipeline: knowledge writes for job %s failed", job.id)
                result.knowledge_error = str(exc)[:300]
            conn.execute("RELEASE job_knowledge")
        elif knowledge is not None:
            result.knowledge = attributes.WriteCounts().as_dict()
        if triples:
            if src.memory_id:
                memories[src.memory_id] = src.text
            conn.execute("SAVEPOINT job_graph")
            try:
                result.graph = graph.persist(conn, triples, agent_id=src.agent_id, memories=memories, job_id=job.id)
            except Exception as exc:  # graph failure is non-fatal by design (spec): roll it back, keep the facts
                conn.execute("ROLLBACK TO job_graph")
                log.exception("pipeline: graph persistence for job %s failed", job.id)
                result.graph_error = str(exc)[:300]
            conn.execute("RELEASE job_graph")
        if src.memory_id:
            conn.execute(
                "UPDATE memories SET extraction_status = 'completed', extraction_model = ? WHERE id = ?",
                (f"{self.llm.name}:{self.llm.model}", src.memory_id),
            )
        return self._complete(conn, job, result.as_dict())

    @staticmethod
    def _complete(conn: Connection, job: queue.Job, result: dict[str, Any]) -> dict[str, Any]:
        if not queue.complete(conn, job.id, result, attempt=job.attempts):
            raise LeaseLost(f"job {job.id} attempt {job.attempts}: the lease was taken over")
        return result


def _same_source_facts(conn: Connection, ids: list[str], src: Source) -> dict[str, str]:
    """id -> content of the live memories among ``ids`` that the pipeline derived from ``src``."""
    if not ids:
        return {}
    marks = ",".join("?" for _ in ids)
    rows = conn.execute(
        f"SELECT id, content FROM memories WHERE id IN ({marks}) AND is_deleted = 0 AND source_type = 'pipeline'"
        " AND source_id = ? AND agent_id = ?",
        (*ids, src.ref, src.agent_id),
    ).fetchall()
    return {str(r[0]): str(r[1]) for r in rows}


class Worker:
    """Worker threads and the stale-lease reaper. Jobs wait while the pipeline cannot run.

    Before each lease a worker asks ``blocked`` whether an LLM call can be made at all (a
    provider configured and answering, its budget not spent). While it cannot, the pending
    extract jobs are parked as ``waiting_for_provider`` / ``waiting_for_budget`` and nothing is
    leased, so no attempt is spent; once it can, they go back to ``pending`` and drain. A job
    whose call finds the provider gone mid-way (or the budget spent by another caller) waits
    the same way (:func:`queue.wait`) instead of failing."""

    def __init__(
        self,
        processor: Processor | None,
        settings: PipelineSettings,
        db: Any,
        wait_reason: str | None,
        blocked: Callable[[], Blocked | None] | None = None,
        on_unavailable: Callable[[str], None] | None = None,
    ) -> None:
        self.processor = processor
        self.settings = settings
        self.db = db
        self.wait_reason = wait_reason
        """Why no job is leased at all (pipeline disabled, mutations frozen, no workers); None when running."""
        self.blocked = blocked
        """Asked before each lease: why LLM jobs must wait now (signet.pipeline.llm.supply), or None."""
        self.on_unavailable = on_unavailable
        """Told when a call found the provider gone (the supply trusts that over its last probe)."""
        self.waiting: Blocked | None = None
        """What the workers last found blocking them; None while they run."""
        self._parked = True  # a previous run may have left waiting jobs: unpark them once
        self._kick = threading.Event()
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._threads: list[threading.Thread] = []
        self.consecutive_failures = 0
        self.backoff_until: float | None = None
        self.processed = 0
        self.failed = 0
        self.last_error: str | None = None
        self.current: dict[str, str] = {}
        self._lock = threading.Lock()
        self.listeners: list[Callable[[queue.Job, float, dict[str, Any] | None, BaseException | None], None]] = []
        """Told of every job run: (job, seconds, its result or None, the error or None);
        analytics and telemetry listen (signet.ops.observe); they must not raise."""

    def start(self) -> None:
        released = self.db.write(
            lambda c: queue.release_at_start(c, self.settings.lease_timeout_ms, self.db.lease_owner)
        )
        if released:
            log.info("pipeline: released %d leases left by a previous run", released)
        self._threads.append(threading.Thread(target=self._reaper, name="signet-pipeline-reaper", daemon=True))
        if self.wait_reason is None and self.processor is not None:
            for i in range(self.settings.workers):
                self._threads.append(threading.Thread(target=self._loop, name=f"signet-pipeline-{i}", daemon=True))
        for t in self._threads:
            t.start()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        self._kick.set()
        for t in self._threads:
            # A worker inside a long LLM call is abandoned (daemon thread): its job stays leased
            # and is released at the next start.
            t.join(timeout=5)

    def notify(self) -> None:
        self._wake.set()
        if self.waiting is not None:  # a new job while blocked: park it now, not at the next look
            self._kick.set()

    def kick(self) -> None:
        """Look again now whether jobs can run (the provider or its budget changed)."""
        self._kick.set()
        self._wake.set()

    def _gate(self) -> bool:
        """True when jobs may be leased; else park the pending ones and sleep until a look again."""
        gate = self.blocked() if self.blocked is not None else None
        if gate is None:
            if self._parked:
                n = self.db.write(lambda c: queue.unpark(c, EXTRACT_JOBS))
                if n:
                    log.info("pipeline: %d waiting jobs are pending again", n)
                with self._lock:
                    self._parked, self.waiting = False, None
            return True
        with self._lock:  # waiting first: a job queued from here on kicks (notify), so it is parked too
            first = self.waiting is None or self.waiting.reason != gate.reason
            self._parked, self.waiting = True, gate
        n = self.db.write(lambda c: queue.park(c, EXTRACT_JOBS, gate.status))
        if first:  # said once per reason, not once per job parked
            log.info("pipeline: jobs are %s (%d parked now): %s", gate.status, n, gate.reason)
        self._kick.wait(gate.retry_s)
        self._kick.clear()
        return False

    def _reaper(self) -> None:
        interval = self.settings.reaper_interval_ms / 1000
        while not self._stop.wait(interval):
            try:
                n = self.db.write(lambda c: queue.reap_stale(c, self.settings.lease_timeout_ms))
            except RuntimeError:  # database closed under us at shutdown
                return
            if n:
                log.info("pipeline: reaper released %d stale leases", n)

    def _sleep(self, seconds: float) -> None:
        self._wake.clear()
        self._wake.wait(seconds)

    def _loop(self) -> None:
        import time

        assert self.processor is not None
        poll = self.settings.poll_interval_ms / 1000
        while not self._stop.is_set():
            try:
                if not self._gate():
                    continue
                # Document jobs have their own worker (signet.documents.worker): they need no LLM.
                job = self.db.write(lambda c: queue.lease(c, EXTRACT_JOBS, self.db.lease_owner))
            except RuntimeError:
                return
            if job is None:
                self._sleep(poll)
                continue
            name = threading.current_thread().name
            with self._lock:
                self.current[name] = job.id
            started = time.perf_counter()
            result: dict[str, Any] | None = None
            error: BaseException | None = None
            try:
                result = self.processor.run(job)  # completes the job in its last transaction
            except LeaseLost as exc:
                error = exc
                log.warning("pipeline: %s; this run's graph and completion were rolled back", exc)
            except LlmUnavailable as exc:  # no call could be made: the job waits, its attempt given back
                error = exc
                self._wait(job, exc)
            except (LlmError, PermanentJobError) as exc:
                error = exc
                self._failed(job, str(exc), permanent=isinstance(exc, PermanentJobError))
            except Exception as exc:  # a bug in one job must not kill the worker; the job records it
                error = exc
                log.exception("pipeline: job %s crashed", job.id)
                self._failed(job, f"{type(exc).__name__}: {exc}", permanent=False)
            else:
                with self._lock:
                    self.consecutive_failures = 0
                    self.backoff_until = None
                    self.processed += 1
            finally:
                with self._lock:
                    self.current.pop(name, None)
                for fn in self.listeners:
                    fn(job, time.perf_counter() - started, result, error)
            with self._lock:
                n = self.consecutive_failures
            if n:
                delay = backoff_seconds(n, self.settings.backoff_base_ms, self.settings.backoff_max_ms)
                with self._lock:
                    self.backoff_until = time.time() + delay
                if self._stop.wait(delay):
                    return

    def _wait(self, job: queue.Job, exc: LlmUnavailable) -> None:
        budget = isinstance(exc, LlmBudgetExceeded)
        status = queue.WAITING_FOR_BUDGET if budget else queue.WAITING_FOR_PROVIDER
        if not budget and self.on_unavailable is not None:
            self.on_unavailable(exc.message)
        try:
            waited = self.db.write(lambda c: queue.wait(c, job.id, status, exc.message, attempt=job.attempts))
        except RuntimeError:
            return
        with self._lock:
            self._parked = True
        if waited:
            log.info("pipeline: job %s %s: %s", job.id, status, exc.message)

    def _failed(self, job: queue.Job, error: str, *, permanent: bool) -> None:
        try:
            status = self.db.write(lambda c: queue.fail(c, job.id, error, permanent=permanent, attempt=job.attempts))
        except RuntimeError:
            return
        if status is None:
            log.warning("pipeline: job %s failed after its lease was taken over (not recorded): %s", job.id, error)
            return
        log.warning(
            "pipeline: job %s failed (attempt %d/%d, now %s): %s", job.id, job.attempts, job.max_attempts, status, error
        )
        with self._lock:
            self.failed += 1
            self.last_error = error
            if not permanent:
                self.consecutive_failures += 1

    def snapshot(self) -> dict[str, Any]:
        import time

        with self._lock:
            until = self.backoff_until
            return {
                "threads": sum(1 for t in self._threads if t.is_alive() and t.name != "signet-pipeline-reaper"),
                "processed": self.processed,
                "failed": self.failed,
                "consecutive_failures": self.consecutive_failures,
                "backoff_s": round(until - time.time(), 3) if until and until > time.time() else 0.0,
                "last_error": self.last_error,
                "leased_now": list(self.current.values()),
                "waiting": {"status": self.waiting.status, "reason": self.waiting.reason} if self.waiting else None,
            }
