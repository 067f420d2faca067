"""The maintenance worker: diagnose, plan repairs, log them (``observe``) or run them
(``execute``), and stop repeating a repair that does not help (spec 001, "Maintenance worker").

One cycle:

1. ``diagnose`` (signet.ops.diagnostics); each fault a repair fixes carries the action and a
   *signal*, the number the repair should bring down (dead jobs, stale leases, index rows
   out of step, lost vectors, orphaned rows, tombstones);
2. the repairs that ran in the previous cycle are judged on this report: the fault is gone
   (fixed), or its signal fell or its domain's score rose (it helped), or neither (a strike).
   After :data:`HALT_AFTER` strikes in a row the action is *halted*: planned but not run, and
   said so in ``GET /api/repair/maintenance``, in diagnostics and in ``/health``. Judging on
   the next cycle and not right after the run is what catches a repair whose effect does not
   last: requeued jobs that die again look fixed for a moment;
3. the plan: one entry per action, ``planned`` (observe), ``done``/``noop`` (ran), ``refused``
   (by the gate, with when to retry), ``failed``, or ``halted``;
4. after running anything, a second ``diagnose`` gives the scores after.

The worker's cycles run as ``system`` through the repair gate (its own cooldowns and budget);
``POST /api/repair/maintenance/run`` and ``signet doctor --fix`` run one cycle as the operator
who asked. ``/health`` says ``degraded`` while any diagnosed fault has a repair to run or a
halted one: set from every cycle and every ``GET /api/diagnostics``.

After a scheduled cycle, the worker runs its *upkeep*: derived data kept current on the same
timer, under the same one-daemon-at-a-time lock (today the knowledge graph's entity
communities, signet.knowledge.community_upkeep, which skips an agent whose graph did not
change). The runtime wires it (:attr:`Maintenance.upkeep`): signet.ops does not import the
engines it would call. A failing upkeep task is logged and shown in the status; the others run.

The interval timer runs only while ``autonomous.enabled`` and not ``autonomous.frozen``
(spec); a cycle asked for by hand runs either way (a frozen gate then refuses every repair).

Between cycles, ``/health`` and ``/api/status`` keep themselves current: each asks for a
*watch* (:meth:`Maintenance.poke`) when the last diagnosis is older than
:data:`WATCH_EVERY_S` (or 20 times what the last watch took, on a large store: a watch is about
0.5 s at 100,000 memories, so constant polling costs at most 5% of a core), and the worker's
thread diagnoses again (without SQLite's full
quick_check) and sets what they say. They answer at once with what is known; a fault that
appears between cycles shows on the next poll, not at the next cycle. Nobody polling costs
nothing.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal, Protocol

from signet.condition import Condition
from signet.errors import RateLimited, SignetError
from signet.ops.diagnostics import diagnose
from signet.ops.repair_gate import RepairGate
from signet.ops.repairs import SYSTEM, Caller, Repairs, RepairSources
from signet.store.sqlite import sqlite3

log = logging.getLogger(__name__)

Mode = Literal["observe", "execute"]

HALT_AFTER = 3
"""Consecutive cycles a repair may run without improving its domain before it is halted."""

WATCH_EVERY_S = 5.0
"""A poll of /health or /api/status asks for a fresh diagnosis when the last is this old..."""
WATCH_COST_FACTOR = 20.0
"""... or this many times what the last watch took, whichever is longer."""

CONDITION = "maintenance"
"""The cause /health and /api/status show while faults stand (signet.condition)."""


class MaintenanceSources(RepairSources, Protocol):
    @property
    def condition(self) -> Condition: ...


@dataclass
class PlannedRepair:
    action: str
    domain: str
    finding: str
    signal: float
    params: dict[str, Any] = field(default_factory=dict)
    status: str = "planned"
    """planned, done, noop, refused, failed or halted."""
    result: str | None = None
    retry_after: int | None = None


@dataclass
class Track:
    """What the halt tracker remembers of one action."""

    action: str
    domain: str
    strikes: int = 0
    halted: bool = False
    halted_at: str | None = None
    finding: str = ""
    ran: bool = False
    """It ran in the last cycle: the next cycle judges it."""
    score_before: float = 1.0
    signal_before: float = 0.0
    history: list[dict[str, Any]] = field(default_factory=list)
    """The last judgements: signal and score before and after."""


@dataclass
class Cycle:
    at: str
    mode: Mode
    actor: str
    duration_ms: float
    score_before: float
    score_after: float
    domains_before: dict[str, float]
    domains_after: dict[str, float]
    plan: list[PlannedRepair]


def plan_from(report: dict[str, Any]) -> list[PlannedRepair]:
    """The repairs a diagnostics report asks for, one per action (signals of one action add up)."""
    out: dict[str, PlannedRepair] = {}
    for name, domain in report["domains"].items():
        for hint in domain.get("repairs", ()):
            action = str(hint["action"])
            if action in out:
                out[action].signal += float(hint["signal"])
                out[action].finding += f"; {hint['finding']}"
            else:
                out[action] = PlannedRepair(
                    action, name, str(hint["finding"]), float(hint["signal"]), dict(hint.get("params") or {})
                )
    return list(out.values())


class Maintenance:
    def __init__(self, src: MaintenanceSources) -> None:
        self.src = src
        pipeline = src.settings.memory.pipeline
        self.settings = pipeline.autonomous
        self.gate = RepairGate(pipeline.autonomous, pipeline.repair)
        self.repairs = Repairs(src, self.gate)
        self._tracks: dict[str, Track] = {}
        self._lock = threading.Lock()
        """Guards the tracker and the last cycle (status reads them from request threads)."""
        self._cycle_lock = threading.Lock()
        """One cycle at a time (the timer's and one asked for by hand)."""
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._watch = threading.Event()
        self._noted_at = 0.0
        self._watch_every = WATCH_EVERY_S
        self._thread: threading.Thread | None = None
        self.last: Cycle | None = None
        self.cycles = 0
        self.last_error: str | None = None
        self._next_at: float | None = None
        self.upkeep: list[tuple[str, Callable[[], str]]] = []
        """(name, task) run after each scheduled cycle; a task returns what it did, in a few words."""
        self.upkeep_last: dict[str, dict[str, Any]] = {}

    # -- lifecycle ---------------------------------------------------------------------------
    @property
    def scheduled(self) -> bool:
        """Whether the interval timer runs (spec: only while enabled and not frozen)."""
        return self.settings.enabled and not self.settings.frozen

    def start(self) -> None:
        """The thread runs cycles on the interval when :attr:`scheduled`, and watches either way."""
        if self._thread is not None:
            return
        self._stop.clear()
        self._watch.set()  # a first look at start: faults left from before show right away
        self._wake.set()
        self._thread = threading.Thread(target=self._loop, name="signet-maintenance", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=30)
            self._thread = None

    def poke(self) -> None:
        """Ask for a watch when the last diagnosis is stale (cheap: a clock read and a flag)."""
        if self._thread is not None and time.monotonic() - self._noted_at >= self._watch_every:
            self._watch.set()
            self._wake.set()

    def _loop(self) -> None:
        interval = self.settings.maintenance_interval_ms / 1000
        self._next_at = time.monotonic() + interval if self.scheduled else None
        while not self._stop.is_set():
            wait = None if self._next_at is None else max(0.0, self._next_at - time.monotonic())
            self._wake.wait(wait)
            self._wake.clear()
            if self._stop.is_set():
                return
            try:
                if self._next_at is not None and time.monotonic() >= self._next_at:
                    self._watch.clear()
                    with self.src.db.exclusive("maintenance") as mine:  # one daemon of a store's at a time
                        if mine:
                            self.run_cycle(self.settings.maintenance_mode, SYSTEM)
                            self.run_upkeep()
                        else:
                            log.info("maintenance cycle skipped: another daemon on the store runs one")
                    self._next_at = time.monotonic() + interval
                elif self._watch.is_set():
                    self._watch.clear()
                    self.watch()
            except RuntimeError as exc:  # the database closed under us at shutdown
                if self._stop.is_set():
                    return
                self._failed(exc)
            except (SignetError, sqlite3.Error, OSError) as exc:  # a damaged or full store: said, retried next time
                self._failed(exc)
            except Exception as exc:  # a bug must not stop the worker for good: logged with its traceback
                log.exception("maintenance: a cycle crashed")
                self._failed(exc)
            if self._next_at is not None and time.monotonic() >= self._next_at:
                self._next_at = time.monotonic() + interval  # a failed cycle waits a whole interval too

    def watch(self) -> None:
        """Diagnose (without quick_check) and set what /health says; skipped while a cycle runs
        (the cycle sets it)."""
        if not self._cycle_lock.acquire(blocking=False):
            return
        try:
            started = time.monotonic()
            self.note(diagnose(self.src, integrity=False))
            self._watch_every = max(WATCH_EVERY_S, WATCH_COST_FACTOR * (time.monotonic() - started))
        finally:
            self._cycle_lock.release()

    def run_upkeep(self) -> dict[str, dict[str, Any]]:
        """Run every upkeep task; one's failure is logged and recorded, and the next still runs."""
        for name, task in self.upkeep:
            started = time.perf_counter()
            try:
                outcome, error = task(), None
            except RuntimeError:  # the database closed under us at shutdown: the loop decides
                raise
            except (SignetError, sqlite3.Error, OSError) as exc:  # a damaged or full store: said, retried next time
                outcome, error = None, f"{type(exc).__name__}: {exc}"[:300]
                log.warning("maintenance upkeep %s failed: %s", name, error)
            except Exception as exc:  # e.g. a PostgreSQL error; a bug must not stop the other tasks
                outcome, error = None, f"{type(exc).__name__}: {exc}"[:300]
                log.exception("maintenance upkeep %s crashed", name)
            with self._lock:
                self.upkeep_last[name] = {
                    "at": datetime.now(UTC).isoformat(),
                    "result": outcome,
                    "error": error,
                    "duration_ms": round((time.perf_counter() - started) * 1000, 1),
                }
        with self._lock:
            return {k: dict(v) for k, v in self.upkeep_last.items()}

    def _failed(self, exc: BaseException) -> None:
        self.last_error = f"{type(exc).__name__}: {exc}"[:500]
        log.warning("maintenance cycle failed: %s", self.last_error)

    # -- one cycle ---------------------------------------------------------------------------
    def run_cycle(self, mode: Mode | None = None, caller: Caller = SYSTEM) -> Cycle:
        """Diagnose, judge the last cycle's repairs, plan, and (``execute``) run the plan."""
        mode = mode or self.settings.maintenance_mode
        with self._cycle_lock:
            started = time.perf_counter()
            report = diagnose(self.src)
            plan = plan_from(report)
            with self._lock:
                self._judge(report, plan)
                halted = {a for a, t in self._tracks.items() if t.halted}
            ran = False
            for p in plan:
                if p.action in halted:
                    p.status = "halted"
                    p.result = f"halted: {HALT_AFTER} cycles did not improve {p.domain}; fix the cause, see the finding"
                    continue
                if mode == "observe":
                    log.info("maintenance (observe): would run %s (%s): %s", p.action, p.domain, p.finding)
                    continue
                self._execute(p, caller, report)
                ran = ran or p.status in ("done", "noop")
            after = diagnose(self.src) if ran else report
            cycle = Cycle(
                at=datetime.now(UTC).isoformat(),
                mode=mode,
                actor=caller.actor,
                duration_ms=round((time.perf_counter() - started) * 1000, 1),
                score_before=report["score"],
                score_after=after["score"],
                domains_before={n: d["score"] for n, d in report["domains"].items()},
                domains_after={n: d["score"] for n, d in after["domains"].items()},
                plan=plan,
            )
            with self._lock:
                self.last = cycle
                self.cycles += 1
                self.last_error = None
            self.note(after)
            return cycle

    def _execute(self, p: PlannedRepair, caller: Caller, report: dict[str, Any]) -> None:
        try:
            result = self.repairs.run(p.action, caller, reason=p.finding, **p.params)
        except RateLimited as exc:
            p.status, p.result, p.retry_after = "refused", exc.message, exc.retry_after
            return
        except SignetError as exc:  # frozen, or the action's own refusal
            p.status, p.result = "refused" if exc.status in (403, 503) else "failed", exc.message
            return
        except (sqlite3.Error, OSError) as exc:
            p.status, p.result = "failed", f"{type(exc).__name__}: {exc}"[:300]
            return
        p.status = "done" if result.affected else "noop"
        p.result = result.message
        with self._lock:
            t = self._tracks.setdefault(p.action, Track(p.action, p.domain))
            t.ran = True
            t.finding = p.finding
            t.score_before = float(report["domains"][p.domain]["score"])
            t.signal_before = p.signal

    def _judge(self, report: dict[str, Any], plan: list[PlannedRepair]) -> None:
        """Strike or clear every tracked action against this report (call with the lock)."""
        wanted = {p.action: p for p in plan}
        for action, t in list(self._tracks.items()):
            p = wanted.get(action)
            if p is None:  # the fault is gone: fixed (or it went by itself); a halt is lifted
                if t.halted:
                    log.info("maintenance: %s no longer needed; its halt is lifted", action)
                del self._tracks[action]
                continue
            t.finding = p.finding
            if not t.ran:
                continue
            t.ran = False
            score = float(report["domains"][t.domain]["score"])
            improved = p.signal < t.signal_before or score > t.score_before + 1e-9
            t.history = [
                *t.history[-(HALT_AFTER - 1) :],
                {
                    "signal_before": t.signal_before,
                    "signal_after": p.signal,
                    "score_before": round(t.score_before, 4),
                    "score_after": round(score, 4),
                    "improved": improved,
                },
            ]
            if improved:
                t.strikes = 0
                continue
            t.strikes += 1
            if t.strikes >= HALT_AFTER and not t.halted:
                t.halted = True
                t.halted_at = datetime.now(UTC).isoformat()
                log.warning(
                    "maintenance: %s halted: %d cycles in a row did not improve %s (%s)",
                    action,
                    t.strikes,
                    t.domain,
                    p.finding,
                )

    # -- what it tells --------------------------------------------------------------------------
    def halted(self) -> list[Track]:
        with self._lock:
            return [Track(**asdict(t)) for t in self._tracks.values() if t.halted]

    def note(self, report: dict[str, Any]) -> dict[str, Any]:
        """Add the halted repairs to a diagnostics report's findings, and set /health from it:
        degraded while a fault has a repair to run or a halted one. Returns the report."""
        self._noted_at = time.monotonic()
        halted = {t.action: t for t in self.halted()}
        plan = plan_from(report)
        for p in plan:
            t = halted.get(p.action)
            domain = report["domains"].get(p.domain)
            if t is not None and domain is not None:
                domain["findings"].append(
                    f"repair {t.action} halted: {t.strikes} cycles in a row did not improve {t.domain}; "
                    "the worker does not run it again while the fault stands (see GET /api/repair/maintenance)"
                )
        if not plan:
            self.src.condition.clear(CONDITION)
            return report
        parts = [
            f"{p.action} halted after {HALT_AFTER} ineffective cycles: " if p.action in halted else "" for p in plan
        ]
        message = " | ".join(f"{prefix}{p.finding}" for prefix, p in zip(parts, plan, strict=True))
        self.src.condition.report(CONDITION, f"maintenance: {message}")
        return report

    def status(self) -> dict[str, Any]:
        with self._lock:
            last = self.last
            tracks = [asdict(t) for t in self._tracks.values()]
            cycles, error = self.cycles, self.last_error
            upkeep = {k: dict(v) for k, v in self.upkeep_last.items()}
        next_at = self._next_at
        return {
            "enabled": self.settings.enabled,
            "frozen": self.settings.frozen,
            "mode": self.settings.maintenance_mode,
            "interval_ms": self.settings.maintenance_interval_ms,
            "scheduled": self.scheduled and self._thread is not None and self._thread.is_alive(),
            "next_cycle_in_s": round(max(0.0, next_at - time.monotonic()), 1) if next_at is not None else None,
            "cycles": cycles,
            "last_error": error,
            "last_cycle": asdict(last) if last is not None else None,
            "halted": [t for t in tracks if t["halted"]],
            "tracking": tracks,
            "gate": self.gate.snapshot(),
            "upkeep": upkeep,
        }
