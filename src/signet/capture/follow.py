"""The follower: watch harness session folders and store each session file's new turns.

One thread. It scans every followed root once, then waits on file events (watchfiles) and
reads only the files that changed; every ``pollIntervalS`` without events it scans again
(events can be missed: a folder created later, a network file system, an overflowing
inotify queue). A file is read from its durable cursor (signet.capture.cursors) to its last
complete line, in bounded batches, each stored with the cursor in one transaction.

Safety of what is read:
- a file must resolve (symlinks followed) to a regular file inside the resolved root it was
  found under; a symlink pointing elsewhere is refused, as is a FIFO or device (opening one
  could block or read a device);
- the file is opened ``O_NOFOLLOW | O_NONBLOCK`` at its resolved path and checked again
  with ``fstat``, so swapping it for a symlink or FIFO after the check gains nothing.

Extraction is queued once a session has been quiet for ``extractIdleS``, for the turns that
arrived since the last time (the job's ``turn_from``): a growing session is not re-extracted
on every line.
"""

from __future__ import annotations

import functools
import logging
import os
import stat
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, BinaryIO

from signet.capture import cursors
from signet.capture.harnesses import HARNESSES, Followed
from signet.capture.reader import head_hash, read_chunk, replaced
from signet.config import CaptureSettings
from signet.errors import StorageError
from signet.store import sessions as store
from signet.store.database import Database
from signet.store.sqlite import sqlite3
from signet.transcript import Turn

log = logging.getLogger(__name__)


@dataclass
class CaptureStats:
    files: int = 0
    """Files read at least once by this follower."""
    turns: int = 0
    refused: int = 0
    errors: int = 0
    jobs: int = 0
    last_scan_at: str | None = None
    refused_paths: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "files": self.files,
            "turns": self.turns,
            "refused": self.refused,
            "errors": self.errors,
            "jobs": self.jobs,
            "last_scan_at": self.last_scan_at,
        }


