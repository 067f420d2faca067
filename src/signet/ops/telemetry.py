"""The local telemetry event log: what the daemon did, as counts and timings (spec 001).

Events never carry prompts, queries, memory content, ids or session keys: each event name has a
fixed list of allowed properties (:data:`EVENTS`), anything else a caller passes is dropped, and
string values are cut to :data:`STR_MAX` characters (they are provider names, models, outcomes).
Nothing is sent anywhere; the log stays in the workspace database.

Why a SQLite table and not a JSONL file: the API filters by event and time (indexes), the log is
bounded by deleting old rows (no file rotation), and it is backed up and copied with the
database it describes. Why buffered: an event is a dict appended to a bounded in-memory deque
(no I/O on the caller's thread, no JSON either); a flusher thread writes them in one
transaction every ``flushIntervalMs`` (or as soon as ``flushBatchSize`` wait), so the writer
thread that every memory write queues on sees one small write every few seconds, not one per
recall. Events still buffered when the process dies are lost; that is the price of not
making recalls wait on disk, and stop() flushes them on an orderly shutdown.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections import Counter, deque
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any, Final, Literal

from signet.config import TelemetrySettings
from signet.errors import StorageError
from signet.ops.analytics import percentile
from signet.ops.ndjson import keyset_lines
from signet.store.database import Database
from signet.store.sqlite import sqlite3

log = logging.getLogger(__name__)

EventName = Literal[
    "runtime.started",
    "runtime.stopped",
    "memory.created",
    "recall.performed",
    "llm.generate",
    "embedding.call",
    "pipeline.job",
]

EVENTS: Final[dict[EventName, tuple[str, ...]]] = {
    "runtime.started": ("version", "auth_mode", "embedding_provider", "llm_provider", "pipeline", "qa_ledger"),
    "runtime.stopped": ("uptime_s", "requests", "dropped_events"),
    "memory.created": ("type", "source_type", "pinned", "has_project", "importance"),
    "recall.performed": ("surface", "method", "results", "no_hits", "latency_ms", "vector", "limit"),
    "llm.generate": ("provider", "model", "purpose", "outcome", "duration_ms"),
    "embedding.call": ("provider", "kind", "texts", "outcome", "duration_ms"),
    "pipeline.job": ("job_type", "outcome", "duration_ms", "facts", "entities", "warnings"),
}
"""Every event and the only properties it may carry. A new event gets a line here and a name in
:data:`EventName`."""

STR_MAX: Final = 80
BUFFER_MAX: Final = 10_000
"""Events waiting for the flusher at most; beyond, the oldest are dropped (and counted)."""
PRUNE_EVERY_S: Final = 600.0
PAGE: Final = 1000


def _safe(value: Any) -> Any:
    """Numbers, booleans and None as they are; short strings cut; anything else dropped to None."""
    if value is None or isinstance(value, bool | int):
        return value
    if isinstance(value, float):
        return round(value, 3)
    if isinstance(value, str):
        return value[:STR_MAX]
    return None


def allowed(event: EventName, props: dict[str, Any]) -> dict[str, Any]:
    """Only the properties ``event`` may carry, each made safe (:func:`_safe`)."""
    return {k: _safe(props[k]) for k in EVENTS[event] if k in props}


def _iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).isoformat(timespec="microseconds")


def _row(r: Any) -> dict[str, Any]:
    try:
        props = json.loads(r["properties"])
    except ValueError:
        props = {}
    return {"id": int(r["id"]), "event": r["event"], "at": r["at"], "properties": props}


class TelemetryLog:
    def __init__(self, db: Database, settings: TelemetrySettings) -> None:
        self.db = db
        self.settings = settings
        self.enabled = settings.enabled
        self._buf: deque[tuple[EventName, float, dict[str, Any]]] = deque(maxlen=BUFFER_MAX)
        self._lock = threading.Lock()
        self._flush_lock = threading.Lock()
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.emitted = 0
        self.written = 0
        self.dropped = 0
        self.prune_hooks: list[tuple[str, str]] = [("telemetry_events", "at")]
        """(table, timestamp column) pairs pruned by ``retentionDays`` (the QA ledger adds its own)."""

    # -- writing -----------------------------------------------------------------------------
    def emit(self, event: EventName, props: dict[str, Any]) -> None:
        """Record one event: an append to the buffer, nothing else on the caller's thread (the
        flusher filters the properties, formats the time and writes). ``event`` must be in
        :data:`EVENTS`; properties it does not list are dropped before anything is stored."""
        if not self.enabled:
            return
        item = (event, time.time(), props)
        with self._lock:
            if len(self._buf) == BUFFER_MAX:
                self.dropped += 1
            self._buf.append(item)
            self.emitted += 1
            full = len(self._buf) >= self.settings.flush_batch_size
        if full:
            self._wake.set()

    def flush(self) -> int:
        """Write what is buffered in one transaction; the number of events written. Flushes
        take turns, so once this returns every event emitted before the call is stored (a read
        right after sees it), even when the flusher thread was writing a batch meanwhile."""
        with self._flush_lock:
            return self._flush()

    def _flush(self) -> int:
        with self._lock:
            items = list(self._buf)
            self._buf.clear()
        if not items:
            return 0
        rows = [(e, _iso(ts), json.dumps(allowed(e, p), separators=(",", ":"))) for e, ts, p in items]
        try:
            self.db.write(
                lambda c: c.executemany("INSERT INTO telemetry_events(event, at, properties) VALUES (?, ?, ?)", rows)
            )
        except (StorageError, sqlite3.Error, RuntimeError) as exc:  # RuntimeError: the database is closed
            with self._lock:
                self.dropped += len(rows)
            log.warning("telemetry: %d events not written: %s", len(rows), exc)
            return 0
        with self._lock:
            self.written += len(rows)
        return len(rows)

    def prune(self) -> int:
        """Drop events older than ``retentionDays`` and beyond ``maxEvents`` (newest kept), and
        ledger rows older than ``retentionDays``."""
        cutoff = (datetime.now(UTC) - timedelta(days=self.settings.retention_days)).isoformat(timespec="microseconds")
        keep = self.settings.max_events

        def run(c: Any) -> int:
            n = 0
            for table, column in self.prune_hooks:
                n += int(c.execute(f"DELETE FROM {table} WHERE {column} < ?", (cutoff,)).rowcount)
            n += int(
                c.execute(
                    "DELETE FROM telemetry_events WHERE id <= (SELECT MAX(id) FROM telemetry_events) - ?", (keep,)
                ).rowcount
            )
            return n

        try:
            return int(self.db.write(run))
        except (StorageError, sqlite3.Error, RuntimeError) as exc:
            log.warning("telemetry: pruning failed: %s", exc)
            return 0

    def start(self) -> None:
        if self._thread is not None:
            return
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="signet-telemetry", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop the flusher and write what is left (before the database closes)."""
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
            self._thread = None
        self.flush()

    def _run(self) -> None:
        interval = self.settings.flush_interval_ms / 1000
        next_prune = 0.0
        while not self._stop.is_set():
            if time.monotonic() >= next_prune:
                self.prune()
                next_prune = time.monotonic() + PRUNE_EVERY_S
            self._wake.wait(interval)
            self._wake.clear()
            self.flush()

    # -- reading -----------------------------------------------------------------------------
    @staticmethod
    def _where(event: str | None, since: str | None, until: str | None) -> tuple[str, list[Any]]:
        clauses, params = ["1=1"], []
        if event is not None:
            clauses.append("event = ?")
            params.append(event)
        if since is not None:
            clauses.append("at >= ?")
            params.append(since)
        if until is not None:
            clauses.append("at <= ?")
            params.append(until)
        return " AND ".join(clauses), params

    def events(
        self, *, event: str | None = None, since: str | None = None, until: str | None = None, limit: int = 100
    ) -> list[dict[str, Any]]:
        """Newest first. Buffered events are written first, so what was just emitted shows."""
        self.flush()
        where, params = self._where(event, since, until)
        rows = self.db.read(
            lambda c: list(
                c.execute(f"SELECT * FROM telemetry_events WHERE {where} ORDER BY id DESC LIMIT ?", (*params, limit))
            )
        )
        return [_row(r) for r in rows]

    def export(
        self, *, event: str | None = None, since: str | None = None, until: str | None = None, limit: int = 10_000
    ) -> Iterator[str]:
        """NDJSON lines, oldest first, read a page at a time (a large export never sits in memory)."""
        self.flush()
        where, params = self._where(event, since, until)
        sql = f"SELECT * FROM telemetry_events WHERE {where} AND id > ? ORDER BY id LIMIT ?"
        return keyset_lines(self.db, sql, params, key="id", limit=limit, page=PAGE, item=_row)

    def stats(self, *, since: str | None = None) -> dict[str, Any]:
        """Aggregates over the stored events: totals per event, LLM and embedding calls and
        errors, recall calls by method and surface, pipeline jobs; p50/p95 in milliseconds
        over the newest :data:`PAGE` samples of each."""
        self.flush()
        where, params = self._where(None, since, None)

        def read(c: Any) -> dict[str, Any]:
            counts = {
                r[0]: int(r[1])
                for r in c.execute(f"SELECT event, COUNT(*) FROM telemetry_events WHERE {where} GROUP BY event", params)
            }

            def props(event: str) -> list[dict[str, Any]]:
                rows = c.execute(
                    f"SELECT properties FROM telemetry_events WHERE {where} AND event = ? ORDER BY id DESC LIMIT ?",
                    (*params, event, PAGE),
                )
                out = []
                for (raw,) in rows:
                    try:
                        val = json.loads(raw)
                    except ValueError:
                        continue
                    if isinstance(val, dict):
                        out.append(val)
                return out

            return {
                "counts": counts,
                **{e: props(e) for e in ("llm.generate", "embedding.call", "recall.performed", "pipeline.job")},
            }

        data = self.db.read(read)
        counts: dict[str, int] = data["counts"]

        def timing(rows: list[dict[str, Any]], key: str) -> dict[str, float | None]:
            vals = sorted(float(r[key]) for r in rows if isinstance(r.get(key), int | float))
            if not vals:
                return {"p50": None, "p95": None}
            return {"p50": percentile(vals, 50), "p95": percentile(vals, 95)}

        def outcomes(rows: list[dict[str, Any]]) -> dict[str, int]:
            return dict(Counter(str(r.get("outcome")) for r in rows))

        llm, emb, rec, jobs = (data[e] for e in ("llm.generate", "embedding.call", "recall.performed", "pipeline.job"))
        return {
            "enabled": self.enabled,
            "since": since,
            "total_events": sum(counts.values()),
            "events": dict(sorted(counts.items())),
            "llm": {
                "calls": counts.get("llm.generate", 0),
                "outcomes": outcomes(llm),
                **timing(llm, "duration_ms"),
            },
            "embedding": {
                "calls": counts.get("embedding.call", 0),
                "texts": sum(int(r.get("texts") or 0) for r in emb),
                "outcomes": outcomes(emb),
                **timing(emb, "duration_ms"),
            },
            "recall": {
                "calls": counts.get("recall.performed", 0),
                "no_hits": sum(1 for r in rec if r.get("no_hits")),
                "by_method": dict(Counter(str(r.get("method")) for r in rec)),
                "by_surface": dict(Counter(str(r.get("surface")) for r in rec)),
                **timing(rec, "latency_ms"),
            },
            "pipeline": {
                "jobs": counts.get("pipeline.job", 0),
                "outcomes": outcomes(jobs),
                **timing(jobs, "duration_ms"),
            },
            "sampled": PAGE,
            "buffer": {"emitted": self.emitted, "written": self.written, "dropped": self.dropped},
        }
