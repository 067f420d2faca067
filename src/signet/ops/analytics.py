"""In-memory analytics: usage counters, an error ring buffer and latency histograms (spec 001).

Everything here is ephemeral (it starts empty with the daemon) and cheap on the hot path: a
request costs one lock acquisition, a few integer bumps and one histogram insert into a
preallocated ring; sorting for percentiles waits until someone asks (a snapshot). Durable
history lives elsewhere (``memory_history``, the telemetry event log, the daemon log).

- **Usage**: per endpoint (route template, never the raw path: ids do not explode the table),
  per actor (a token's subject or the caller's agent, else ``local``; classified by the route's
  permission into remember / recall / mutate / other), per provider (embedding and LLM calls)
  and per connector (empty until connectors exist).
- **Errors**: a ring of the last :data:`ERROR_CAPACITY` entries, each with a stage and a code
  from :data:`ERROR_CODES`; totals by stage and code count every error since start, evicted or not.
- **Latency**: per operation and per route, the last :data:`WINDOW` samples (p50/p95/p99 over
  them) plus cumulative count, sum and Prometheus buckets (never reset, as Prometheus expects).

Pure and thread-safe: no FastAPI, no database. The daemon's middleware and the services'
listeners (signet.ops.observe) feed it; the analytics routes and ``/metrics`` read it.
"""

from __future__ import annotations

import math
import threading
import time
from array import array
from bisect import bisect_left
from collections import Counter, deque
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final, Literal

ERROR_CAPACITY: Final = 500
"""Entries the error ring keeps (the spec's default); the oldest is evicted first."""
WINDOW: Final = 1000
"""Samples each latency histogram keeps for its percentiles (the spec's ring of 1,000)."""
MAX_ACTORS: Final = 256
"""Distinct actors counted one by one; later ones share :data:`OTHER_ACTORS` (bounded memory
whatever names callers send)."""
OTHER_ACTORS: Final = "(other)"
MESSAGE_MAX: Final = 300

BOUNDS_MS: Final = (1.0, 2.5, 5.0, 10.0, 25.0, 50.0, 100.0, 250.0, 500.0, 1000.0, 2500.0, 5000.0, 10000.0, 30000.0)
"""Histogram bucket upper bounds in milliseconds (``/metrics`` gives them in seconds)."""

KINDS: Final = ("remember", "recall", "mutate", "other")
"""How a request is classified for actors (the spec's path-pattern classes)."""
_KIND_INDEX: Final = {k: i for i, k in enumerate(KINDS)}
OPERATIONS: Final = ("remember", "recall", "mutate", "search", "embed", "llm", "jobs")
"""Latency groups: remember / recall / mutate are whole requests of those kinds; ``search`` is
the recall engine's own time (every caller: HTTP, hooks, MCP, the pipeline's candidate
search); ``embed`` and ``llm`` are provider calls; ``jobs`` are pipeline jobs."""

Stage = Literal["extraction", "decision", "embedding", "mutation", "connector", "llm", "jobs", "http"]
ErrorCode = Literal[
    "EXTRACTION_TIMEOUT",
    "EXTRACTION_PARSE_FAIL",
    "DECISION_TIMEOUT",
    "DECISION_INVALID",
    "EMBEDDING_PROVIDER_DOWN",
    "EMBEDDING_TIMEOUT",
    "MUTATION_CONFLICT",
    "MUTATION_SCOPE_DENIED",
    "CONNECTOR_SYNC_FAIL",
    "CONNECTOR_AUTH_FAIL",
    "LLM_TIMEOUT",
    "LLM_PROVIDER_FAIL",
    "JOB_FAILED",
    "HTTP_SERVER_ERROR",
]

