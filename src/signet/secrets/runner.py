"""One run of a command: bounded in time and output, its whole process group killed at the end.

Used for commands run with secrets (signet.secrets.service) and for scheduled tasks
(signet.tasks.service). For secrets, the command gets a small environment (``PATH``, ``HOME``, locale, ``TMPDIR``… from the daemon's,
never its tokens) plus the secrets, no stdin, and its own session: on timeout or cancel the
whole process group is killed, children included, and whatever is left of the group is
killed when the command ends (nothing keeps running with the secrets). Output is read as it
comes (the command never blocks on a full pipe) and at most ``keep`` bytes of each stream are
kept; the rest is counted and dropped.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

PASSED_THROUGH = ("PATH", "HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR", "TERM")
"""Variables of the daemon's environment a command sees (the rest, tokens included, it does not)."""
GRACE_S = 2.0
"""After a kill, how long to keep reading what the command wrote before it died."""


@dataclass(frozen=True)
class RunOutput:
    exit_code: int | None
    """The exit status; negative: killed by that signal; None: it never started."""
    stdout: bytes
    stderr: bytes
    stdout_bytes: int
    stderr_bytes: int
    timed_out: bool
    cancelled: bool
    seconds: float


def environment(secrets: Mapping[str, str], base: Mapping[str, str] | None = None) -> dict[str, str]:
    source = os.environ if base is None else base
    env = {k: source[k] for k in PASSED_THROUGH if k in source}
    env.update(secrets)
    return env


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)


def run(
    argv: Sequence[str],
    *,
    env: Mapping[str, str],
    cwd: Path,
    timeout_s: float,
    keep: int,
    cancel: threading.Event | None = None,
    on_output: Callable[[str, bytes], None] | None = None,
) -> RunOutput:
    """Run ``argv`` to completion, timeout or cancel. Raises OSError when it cannot start.

    ``on_output(stream, chunk)`` sees every chunk as it is read (``stream``: ``stdout`` or
    ``stderr``), before any of it is dropped for ``keep``."""
    started = time.monotonic()
    proc = subprocess.Popen(
        list(argv),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=dict(env),
        cwd=cwd,
        start_new_session=True,
        close_fds=True,
    )
    assert proc.stdout is not None and proc.stderr is not None
    out_fd, err_fd = proc.stdout.fileno(), proc.stderr.fileno()
    kept = {out_fd: bytearray(), err_fd: bytearray()}
    seen = dict.fromkeys(kept, 0)
    deadline = started + timeout_s
    timed_out = cancelled = False
    try:
        with selectors.DefaultSelector() as sel:
            sel.register(proc.stdout, selectors.EVENT_READ)
            sel.register(proc.stderr, selectors.EVENT_READ)
            stop_at = deadline
            while sel.get_map():
                now = time.monotonic()
                if not (timed_out or cancelled):
                    if cancel is not None and cancel.is_set():
                        cancelled = True
                    elif now >= deadline:
                        timed_out = True
                    if timed_out or cancelled:
                        _kill_group(proc)
                        stop_at = now + GRACE_S
                if now >= stop_at and (timed_out or cancelled):
                    break  # a process outside the group still holds the pipes: stop reading
                for key, _ in sel.select(min(0.2, max(0.0, stop_at - now))):
                    chunk = os.read(key.fd, 65_536)
                    if not chunk:
                        sel.unregister(key.fileobj)
                        continue
                    seen[key.fd] += len(chunk)
                    if on_output is not None:
                        on_output("stdout" if key.fd == out_fd else "stderr", chunk)
                    buf = kept[key.fd]
                    if len(buf) < keep:
                        buf += chunk[: keep - len(buf)]
        while True:
            try:
                code = proc.wait(timeout=0.2)
                break
            except subprocess.TimeoutExpired:
                if not (timed_out or cancelled):
                    if cancel is not None and cancel.is_set():
                        cancelled = True
                    elif time.monotonic() >= deadline:
                        timed_out = True
                    else:
                        continue
                _kill_group(proc)
    except BaseException:  # Ctrl-C in the CLI, a failing read: the command must not outlive us
        _kill_group(proc)
        proc.wait()
        proc.stdout.close()
        proc.stderr.close()
        raise
    _kill_group(proc)  # anything it left running in its group
    proc.stdout.close()
    proc.stderr.close()
    return RunOutput(
        exit_code=code,
        stdout=bytes(kept[out_fd]),
        stderr=bytes(kept[err_fd]),
        stdout_bytes=seen[out_fd],
        stderr_bytes=seen[err_fd],
        timed_out=timed_out,
        cancelled=cancelled,
        seconds=time.monotonic() - started,
    )
