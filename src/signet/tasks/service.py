"""Scheduled tasks: create, change, list, run now, the run history, and the scheduler thread.

Every program a task runs must be on ``tasks.allow`` (checked when the task is saved and
again when it runs: the list may have changed). A task never runs twice at once: a run that
comes due while the previous one is still going is recorded as ``skipped``, a manual run is
refused (409). Runs happen on a pool of ``tasks.maxConcurrent`` threads, with the daemon's
environment, in the task's directory, killed (with their process group) at their timeout.
When the daemon starts, fire times that passed while it was down are recorded as one
``missed`` run per task (how many, from when to when), never run late and never silently
dropped.

Several daemons on one PostgreSQL store (docs/team.md) all run the scheduler: a due run is
fired by the one daemon that moves the task's next run time on from it (a compare-and-set in
the transaction that records the run), a run on one daemon keeps the others from starting the
same task, and a daemon marks as interrupted only its own runs and those of daemons that are
gone (each run records its daemon's store node; signet.store.liveness).

A task may name secrets (signet.secrets): each run resolves them from the store when it starts
(a secret deleted since is an ``error`` run, never a run without it) and gets them as
environment variables; its output is redacted as it streams, with the secrets exec path's
redaction (signet.secrets.streaming), so the live stream, the stored run and the log only
ever hold ``[REDACTED:NAME]``.
"""

from __future__ import annotations

import codecs
import logging
import os
import threading
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Literal

from signet.config import TasksSettings
from signet.errors import Conflict, InvalidRequest, NotFound, SignetError
from signet.schedule import parse
from signet.secrets import commands, runner
from signet.secrets.names import check_name
from signet.secrets.redact import Redactor
from signet.secrets.store import SecretStore
from signet.secrets.streaming import StreamRedactor
from signet.store.backend import StorageBackend
from signet.tasks import rows
from signet.tasks.models import HARNESS_COMMANDS, Task, TaskCreate, TaskPatch, TaskRun, TaskRunList
from signet.tasks.stream import OutputHub

log = logging.getLogger(__name__)

IDLE_WAKE_S = 60.0
"""The scheduler looks again at least this often (a clock change, a missed wake-up)."""
MISSED_GRACE_S = 5.0
"""On PostgreSQL, how long past due a run must be before a starting daemon reports it missed
(a live daemon's scheduler fires a run within milliseconds of its time)."""


def _now() -> datetime:
    return datetime.now(UTC)


def _iso(t: datetime) -> str:
    return t.isoformat(timespec="milliseconds")


@dataclass
class _Active:
    run: TaskRun
    output: bytearray = field(default_factory=bytearray)
    truncated: bool = False
    decoders: dict[str, codecs.IncrementalDecoder] = field(default_factory=dict)
    redactor: Redactor | None = None
    """The values of the task's secrets, masked in its output (None: it has none)."""
    redacting: dict[str, StreamRedactor] = field(default_factory=dict)