ERROR_CODES: Final[dict[ErrorCode, Stage]] = {
    # The spec's taxonomy, by stage.
    "EXTRACTION_TIMEOUT": "extraction",
    "EXTRACTION_PARSE_FAIL": "extraction",
    "DECISION_TIMEOUT": "decision",
    "DECISION_INVALID": "decision",
    "EMBEDDING_PROVIDER_DOWN": "embedding",
    "EMBEDDING_TIMEOUT": "embedding",
    "MUTATION_CONFLICT": "mutation",
    "MUTATION_SCOPE_DENIED": "mutation",
    "CONNECTOR_SYNC_FAIL": "connector",
    "CONNECTOR_AUTH_FAIL": "connector",
    # Signet's additions: failures the spec's codes do not name.
    "LLM_TIMEOUT": "llm",  # an LLM call for another purpose (handoff summary) timed out
    "LLM_PROVIDER_FAIL": "llm",  # an LLM call failed without timing out (refused, HTTP error)
    "JOB_FAILED": "jobs",  # a pipeline job raised (its error is on the job row too)
    "HTTP_SERVER_ERROR": "http",  # a request answered 5xx
}
"""Every error code and its stage. The daemon maps its answers and the services' failures to
these (signet.ops.observe, signet.daemon.analytics_middleware)."""

current_route: ContextVar[str | None] = ContextVar("signet_current_route", default=None)
"""The route (``POST /api/memory/recall``) of the request being served, set by the daemon's
middleware: a recall listener reads it to tell a caller's recall (``surface``) from the
pipeline's internal one (None). Worker threads inherit it (Starlette copies the context)."""


def percentile(sorted_values: list[float], p: float) -> float:
    """Nearest-rank percentile of an ascending list (not empty)."""
    k = max(0, min(len(sorted_values) - 1, math.ceil(p / 100 * len(sorted_values)) - 1))
    return sorted_values[k]


class LatencyHistogram:
    """The last ``window`` samples in a preallocated ring (for percentiles) plus cumulative
    count, sum and bucket counts (for Prometheus). Not locked itself: :class:`Analytics`
    holds its lock around every call."""

    __slots__ = ("_filled", "_next", "_ring", "_size", "buckets", "count", "total_ms")

    def __init__(self, window: int = WINDOW) -> None:
        self._ring = array("d", bytes(8 * window))
        self._size = window
        self._next = 0
        self._filled = 0
        self.count = 0
        self.total_ms = 0.0
        self.buckets = [0] * (len(BOUNDS_MS) + 1)  # the last one is +Inf

    def observe(self, ms: float) -> None:
        i = self._next
        self._ring[i] = ms
        i += 1
        if i == self._size:
            i = 0
        self._next = i
        if self._filled < self._size:
            self._filled += 1
        self.count += 1
        self.total_ms += ms
        self.buckets[bisect_left(BOUNDS_MS, ms)] += 1

    def samples(self) -> list[float]:
        """A copy of the window (taken under the caller's lock; sorted outside it)."""
        return self._ring[: self._filled].tolist()


def latency_snapshot(count: int, total_ms: float, samples: list[float]) -> dict[str, Any]:
    """What the API shows for one histogram: percentiles over the window, count and mean
    over everything since start. Milliseconds, rounded to microseconds."""
    samples.sort()
    if not samples:
        return {"count": count, "mean": None, "p50": None, "p95": None, "p99": None, "window": 0}
    return {
        "count": count,
        "mean": round(total_ms / count, 3),
        "p50": round(percentile(samples, 50), 3),
        "p95": round(percentile(samples, 95), 3),
        "p99": round(percentile(samples, 99), 3),
        "window": len(samples),
    }


@dataclass(frozen=True, slots=True)
class ErrorEntry:
    ts: float
    stage: Stage
    code: ErrorCode
    message: str
    memory_id: str | None = None
    actor: str | None = None
    route: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "at": datetime.fromtimestamp(self.ts, UTC).isoformat(timespec="milliseconds"),
            "stage": self.stage,
            "code": self.code,
            "message": self.message,
            "memory_id": self.memory_id,
            "actor": self.actor,
            "route": self.route,
        }


class _Endpoint:
    __slots__ = ("calls", "errors", "hist")

    def __init__(self, window: int) -> None:
        self.calls = 0
        self.errors = 0
        self.hist = LatencyHistogram(window)