class LiveCapture:
    """Follows the session files of ``harnesses`` (default: the settings' list)."""

    def __init__(
        self,
        db: Database,
        settings: CaptureSettings,
        *,
        enqueue: bool,
        max_attempts: int,
        harnesses: list[str] | None = None,
        agent_id: str = "default",
        on_stored: Callable[[str, int], None] | None = None,
    ) -> None:
        self.db = db
        self.settings = settings
        self.harnesses = list(settings.harnesses if harnesses is None else harnesses)
        self.enqueue = enqueue
        self.max_attempts = max_attempts
        self.agent_id = agent_id
        self.on_stored = on_stored
        """Called with (path, turns) after each stored batch (``signet watch`` prints it)."""
        self.stats = CaptureStats()
        self._seen: dict[str, tuple[int, int, int]] = {}
        self._refused: set[str] = set()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._started_at = time.time()

    # -- where ------------------------------------------------------------------------------
    def roots(self) -> list[tuple[Followed, Path]]:
        """(harness, resolved root) for every configured root that exists now."""
        out: list[tuple[Followed, Path]] = []
        configured: dict[str, list[str]] = {str(k): v for k, v in self.settings.roots.items()}
        for name in self.harnesses:
            spec = HARNESSES[name]
            for raw in configured.get(name) or list(spec.default_roots):
                root = Path(raw).expanduser()
                if root.is_dir():
                    out.append((spec, root.resolve()))
        return out

    def files(self, roots: list[tuple[Followed, Path]]) -> list[tuple[Followed, Path, Path]]:
        """(harness, root, path) of every session file under the roots (symlinked folders are
        not entered; symlinked files are checked when read)."""
        found: list[tuple[Followed, Path, Path]] = []
        for spec, root in roots:
            for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
                dirnames[:] = [d for d in dirnames if not d.startswith(".")]
                for name in filenames:
                    p = Path(dirpath) / name
                    if spec.wants(root, p):
                        found.append((spec, root, p))
        return found

    def status(self) -> dict[str, Any]:
        """What ``/api/status`` shows: the durable totals (every follower's, from the cursors)
        and this follower's own refusals and errors."""
        files, turns = self.db.read(
            lambda c: tuple(c.execute("SELECT COUNT(*), COALESCE(SUM(turns), 0) FROM capture_cursors").fetchone())
        )
        return {
            "harnesses": list(self.harnesses),
            "running": self._thread is not None and self._thread.is_alive(),
            "files": int(files),
            "turns": int(turns),
            "refused": self.stats.refused,
            "errors": self.stats.errors,
            "last_scan_at": self.stats.last_scan_at,
        }

    # -- lifecycle --------------------------------------------------------------------------
    def start(self) -> None:
        if self._thread is not None or not self.harnesses:
            return
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="signet-capture", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=15)
            self._thread = None

    def reconfigure(self, settings: CaptureSettings) -> bool:
        """agent.yaml's ``capture`` section changed under a running daemon: follow the new
        harnesses and roots from now on (the durable cursors keep every file's place, so a
        harness turned off and on again resumes where it stopped). Returns whether anything
        changed."""
        if settings == self.settings:
            return False
        running = self._thread is not None
        self.stop()
        self.settings = settings
        self.harnesses = list(settings.harnesses)
        if running or self.harnesses:
            self.start()
        return True

    def _run(self) -> None:
        from watchfiles import watch

        while not self._stop.is_set():
            roots = self.roots()
            self._guarded(self.scan_once)
            if not roots:
                self._stop.wait(self.settings.poll_interval_s)
                continue
            interval_ms = max(50, int(self.settings.poll_interval_s * 1000))
            try:
                for changes in watch(
                    *(r for _, r in roots),
                    debounce=100,
                    step=50,
                    stop_event=self._stop,
                    rust_timeout=interval_ms,
                    yield_on_timeout=True,
                    raise_interrupt=False,
                ):
                    if changes:
                        changed = {Path(p) for _, p in changes}
                        self._guarded(functools.partial(self.read_changed, roots, changed))
                    else:
                        self._guarded(self.scan_once)
                    if [r for _, r in self.roots()] != [r for _, r in roots]:
                        break  # a root appeared or vanished: watch the new set
            except (OSError, RuntimeError) as exc:  # a root vanished mid-watch: scan and watch again
                log.warning("capture: watching stopped (%s); watching again", exc)
                self._stop.wait(self.settings.poll_interval_s)

    def _guarded(self, fn: Callable[[], object]) -> None:
        """Run one pass; a storage problem waits for the next pass (nothing was stored)."""
        try:
            fn()
        except (StorageError, sqlite3.Error) as exc:
            self.stats.errors += 1
            log.warning("capture: the database refused a write (%s); retrying on the next pass", exc)
        except Exception:  # a bug must not end capture for good: logged whole, the next pass retries
            self.stats.errors += 1
            log.exception("capture: a pass failed; retrying on the next pass")

    # -- passes -----------------------------------------------------------------------------
    def scan_once(self) -> int:
        """Read every followed file that changed since this follower last looked; queue due
        extraction. Returns the turns stored."""
        stored = 0
        for spec, root, path in self.files(self.roots()):
            if self._stop.is_set():
                break
            stored += self.read_file(spec, root, path)
        self.queue_due()
        self.stats.last_scan_at = datetime.now(UTC).isoformat(timespec="seconds")
        return stored

    def read_changed(self, roots: list[tuple[Followed, Path]], changed: set[Path]) -> int:
        stored = 0
        for path in sorted(changed):
            for spec, root in roots:
                if spec.wants(root, path):
                    stored += self.read_file(spec, root, path)
                    break
        self.queue_due()
        return stored

    def queue_due(self, *, now: bool = False) -> int:
        """Queue extraction for sessions quiet for ``extractIdleS`` (all of them with ``now``:
        ``signet watch`` on its way out). Returns the jobs queued."""
        if not self.enqueue:
            return 0
        idle = 0.0 if now else self.settings.extract_idle_s
        quiet = (datetime.now(UTC) - timedelta(seconds=idle)).isoformat(timespec="microseconds")
        due = self.db.read(lambda c: cursors.due_for_extraction(c, quiet))
        queued = 0
        for path, key, turn_from in due:
            job = self.db.write(
                functools.partial(
                    store.queue_captured_extraction,
                    path=path,
                    key=key,
                    turn_from=turn_from,
                    agent_id=self.agent_id,
                    max_attempts=self.max_attempts,
                )
            )
            queued += job is not None
        self.stats.jobs += queued
        return queued

    # -- one file ---------------------------------------------------------------------------
    def read_file(self, spec: Followed, root: Path, path: Path) -> int:
        """Store the complete new lines of one file; 0 when nothing changed or it is refused.

        A file whose size, modification time and inode are those this follower last finished
        reading is passed over without being opened (the rescan of a large session folder
        costs one ``stat`` per file)."""
        listed = str(path)
        try:
            seen = path.stat()
        except FileNotFoundError:
            return 0  # gone between the listing and now (or a dangling link)
        except OSError as exc:
            self._refuse(path, f"cannot be read: {exc.strerror}")
            return 0
        sig = (seen.st_size, seen.st_mtime_ns, seen.st_ino)
        if self._seen.get(listed) == sig:
            return 0
        real = Path(os.path.realpath(path))
        if not real.is_relative_to(root):
            self._refuse(path, f"resolves to {real}, outside {root}")
            self._seen[listed] = sig
            return 0
        try:
            fd = os.open(real, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except FileNotFoundError:
            return 0
        except OSError as exc:
            self._refuse(path, f"cannot be opened: {exc.strerror}")
            return 0
        with os.fdopen(fd, "rb") as fh:
            st = os.fstat(fh.fileno())
            if not stat.S_ISREG(st.st_mode):
                self._refuse(path, "is not a regular file")
                self._seen[listed] = sig
                return 0
            try:
                stored, done = self._follow(spec, str(real), fh, st)
            except OSError as exc:  # a read error (I/O error, file system gone): this file only
                self.stats.errors += 1
                log.warning("capture: reading %s failed (%s); retrying on the next pass", real, exc)
                self.db.write(
                    functools.partial(
                        cursors.mark_error, path=str(real), harness=spec.name, error=f"read failed: {exc}"
                    )
                )
                return 0
        if done:
            self._seen[listed] = (st.st_size, st.st_mtime_ns, st.st_ino)
        return stored

    def _refuse(self, path: Path, why: str) -> None:
        if str(path) not in self._refused:
            self._refused.add(str(path))
            self.stats.refused += 1
            log.warning("capture: not following %s: it %s", path, why)

    def _follow(self, spec: Followed, key: str, fh: BinaryIO, st: os.stat_result) -> tuple[int, bool]:
        """Read ``key`` from its cursor to its last complete line. Returns (turns stored,
        whether it was read to the end: False when stopped or another follower moved the
        cursor, so the next pass reads it again)."""
        cursor = self.db.read(lambda c: cursors.load(c, key))
        if cursor is None:
            self.stats.files += 1
            if self._is_history(st):
                return self._skip_history(spec, key, fh, st)
        restart = cursor is not None and replaced(
            fh, st, offset=cursor.offset, device=cursor.device, inode=cursor.inode, head=cursor.head_hash
        )
        if restart:
            log.info("capture: %s was truncated or replaced; reading it again from its start", key)
        offset = 0 if restart or cursor is None else cursor.offset
        session_id: str | None = None
        project: str | None = None
        stored = 0
        while not self._stop.is_set():
            chunk = read_chunk(fh, offset, st.st_size)
            if chunk.end == offset:
                break
            turns: list[Turn] = []
            for rec in chunk.records:
                sid, cwd = spec.record_session(rec)
                if sid and session_id is None:
                    session_id = str(sid)
                if isinstance(cwd, str) and cwd and project is None:
                    project = Path(cwd).name
                turn = spec.record_turn(rec)
                if turn is not None:
                    turns.append(turn)
            batch = cursors.Batch(
                path=key,
                harness=spec.name,
                start=offset,
                end=chunk.end,
                device=st.st_dev,
                inode=st.st_ino,
                head_hash=head_hash(fh, chunk.end),
                turns=turns,
                session_id=session_id,
                project=project,
                skipped=chunk.skipped,
                restart=restart,
            )
            try:
                added: int = self.db.write(
                    functools.partial(cursors.advance, batch=batch, expected=cursor, agent_id=self.agent_id)
                )
            except cursors.Moved:
                log.info("capture: %s was advanced by another follower; reading on from there", key)
                return stored, False
            stored += added
            self.stats.turns += added
            if added and self.on_stored is not None:
                self.on_stored(key, added)
            cursor = self.db.read(lambda c: cursors.load(c, key))
            offset, restart = chunk.end, False
        return stored, not self._stop.is_set()

    def _is_history(self, st: os.stat_result) -> bool:
        hours = self.settings.backfill_hours
        return hours >= 0 and st.st_mtime < time.time() - hours * 3600

    def _skip_history(self, spec: Followed, key: str, fh: BinaryIO, st: os.stat_result) -> tuple[int, bool]:
        """An old session first seen now: start following at its end (``signet ingest`` reads
        old sessions on purpose; turning capture on must not extract years of history)."""
        end = st.st_size
        # End on a line boundary: the last newline at or before the end.
        while end > 0:
            start = max(0, end - 65536)
            fh.seek(start)
            block = fh.read(end - start)
            idx = block.rfind(b"\n")
            if idx >= 0:
                end = start + idx + 1
                break
            end = start
        # The session's id and folder are on its first line (Codex, OpenClaw): keep them, so
        # turns appended later land on the harness's session, not on one named after the path.
        first = read_chunk(fh, 0, min(end, 65536))
        session_id = project = None
        for rec in first.records:
            sid, cwd = spec.record_session(rec)
            if sid:
                session_id = str(sid)
                project = Path(cwd).name if isinstance(cwd, str) and cwd else None
                break
        batch = cursors.Batch(
            path=key,
            harness=spec.name,
            start=0,
            end=end,
            device=st.st_dev,
            inode=st.st_ino,
            head_hash=head_hash(fh, end),
            turns=[],
            session_id=session_id,
            project=project,
            skipped=0,
            restart=False,
            status="history",
        )
        try:
            self.db.write(functools.partial(cursors.advance, batch=batch, expected=None, agent_id=self.agent_id))
        except cursors.Moved:
            return 0, False  # another follower took it first: read it again from its cursor
        return 0, True