class TaskService:
    def __init__(
        self, db: StorageBackend, settings: TasksSettings, workspace_root: Path, store: SecretStore | None = None
    ) -> None:
        self.db = db
        self.settings = settings
        self.workspace_root = workspace_root
        self.store = store
        """Where a task's secrets come from (None: tasks cannot name secrets)."""
        self.hub = OutputHub()
        self._lock = threading.Lock()
        self._active: dict[str, _Active] = {}
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self._cancel = threading.Event()
        self._thread: threading.Thread | None = None
        self._pool: ThreadPoolExecutor | None = None

    # --- lifecycle -------------------------------------------------------------------------

    def start(self) -> None:
        self._stopping.clear()
        self._cancel.clear()
        at = _iso(_now())
        me = self.db.node
        if self.db.write(lambda c: rows.interrupt_orphans(c, at, me)):
            log.warning("task runs were unfinished when their daemon stopped; marked interrupted")
        self._report_missed()
        self._pool = ThreadPoolExecutor(max_workers=self.settings.max_concurrent, thread_name_prefix="task-run")
        if self.settings.enabled:
            self._thread = threading.Thread(target=self._loop, name="task-scheduler", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        """Stop scheduling, kill running commands, end every output stream."""
        self._stopping.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=30)
            self._thread = None
        self._cancel.set()
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)  # running ones end as `cancelled`
            at = _iso(_now())
            me = self.db.node
            self.db.write(lambda c: rows.interrupt_mine(c, at, me))  # queued ones never started
        with self._lock:
            self._active.clear()
        self.hub.close()

    # --- tasks -----------------------------------------------------------------------------

    def _argv(self, command: list[str] | None, harness: str | None, prompt: str | None) -> list[str]:
        argv = [*HARNESS_COMMANDS[harness], prompt] if harness is not None and prompt is not None else command
        if not argv:
            raise InvalidRequest("a task needs a command, or a harness and a prompt")
        commands.resolve(argv[0], self.settings.allow, what="tasks.allow")
        return list(argv)

    def _cwd(self, cwd: str | None) -> str:
        if cwd is None:
            return str(self.workspace_root)
        if not Path(cwd).is_absolute() or not Path(cwd).is_dir():
            raise InvalidRequest(f"cwd {cwd[:200]!r} is not an absolute path to an existing directory")
        return cwd

    def _secrets(self, names: list[str]) -> list[str]:
        """Names a task may give its runs: valid, and stored now (a typo is said at once)."""
        names = [check_name(n) for n in dict.fromkeys(names)]
        if names and self.store is None:
            raise InvalidRequest("this daemon has no secret store; tasks cannot name secrets here")
        for name in names:
            if self.store is not None and not self.store.has(name):
                raise InvalidRequest(f"no secret named {name!r}; add it with `signet secret put {name}`")
        return names

    def _task(self, data: dict[str, Any]) -> Task:
        with self._lock:
            running = data["id"] in self._active
        return Task(**data, running=running)

    def create(self, req: TaskCreate) -> Task:
        schedule = parse(req.schedule)
        now = _now()
        data = {
            "id": uuid.uuid4().hex[:16],
            "name": req.name,
            "schedule": schedule.text,
            "command": self._argv(req.command, req.harness, req.prompt),
            "harness": req.harness,
            "prompt": req.prompt,
            "cwd": self._cwd(req.cwd),
            "timeout_s": req.timeout_s,
            "secrets": self._secrets(req.secrets),
            "enabled": req.enabled,
            "created_at": _iso(now),
            "updated_at": _iso(now),
            "next_run_at": _iso(schedule.next_after(now)) if req.enabled else None,
        }
        self.db.write(lambda c: rows.insert_task(c, data))
        self._wake.set()
        return self._task(data)

    def _get(self, task_id: str) -> dict[str, Any]:
        found = self.db.read(lambda c: rows.get_task(c, task_id))
        if found is None:
            raise NotFound(f"no task {task_id[:80]!r}")
        return found

    def get(self, task_id: str) -> Task:
        return self._task(self._get(task_id))

    def list_tasks(self) -> list[Task]:
        return [self._task(t) for t in self.db.read(rows.all_tasks)]

    def update(self, task_id: str, patch: TaskPatch) -> Task:
        current = self._get(task_id)
        changes = patch.model_dump(exclude_unset=True)
        if any(v is None for v in changes.values()):
            raise InvalidRequest("a field cannot be set to null; leave it out to keep it")
        if "command" in changes and current["harness"] is not None:
            raise InvalidRequest("this task runs a harness prompt: change 'prompt', not 'command'")
        if "prompt" in changes and current["harness"] is None:
            raise InvalidRequest("this task runs a command: change 'command', not 'prompt'")
        fields: dict[str, Any] = {k: v for k, v in changes.items() if k in ("name", "timeout_s", "enabled", "prompt")}
        if "cwd" in changes:
            fields["cwd"] = self._cwd(changes["cwd"])
        if "secrets" in changes:
            fields["secrets"] = self._secrets(changes["secrets"])
        if "command" in changes or "prompt" in changes:
            fields["command"] = self._argv(
                changes.get("command"), current["harness"], changes.get("prompt", current["prompt"])
            )
        schedule = parse(changes.get("schedule", current["schedule"]))
        fields["schedule"] = schedule.text
        now = _now()
        enabled = changes.get("enabled", current["enabled"])
        if "schedule" in changes or "enabled" in changes:
            fields["next_run_at"] = _iso(schedule.next_after(now)) if enabled else None
        fields["updated_at"] = _iso(now)
        self.db.write(lambda c: rows.update_task(c, task_id, fields))
        self._wake.set()
        return self.get(task_id)

    def delete(self, task_id: str) -> None:
        if not self.db.write(lambda c: rows.delete_task(c, task_id)):
            raise NotFound(f"no task {task_id[:80]!r}")

    # --- runs ------------------------------------------------------------------------------

    def runs(self, task_id: str, limit: int, offset: int) -> TaskRunList:
        self._get(task_id)
        items, total = self.db.read(lambda c: rows.runs_of(c, task_id, limit, offset))
        return TaskRunList(items=items, total=total, limit=limit, offset=offset)

    def active_output(self, task_id: str) -> tuple[TaskRun, str] | None:
        """The run in progress and its output so far (a stream that joins late starts here)."""
        with self._lock:
            active = self._active.get(task_id)
            if active is None:
                return None
            return active.run, active.output.decode("utf-8", errors="replace")

    def run_now(self, task_id: str) -> TaskRun:
        """Start a run of the task now; 409 while one is running."""
        run = self._fire(self._get(task_id), "manual", None)
        assert run is not None  # only a scheduled firing can be another daemon's
        return run

    def _fire(
        self, task: dict[str, Any], trigger: Literal["schedule", "manual"], due: str | None, nxt: str | None = None
    ) -> TaskRun | None:
        """Record and start a run. A scheduled one (``nxt``: the task's next run time after
        ``due``) is fired only by the daemon that advances the task from ``due`` to ``nxt``;
        None when another daemon did. A task already running here or on another daemon gets
        a ``skipped`` run (scheduled) or a 409 (manual)."""
        pool = self._pool
        if pool is None:
            raise SignetError("tasks are not running (the runtime is stopped)", code="daemon_unavailable")
        now = _iso(_now())
        run = TaskRun(
            id=uuid.uuid4().hex,
            task_id=task["id"],
            trigger=trigger,
            status="running",
            scheduled_for=due,
            started_at=now,
            finished_at=None,
            exit_code=None,
            output="",
            truncated=False,
            error=None,
        )
        with self._lock:
            busy_here = task["id"] in self._active
            if not busy_here:
                self._active[task["id"]] = _Active(run)
        if busy_here and trigger == "manual":
            raise Conflict(f"task {task['name']!r} is already running; runs of one task never overlap")
        me, keep = self.db.node, self.settings.keep_runs

        def record(c: Any) -> TaskRun | None:
            if nxt is not None and due is not None and not rows.advance(c, task["id"], due, nxt):
                return None
            if busy_here or rows.running_elsewhere(c, task["id"], me):
                if trigger == "manual":
                    raise Conflict(
                        f"task {task['name']!r} is already running on another daemon; runs of one task never overlap"
                    )
                skipped = run.model_copy(
                    update={"status": "skipped", "finished_at": now, "error": "the previous run was still running"}
                )
                rows.insert_run(c, skipped, keep)
                return skipped
            rows.insert_run(c, run, keep, runner=me)
            return run

        try:
            recorded = self.db.write(record)
            if recorded is run:
                self.hub.publish(task["id"], "run", {"run_id": run.id, "trigger": trigger, "started_at": now})
                pool.submit(self._execute, task, run)
        except BaseException:
            if not busy_here:
                with self._lock:
                    self._active.pop(task["id"], None)
            raise
        if recorded is not run and not busy_here:
            with self._lock:
                self._active.pop(task["id"], None)
        return recorded

    def _on_output(self, task_id: str, stream: str, chunk: bytes, *, last: bool = False) -> None:
        """Keep and publish a chunk of output, its secrets masked first (``last``: the stream
        ended; what redaction held back goes out now)."""
        limit = self.settings.max_output_bytes
        with self._lock:
            active = self._active.get(task_id)
            if active is None:
                return
            if active.redactor is not None:
                redacting = active.redacting.setdefault(stream, StreamRedactor(active.redactor))
                chunk = redacting.flush() if last else redacting.feed(chunk)
            if not chunk:
                return
            room = limit - len(active.output)
            if room > 0:
                active.output += chunk[:room]
            if len(chunk) > room:
                active.truncated = True
            decoder = active.decoders.setdefault(stream, codecs.getincrementaldecoder("utf-8")(errors="replace"))
            text = decoder.decode(chunk)
            run_id = active.run.id
        if text:
            self.hub.publish(task_id, "output", {"run_id": run_id, "stream": stream, "text": text})

    def _execute(self, task: dict[str, Any], run: TaskRun) -> None:
        task_id = task["id"]
        fields: dict[str, Any]
        redactor = Redactor()
        try:
            try:
                program = commands.resolve(task["command"][0], self.settings.allow, what="tasks.allow")
                values = self._values(task)
                redactor = Redactor.of(values)
                with self._lock:
                    if values and task_id in self._active:
                        self._active[task_id].redactor = redactor
                out = runner.run(
                    [program, *task["command"][1:]],
                    env={**os.environ, **values},
                    cwd=Path(task["cwd"]),
                    timeout_s=task["timeout_s"] or self.settings.timeout_s,
                    keep=0,
                    cancel=self._cancel,
                    on_output=lambda stream, chunk: self._on_output(task_id, stream, chunk),
                )
            except SignetError as exc:
                fields = {"status": "error", "error": redactor.text(exc.message)}
            except OSError as exc:
                said = f"could not start {task['command'][0]}: {exc.strerror or exc}"
                fields = {"status": "error", "error": redactor.text(said)}
            else:
                for stream in ("stdout", "stderr"):  # what redaction held back to see past a cut
                    self._on_output(task_id, stream, b"", last=True)
                status = "timeout" if out.timed_out else "cancelled" if out.cancelled else "done"
                error = None
                if out.timed_out:
                    error = f"killed after the {task['timeout_s'] or self.settings.timeout_s:g} s timeout"
                elif out.cancelled:
                    error = "killed: the daemon is stopping"
                fields = {"status": status, "exit_code": out.exit_code, "error": error}
            with self._lock:
                active = self._active.get(task_id)
                if active is not None:
                    fields["output"] = active.output.decode("utf-8", errors="replace")
                    fields["truncated"] = active.truncated
            fields["finished_at"] = _iso(_now())
            self.db.write(lambda c: rows.update_run(c, run.id, fields))
        except Exception:  # a worker thread has no caller: say what failed, in the log
            log.exception("task run %s of %s failed", run.id, task_id)
            fields = {"status": "error", "error": "internal error; see the daemon log"}
        finally:
            with self._lock:
                self._active.pop(task_id, None)
            done = {"run_id": run.id, "status": fields["status"], "exit_code": fields.get("exit_code")}
            self.hub.publish(task_id, "done", done)

    def _values(self, task: dict[str, Any]) -> dict[str, str]:
        """The task's secrets, read from the store as the run starts."""
        names: list[str] = task.get("secrets") or []
        if not names:
            return {}
        if self.store is None:
            raise SignetError("this daemon has no secret store; the task's secrets cannot be given to it")
        values = self.store.values(names)
        log.info("task %s run uses secrets %s", task["id"], ",".join(names))
        return values

    # --- the scheduler ---------------------------------------------------------------------

    def _report_missed(self) -> None:
        now = _now()
        # On PostgreSQL another daemon may be about to fire a run that just came due: only a
        # fire time older than its scheduler's reach is missed (SQLite: this is the only daemon).
        cutoff = now - timedelta(seconds=MISSED_GRACE_S) if self.db.dialect == "postgres" else now
        for task in self.db.read(rows.all_tasks):
            if not task["enabled"] or task["next_run_at"] is None:
                continue
            due = datetime.fromisoformat(task["next_run_at"])
            if due > cutoff:
                continue
            try:
                schedule = parse(task["schedule"])
            except InvalidRequest as exc:  # saved under other rules: say so, keep starting
                log.error("task %s has a schedule this version cannot read: %s", task["id"], exc.message)
                continue
            count, last = schedule.missed(due, now)
            missed = TaskRun(
                id=uuid.uuid4().hex,
                task_id=task["id"],
                trigger="schedule",
                status="missed",
                scheduled_for=task["next_run_at"],
                started_at=None,
                finished_at=_iso(now),
                exit_code=None,
                output="",
                truncated=False,
                error=f"{count} scheduled run{'s' if count != 1 else ''} missed while the daemon was down "
                f"(due {task['next_run_at']} to {_iso(last)}); not run late",
            )
            nxt = _iso(schedule.next_after(now))

            def record(
                c: Any,
                task_id: str = task["id"],
                due: str = task["next_run_at"],
                missed: TaskRun = missed,
                nxt: str = nxt,
            ) -> bool:
                if not rows.advance(c, task_id, due, nxt):
                    return False  # another daemon on the store reported (or ran) it
                rows.insert_run(c, missed, self.settings.keep_runs)
                return True

            if self.db.write(record):
                log.warning("task %s: %s", task["name"], missed.error)

    def _loop(self) -> None:
        while not self._stopping.is_set():
            self._wake.clear()  # before the tick: a change made during it wakes the next wait at once
            try:
                wait = self._tick()
            except Exception:  # the scheduler must outlive one bad tick: say what failed, try again
                log.exception("the task scheduler failed; retrying")
                wait = 5.0
            self._wake.wait(timeout=wait)

    def _tick(self) -> float:
        """Fire every due task; return the seconds until the next one is due."""
        now = _now()
        soonest = IDLE_WAKE_S
        for task in self.db.read(rows.all_tasks):
            if not task["enabled"] or task["next_run_at"] is None:
                continue
            due = datetime.fromisoformat(task["next_run_at"])
            if due <= now:
                if self._stopping.is_set():
                    break
                try:
                    schedule = parse(task["schedule"])
                except InvalidRequest as exc:  # saved under other rules: said once per tick, never run
                    log.error("task %s has a schedule this version cannot read: %s", task["id"], exc.message)
                    continue
                nxt = schedule.next_after(max(due, now))
                self._fire(task, "schedule", task["next_run_at"], _iso(nxt))  # None: another daemon fired it
                due = nxt
            soonest = min(soonest, (due - now).total_seconds())
        return max(0.01, soonest)