class _Provider:
    __slots__ = ("calls", "failures", "hist", "timeouts")

    def __init__(self, window: int) -> None:
        self.calls = 0
        self.failures = 0
        self.timeouts = 0
        self.hist = LatencyHistogram(window)


class Analytics:
    """The daemon's in-memory counters. Every method is safe from any thread; none blocks on
    I/O, and the lock is held only for the few assignments of one record."""

    def __init__(
        self,
        *,
        error_capacity: int = ERROR_CAPACITY,
        window: int = WINDOW,
        max_actors: int = MAX_ACTORS,
        clock: Any = time.time,
    ) -> None:
        self.window = window
        self.max_actors = max_actors
        self.clock = clock
        self.started_at: float = clock()
        self._lock = threading.Lock()
        self._endpoints: dict[str, _Endpoint] = {}
        self._actors: dict[str, list[int]] = {}
        self._providers: dict[str, _Provider] = {}
        self._connectors: dict[str, dict[str, int]] = {}
        self._ops = {op: LatencyHistogram(window) for op in OPERATIONS}
        self._errors: deque[ErrorEntry] = deque(maxlen=error_capacity)
        self._error_totals: Counter[ErrorCode] = Counter()
        self.requests = 0
        self.request_errors = 0

    # -- recording ---------------------------------------------------------------------------
    def record_request(self, route: str, kind: str, actor: str, status: int, ms: float) -> None:
        """One HTTP request: its route template, kind (one of :data:`KINDS`), actor, status
        and time to last byte."""
        failed = status >= 400
        with self._lock:
            self.requests += 1
            ep = self._endpoints.get(route)
            if ep is None:
                ep = self._endpoints[route] = _Endpoint(self.window)
            ep.calls += 1
            if failed:
                ep.errors += 1
                self.request_errors += 1
            ep.hist.observe(ms)
            if kind != "other":
                self._ops[kind].observe(ms)
            counts = self._actors.get(actor)
            if counts is None:
                if len(self._actors) >= self.max_actors:
                    actor = OTHER_ACTORS
                counts = self._actors.setdefault(actor, [0, 0, 0, 0])
            counts[_KIND_INDEX[kind]] += 1

    def observe(self, operation: str, ms: float) -> None:
        """A latency sample for one of :data:`OPERATIONS` (``search``, ``jobs``...)."""
        with self._lock:
            self._ops[operation].observe(ms)

    def record_provider(self, kind: str, name: str, outcome: str, ms: float) -> None:
        """One provider call: ``kind`` is ``embedding`` or ``llm``; ``outcome`` is ``success``,
        ``failure`` or ``timeout``. Its latency also feeds the ``embed`` / ``llm`` operation."""
        key = f"{kind}:{name}"
        with self._lock:
            p = self._providers.get(key)
            if p is None:
                p = self._providers[key] = _Provider(self.window)
            p.calls += 1
            if outcome == "timeout":
                p.timeouts += 1
            elif outcome != "success":
                p.failures += 1
            p.hist.observe(ms)
            self._ops["embed" if kind == "embedding" else "llm"].observe(ms)

    def record_connector(self, name: str, *, syncs: int = 0, errors: int = 0, documents: int = 0) -> None:
        """A connector's sync (signet.documents.connectors, through the runtime)."""
        with self._lock:
            c = self._connectors.setdefault(name, {"syncs": 0, "errors": 0, "documents": 0})
            c["syncs"] += syncs
            c["errors"] += errors
            c["documents"] += documents

    def record_error(
        self,
        code: ErrorCode,
        message: str,
        *,
        memory_id: str | None = None,
        actor: str | None = None,
        route: str | None = None,
    ) -> None:
        """Add one entry to the ring; ``code`` must be one of :data:`ERROR_CODES` (its stage
        comes from there). Messages are cut to :data:`MESSAGE_MAX` characters; callers pass
        what went wrong, never memory content."""
        stage = ERROR_CODES[code]
        entry = ErrorEntry(self.clock(), stage, code, message[:MESSAGE_MAX], memory_id, actor, route)
        with self._lock:
            self._errors.append(entry)
            self._error_totals[code] += 1

    # -- reading -----------------------------------------------------------------------------
    def errors(
        self, *, stage: str | None = None, code: str | None = None, since: float | None = None, limit: int = 100
    ) -> list[dict[str, Any]]:
        """Newest first, filtered."""
        with self._lock:
            entries = list(self._errors)
        out: list[dict[str, Any]] = []
        for e in reversed(entries):
            if len(out) >= limit:
                break
            if (
                (stage is None or e.stage == stage)
                and (code is None or e.code == code)
                and (since is None or e.ts >= since)
            ):
                out.append(e.to_dict())
        return out

    def error_summary(self) -> dict[str, Any]:
        """Totals since start (evicted entries included) and what the ring holds now."""
        with self._lock:
            totals = dict(self._error_totals)
            buffered = len(self._errors)
            capacity = self._errors.maxlen
        by_stage: Counter[Stage] = Counter()
        for code, n in totals.items():
            by_stage[ERROR_CODES[code]] += n
        return {
            "total": sum(totals.values()),
            "buffered": buffered,
            "capacity": capacity,
            "by_stage": dict(sorted(by_stage.items())),
            "by_code": dict(sorted(totals.items())),
        }

    def error_totals(self) -> dict[ErrorCode, int]:
        with self._lock:
            return dict(self._error_totals)

    def usage(self) -> dict[str, Any]:
        with self._lock:
            endpoints = {r: (e.calls, e.errors, e.hist.count, e.hist.total_ms) for r, e in self._endpoints.items()}
            actors = {a: list(c) for a, c in self._actors.items()}
            providers = {k: (p.calls, p.failures, p.timeouts, p.hist.total_ms) for k, p in self._providers.items()}
            connectors = {k: dict(v) for k, v in self._connectors.items()}
            requests, request_errors = self.requests, self.request_errors
        return {
            "since": datetime.fromtimestamp(self.started_at, UTC).isoformat(timespec="seconds"),
            "uptime_s": round(self.clock() - self.started_at, 3),
            "totals": {"requests": requests, "errors": request_errors},
            "endpoints": {
                r: {
                    "calls": calls,
                    "errors": errs,
                    "total_ms": round(total, 3),
                    "mean_ms": round(total / n, 3) if n else None,
                }
                for r, (calls, errs, n, total) in sorted(endpoints.items())
            },
            "actors": {a: {**dict(zip(KINDS, c, strict=True)), "total": sum(c)} for a, c in sorted(actors.items())},
            "providers": {
                k: {
                    "calls": calls,
                    "failures": fails,
                    "timeouts": touts,
                    "mean_ms": round(total / calls, 3) if calls else None,
                }
                for k, (calls, fails, touts, total) in sorted(providers.items())
            },
            "connectors": connectors,
        }

    def latency(self) -> dict[str, Any]:
        with self._lock:
            ops = {op: (h.count, h.total_ms, h.samples()) for op, h in self._ops.items()}
            routes = {r: (e.hist.count, e.hist.total_ms, e.hist.samples()) for r, e in self._endpoints.items()}
        return {
            "unit": "ms",
            "operations": {op: latency_snapshot(*v) for op, v in ops.items()},
            "routes": {r: latency_snapshot(*v) for r, v in sorted(routes.items())},
        }

    def histograms(self) -> dict[str, dict[str, tuple[int, float, list[int]]]]:
        """Cumulative (count, sum_ms, bucket counts) for ``/metrics``: ``operations`` and
        ``routes``. Bucket counts are per bucket (not cumulative), the last one +Inf."""
        with self._lock:
            return {
                "operations": {op: (h.count, h.total_ms, list(h.buckets)) for op, h in self._ops.items()},
                "routes": {
                    r: (e.hist.count, e.hist.total_ms, list(e.hist.buckets)) for r, e in self._endpoints.items()
                },
            }
