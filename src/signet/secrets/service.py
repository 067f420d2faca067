"""The secrets service: the store for names and values, and runs of commands with secrets.

A run is checked before anything starts (the secrets exist, the program is on
``secrets.exec.allow``, the timeout is within ``maxTimeoutSeconds``); a refused run is
recorded too, so the audit trail shows what was attempted. The daemon queues runs on a small
pool (``maxConcurrent``) and a caller polls ``GET /api/secrets/exec/{id}``, or asks to wait;
the CLI runs in its own process. Either way the row holds only redacted text, and values
never leave this module except into the command's environment.
"""

from __future__ import annotations

import logging
import threading
import uuid
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from signet.config import SecretsExecSettings
from signet.errors import InvalidRequest, NotFound, RateLimited, SignetError
from signet.secrets import commands, runner, runs
from signet.secrets.models import ExecRun, SecretInfo, SecretList
from signet.secrets.redact import Redactor
from signet.secrets.store import SecretStore
from signet.store.database import Database

log = logging.getLogger(__name__)

MAX_QUEUED = 32
"""Runs waiting for a slot at once; more are refused (429) rather than piled up."""


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


@dataclass(frozen=True)
class Prepared:
    """A run that passed every check: what to start, with which values."""

    run: ExecRun
    program: str
    argv: list[str]
    values: dict[str, str]
    timeout_s: float


