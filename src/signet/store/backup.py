"""Consistent online backups of the database: before every schema migration and on demand.

Users of the TypeScript Signet lost memories to a migration that broke start-up, and then lost
the disk to the pre-migration backups kept against exactly that. So a backup here is:

- **consistent**: SQLite's online backup API copies every page inside one read transaction, so
  the copy is the database as of one instant while the daemon keeps writing (WAL readers never
  block the writer). The copy is switched to a rollback journal: one self-contained file.
- **verified**: ``PRAGMA quick_check`` runs on the copy before it gets its final name; a copy
  that fails is deleted and nothing older is rotated away.
- **bounded**: at most ``backup.keep`` files (the oldest is removed first, only after the new
  one verified), and none is written when it would leave less than ``backup.min_free_mb`` of
  free disk; the refusal says how much is free and what to do.

Backups live in ``backups/`` beside the database (``<workspace>/memory/backups/`` by default),
named ``signet-<UTC time>-<reason>.db`` so that name order is time order. :func:`restore_backup`
swaps one back in (the caller makes sure no daemon has the database open).
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from signet.errors import InvalidRequest, NotFound, StorageError, StorageFull, free_mb, storage_error
from signet.store.sqlite import sqlite3

log = logging.getLogger(__name__)

BACKUP_DIR = "backups"
_NAME = re.compile(r"^signet-(\d{8}T\d{6}\.\d{3}Z)-([a-z0-9][a-z0-9-]{0,47})\.db$")
_STAMP = "%Y%m%dT%H%M%S"
PARTIAL_MAX_AGE_S = 3600.0
"""A ``.partial`` file older than this is a backup that crashed half-way: removed."""


def backup_dir(db_path: Path) -> Path:
    """Where the backups of the database at ``db_path`` go: ``backups/`` beside it."""
    return db_path.parent / BACKUP_DIR


@dataclass(frozen=True)
class BackupInfo:
    name: str
    path: Path
    created_at: str
    """UTC, ISO-8601 (from the name, so renaming a file does not lie about it)."""
    reason: str
    size_bytes: int

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "path": str(self.path),
            "created_at": self.created_at,
            "reason": self.reason,
            "size_bytes": self.size_bytes,
        }


@dataclass(frozen=True)
class BackupResult:
    backup: BackupInfo
    removed: list[str]
    """Older backups rotated away (oldest first)."""


def _info(path: Path) -> BackupInfo | None:
    m = _NAME.match(path.name)
    if m is None:
        return None
    try:
        stamp = datetime.strptime(m.group(1), _STAMP + ".%fZ").replace(tzinfo=UTC)
        size = path.stat().st_size
    except (ValueError, OSError):
        return None
    return BackupInfo(
        name=path.name,
        path=path,
        created_at=stamp.isoformat(timespec="milliseconds"),
        reason=m.group(2),
        size_bytes=size,
    )


def list_backups(directory: Path) -> list[BackupInfo]:
    """The backups in ``directory``, oldest first; other files there are ignored (never rotated)."""
    if not directory.is_dir():
        return []
    found = [_info(p) for p in directory.iterdir() if p.is_file()]
    return sorted((b for b in found if b is not None), key=lambda b: b.name)


def clean_reason(reason: str) -> str:
    """A reason as it appears in a file name: lower case, letters, digits and dashes, 48 at most."""
    text = re.sub(r"[^a-z0-9]+", "-", reason.lower()).strip("-")[:48].strip("-")
    return text or "manual"


def _new_path(directory: Path, reason: str, now: datetime) -> Path:
    """A name no backup has yet: two backups within one millisecond get the next millisecond."""
    while True:
        stamp = now.strftime(_STAMP) + f".{now.microsecond // 1000:03d}Z"
        path = directory / f"signet-{stamp}-{reason}.db"
        if not path.exists():
            return path
        now += timedelta(milliseconds=1)


def database_bytes(conn: Any) -> int:
    """What a copy of the database will take: every page (free ones too: the backup copies them)."""
    page_size = int(conn.execute("PRAGMA page_size").fetchone()[0])
    return page_size * int(conn.execute("PRAGMA page_count").fetchone()[0])


def check_room(directory: Path, need_bytes: int, min_free_mb: float) -> None:
    """Refuse (507 ``backup_refused``) when writing ``need_bytes`` would leave less than the floor free."""
    free = free_mb(directory)
    need = need_bytes / 1e6
    if free - need < min_free_mb:
        raise StorageFull(
            f"no backup written: {free:.0f} MB free at {directory}, the backup needs about {need:.0f} MB and "
            f"backup.min_free_mb keeps {min_free_mb:.0f} MB free; free some space (old backups: `signet backup "
            "list`), or lower backup.min_free_mb in agent.yaml",
            code="backup_refused",
            free_mb=round(free, 1),
            need_mb=round(need, 1),
            min_free_mb=min_free_mb,
        )


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _remove_stale_partials(directory: Path) -> None:
    cutoff = time.time() - PARTIAL_MAX_AGE_S
    for p in directory.glob(".signet-*.partial*"):
        try:
            if p.stat().st_mtime < cutoff:
                p.unlink()
        except OSError as exc:  # another process's, or gone meanwhile
            log.debug("could not remove stale partial backup %s: %s", p, exc)


def create_backup(
    source: Any,
    db_path: Path,
    *,
    reason: str,
    keep: int,
    min_free_mb: float,
    now: datetime | None = None,
) -> BackupResult:
    """Copy the database ``source`` (an open connection to ``db_path``, not inside a write
    transaction) into a new, verified backup, then rotate the oldest beyond ``keep`` away.

    Raises :class:`StorageFull` (``backup_refused``) when the disk is too full, and
    :class:`StorageError` when the copy could not be written or did not verify; then no older
    backup is removed."""
    directory = backup_dir(db_path)
    directory.mkdir(parents=True, exist_ok=True)
    _remove_stale_partials(directory)
    check_room(directory, database_bytes(source), min_free_mb)
    final = _new_path(directory, clean_reason(reason), now or datetime.now(UTC))
    partial = directory / f".{final.name}.partial"
    try:
        dest = sqlite3.connect(str(partial), isolation_level=None)
        try:
            source.backup(dest)
            dest.execute("PRAGMA journal_mode = DELETE")  # one self-contained file, no -wal beside it
            verdict = str(dest.execute("PRAGMA quick_check").fetchone()[0])
        finally:
            dest.close()
        if verdict != "ok":
            raise StorageError(
                f"the backup of {db_path} did not verify ({verdict}); nothing was rotated away. "
                "Check the database with `signet doctor`",
                code="backup_failed",
            )
        _fsync(partial)
        partial.replace(final)
        _fsync(directory)
    except sqlite3.Error as exc:
        typed = storage_error(exc, final)
        raise (typed or StorageError(f"the backup of {db_path} failed: {exc}", code="backup_failed")) from None
    except OSError as exc:
        typed = storage_error(exc, final)
        raise (typed or StorageError(f"the backup of {db_path} failed: {exc}", code="backup_failed")) from None
    finally:
        for leftover in (partial, partial.with_name(partial.name + "-journal")):
            leftover.unlink(missing_ok=True)
    info = _info(final)
    assert info is not None  # the name was made to match
    return BackupResult(info, rotate(directory, keep))


def rotate(directory: Path, keep: int) -> list[str]:
    """Remove the oldest backups until ``keep`` are left; their names, oldest first."""
    backups = list_backups(directory)
    removed: list[str] = []
    for old in backups[: max(len(backups) - max(keep, 1), 0)]:
        try:
            old.path.unlink()
        except FileNotFoundError:  # rotated by another process meanwhile
            continue
        removed.append(old.name)
        log.info("removed old backup %s (backup.keep is %d)", old.name, keep)
    return removed


def backup_file(db_path: Path, *, reason: str, keep: int, min_free_mb: float) -> BackupResult:
    """Back up the database file at ``db_path`` from a connection of its own (``signet backup``,
    ``POST /api/backup``): safe while the daemon writes, it only reads."""
    if not db_path.is_file():
        raise NotFound(f"no database at {db_path}: nothing to back up")
    # Not ``mode=ro``: a WAL database needs its -shm, which a read-only open cannot create
    # when no daemon runs. ``query_only`` keeps this connection from writing all the same.
    conn = sqlite3.connect(str(db_path), isolation_level=None, timeout=30.0)
    try:
        conn.execute("PRAGMA busy_timeout = 30000")
        conn.execute("PRAGMA query_only = ON")
        return create_backup(conn, db_path, reason=reason, keep=keep, min_free_mb=min_free_mb)
    except sqlite3.Error as exc:
        typed = storage_error(exc, db_path)
        raise (typed or StorageError(f"the backup of {db_path} failed: {exc}", code="backup_failed")) from None
    finally:
        conn.close()


def migration_reason(versions: list[int]) -> str:
    """``pre-migration-13`` or ``pre-migration-13-15``: which migrations the backup precedes."""
    lo, hi = min(versions), max(versions)
    return f"pre-migration-{lo}" if lo == hi else f"pre-migration-{lo}-{hi}"


# -- restore -------------------------------------------------------------------------------


@dataclass(frozen=True)
class RestoreReport:
    restored: str
    """The backup restored (its path)."""
    previous: str | None
    """Where the database it replaced was moved (None when there was none)."""
    memories: int
    """Memories (live and deleted) in the restored database."""


def find_backup(db_path: Path, name: str) -> Path:
    """A backup by its name in ``backups/`` (as ``signet backup list`` shows it, ``.db`` optional)
    or by a path to a backup file elsewhere."""
    candidate = Path(name).expanduser()
    if os.sep in name or (os.altsep and os.altsep in name):
        if candidate.is_file():
            return candidate
        raise NotFound(f"no backup file at {candidate}")
    directory = backup_dir(db_path)
    wanted = name if name.endswith(".db") else f"{name}.db"
    for b in list_backups(directory):
        if b.name == wanted:
            return b.path
    raise NotFound(f"no backup named {name!r} in {directory}; `signet backup list` shows them")


def check_backup(path: Path) -> int:
    """Verify a backup file (``quick_check``, and that it is a Signet store); its memory count."""
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, isolation_level=None)
    except sqlite3.Error as exc:
        raise InvalidRequest(f"{path} cannot be opened as a database: {exc}") from None
    try:
        verdict = str(conn.execute("PRAGMA quick_check").fetchone()[0])
        if verdict != "ok":
            raise InvalidRequest(f"{path} is damaged ({verdict}); pick another backup")
        row = conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'memories'").fetchone()
        if row is None:
            raise InvalidRequest(f"{path} is not a Signet database (it has no memories table)")
        return int(conn.execute("SELECT COUNT(*) FROM memories").fetchone()[0])
    except sqlite3.DatabaseError as exc:
        raise InvalidRequest(f"{path} is not a readable database: {exc}") from None
    finally:
        conn.close()


def restore_backup(backup: Path, db_path: Path, *, min_free_mb: float) -> RestoreReport:
    """Put ``backup`` in place of the database at ``db_path``. The caller holds the daemon's
    lock (no process may have the database open).

    The backup is verified first, copied beside the database, and only then swapped in; the
    database it replaces is moved (with its ``-wal`` and ``-shm``) to
    ``<name>.pre-restore-<time>``, never deleted, so a restore can be undone."""
    memories = check_backup(backup)
    db_path.parent.mkdir(parents=True, exist_ok=True)
    check_room(db_path.parent, backup.stat().st_size, min_free_mb)
    incoming = db_path.with_name(db_path.name + ".restoring")
    try:
        shutil.copyfile(backup, incoming)
        _fsync(incoming)
    except OSError as exc:
        incoming.unlink(missing_ok=True)
        typed = storage_error(exc, db_path)
        raise (typed or StorageError(f"could not copy {backup} beside the database: {exc}")) from None
    previous: Path | None = None
    if db_path.exists():
        previous = db_path.with_name(f"{db_path.name}.pre-restore-{datetime.now(UTC).strftime(_STAMP)}Z")
        db_path.replace(previous)  # the main file first: a crash after this leaves no half pair
        for suffix in ("-wal", "-shm"):
            side = db_path.with_name(db_path.name + suffix)
            if side.exists():
                side.replace(previous.with_name(previous.name + suffix))
    incoming.replace(db_path)
    _fsync(db_path.parent)
    return RestoreReport(str(backup), str(previous) if previous else None, memories)