class SecretsService:
    def __init__(
        self,
        db: Database,
        store: SecretStore,
        settings: SecretsExecSettings,
        cwd: Path,
        *,
        origin: Literal["daemon", "cli"] = "daemon",
    ) -> None:
        self.db = db
        self.store = store
        self.settings = settings
        self.cwd = cwd
        self.origin: Literal["daemon", "cli"] = origin
        self._cancel = threading.Event()
        self._lock = threading.Lock()
        self._waiting = 0
        self._pool: ThreadPoolExecutor | None = None

    # --- lifecycle (the daemon's runtime) --------------------------------------------------

    def start(self) -> None:
        self._cancel.clear()
        at = _now()
        stale = self.db.write(lambda c: runs.interrupt_unfinished(c, at))
        if stale:
            log.warning("%d secret exec runs were unfinished when the daemon last stopped", stale)
        self._pool = ThreadPoolExecutor(max_workers=self.settings.max_concurrent, thread_name_prefix="secret-exec")

    def stop(self) -> None:
        """Kill running commands, drop queued ones, and record both."""
        self._cancel.set()
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
            at = _now()
            self.db.write(lambda c: runs.interrupt_unfinished(c, at))

    # --- the store -------------------------------------------------------------------------

    def list_secrets(self) -> SecretList:
        entries = self.store.entries()
        return SecretList(
            secrets=[SecretInfo(name=e.name, created_at=e.created_at, updated_at=e.updated_at) for e in entries],
            key_store=self.store.key_kind(),
        )

    # --- runs ------------------------------------------------------------------------------

    def prepare(self, command: Sequence[str], names: Sequence[str], timeout_s: float | None, actor: str) -> Prepared:
        """Check a run; a refusal is recorded and raised (403 not allowed, 404 no such secret…)."""
        wanted = list(dict.fromkeys(names))
        run = ExecRun(
            id=uuid.uuid4().hex,
            status="queued",
            command=list(command),
            secrets=wanted,
            actor=actor,
            origin=self.origin,
            created_at=_now(),
            started_at=None,
            finished_at=None,
            exit_code=None,
            stdout="",
            stderr="",
            truncated=False,
            redactions=0,
            error=None,
        )
        values: dict[str, str] = {}
        try:
            timeout = self.settings.timeout_s if timeout_s is None else timeout_s
            if timeout > self.settings.max_timeout_s:
                raise InvalidRequest(
                    f"timeout_s {timeout:g} is over secrets.exec.maxTimeoutSeconds ({self.settings.max_timeout_s:g})"
                )
            program = commands.resolve(command[0], self.settings.allow)
            values = self.store.values(wanted)
        except SignetError as exc:
            self._record_refusal(run, exc, values)
            raise
        redactor = Redactor.of(values)
        shown = run.model_copy(update={"command": [redactor.text(a) for a in command]})
        return Prepared(shown, program, list(command), values, timeout)

    def _record_refusal(self, run: ExecRun, exc: SignetError, values: dict[str, str]) -> None:
        redactor = Redactor.of(values)
        refused = run.model_copy(
            update={
                "status": "refused",
                "command": [redactor.text(a) for a in run.command],
                "finished_at": run.created_at,
                "error": redactor.text(exc.message),
            }
        )
        self.db.write(lambda c: runs.insert(c, refused))

    def run(self, prepared: Prepared) -> ExecRun:
        """Run now, on this thread, and return the finished run (the CLI's way)."""
        self.db.write(lambda c: runs.insert(c, prepared.run))
        return self._execute(prepared)

    def submit(self, prepared: Prepared) -> Future[ExecRun]:
        """Queue the run on the daemon's pool (at most ``maxConcurrent`` run at once); the row
        is written as queued before this returns. The future gives the finished run."""
        pool = self._pool
        if pool is None:
            raise SignetError("secret exec is not running (the runtime is stopped)", code="daemon_unavailable")
        with self._lock:
            if self._waiting >= MAX_QUEUED:
                raise RateLimited(f"{MAX_QUEUED} secret exec runs are already waiting; retry later", retry_after=5)
            self._waiting += 1
        try:
            self.db.write(lambda c: runs.insert(c, prepared.run))
        except BaseException:
            with self._lock:
                self._waiting -= 1
            raise

        def work() -> ExecRun:
            with self._lock:
                self._waiting -= 1
            try:
                return self._execute(prepared)
            except Exception:  # nobody may be waiting for this future: say what failed, in the log
                log.exception("secret exec run %s failed", prepared.run.id)
                raise

        return pool.submit(work)

    def _execute(self, prepared: Prepared) -> ExecRun:
        run_id = prepared.run.id
        started = _now()
        self.db.write(lambda c: runs.update(c, run_id, status="running", started_at=started))
        redactor = Redactor.of(prepared.values)
        keep = self.settings.max_output_bytes + redactor.margin
        fields: dict[str, object]
        try:
            out = runner.run(
                [prepared.program, *prepared.argv[1:]],
                env=runner.environment(prepared.values),
                cwd=self.cwd,
                timeout_s=prepared.timeout_s,
                keep=keep,
                cancel=self._cancel,
            )
        except OSError as exc:
            fields = {"status": "error", "error": redactor.text(f"could not start {prepared.argv[0]}: {exc.strerror}")}
        except BaseException:
            at = _now()
            self.db.write(lambda c: runs.update(c, run_id, status="cancelled", finished_at=at, error="interrupted"))
            raise
        else:
            limit = self.settings.max_output_bytes
            stdout, n_out = redactor.bytes(out.stdout, limit=limit)
            stderr, n_err = redactor.bytes(out.stderr, limit=limit)
            status = "timeout" if out.timed_out else "cancelled" if out.cancelled else "done"
            error = None
            if out.timed_out:
                error = f"killed after the {prepared.timeout_s:g} s timeout"
            elif out.cancelled:
                error = "killed: the daemon is stopping"
            fields = {
                "status": status,
                "exit_code": out.exit_code,
                "stdout": stdout.decode("utf-8", errors="replace"),
                "stderr": stderr.decode("utf-8", errors="replace"),
                "truncated": max(out.stdout_bytes, out.stderr_bytes) > limit,
                "redactions": n_out + n_err,
                "error": error,
            }
        fields["finished_at"] = _now()
        self.db.write(lambda c: runs.update(c, run_id, **fields))
        log.info(
            "secret exec run %s by %s: %s with %s: %s (exit %s, %s masked)",
            run_id,
            prepared.run.actor,
            prepared.run.command[0],  # redacted
            ",".join(prepared.run.secrets),
            fields["status"],
            fields.get("exit_code"),
            fields.get("redactions", 0),
        )
        return self.get(run_id)

    def get(self, run_id: str) -> ExecRun:
        found = self.db.read(lambda c: runs.get(c, run_id))
        if found is None:
            raise NotFound(f"no secret exec run {run_id[:80]!r}")
        return found
