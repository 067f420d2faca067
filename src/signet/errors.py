"""The exception tree every layer shares.

One error type per failure a caller can act on; each carries a stable machine ``code`` and
the HTTP status the daemon answers with, so the API, SDK, MCP and CLI speak one vocabulary::

    SignetError
    ├── InvalidRequest          400 invalid_request
    │   ├── ConfirmationRequired 400 confirm_token_required / confirm_token_mismatch
    │   └── AmbiguousId         400 ambiguous_id (an id prefix several ids start with)
    ├── Unauthorized            401 unauthorized
    ├── Forbidden               403 forbidden
    ├── NotFound                404 not_found
    ├── Conflict                409 (version_conflict, not_deleted, retention_expired, duplicate)
    │   ├── VersionConflict
    │   ├── NotDeleted
    │   └── RetentionExpired
    ├── RateLimited             429 rate_limited (retry_after seconds)
    ├── MutationsFrozen         503 mutations_frozen
    ├── DaemonUnavailable       -   the CLI/SDK could not reach the daemon
    └── ConfigError             -   agent.yaml is invalid (names the key)
"""

from __future__ import annotations

import errno
import os
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")


class SignetError(Exception):
    """Base class. ``code`` is stable and machine readable; ``status`` is the HTTP status."""

    code: str = "error"
    status: int = 500

    def __init__(self, message: str, *, code: str | None = None, **details: Any) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code
        self.details: dict[str, Any] = details

    def to_dict(self) -> dict[str, Any]:
        body: dict[str, Any] = {"error": self.message, "code": self.code}
        body.update(self.details)
        return body


class InvalidRequest(SignetError):
    code = "invalid_request"
    status = 400


class ConfirmationRequired(InvalidRequest):
    code = "confirm_token_required"


class AmbiguousId(InvalidRequest):
    """An id prefix that several ids start with; ``candidates`` lists some of them."""

    code = "ambiguous_id"


class Unauthorized(SignetError):
    code = "unauthorized"
    status = 401


class Forbidden(SignetError):
    code = "forbidden"
    status = 403


class NotFound(SignetError):
    code = "not_found"
    status = 404


class Conflict(SignetError):
    code = "conflict"
    status = 409


class VersionConflict(Conflict):
    code = "version_conflict"


class NotDeleted(Conflict):
    code = "not_deleted"


class RetentionExpired(Conflict):
    code = "retention_expired"


class RateLimited(SignetError):
    code = "rate_limited"
    status = 429

    def __init__(self, message: str, *, retry_after: int, **details: Any) -> None:
        super().__init__(message, retry_after=retry_after, **details)
        self.retry_after = retry_after


class MutationsFrozen(SignetError):
    code = "mutations_frozen"
    status = 503


class WrongWorkspace(Conflict):
    """The daemon at the client's address serves another workspace: nothing was done there."""

    code = "wrong_workspace"


class DaemonUnavailable(SignetError):
    code = "daemon_unavailable"
    status = 503


class ConfigError(SignetError):
    code = "config_error"
    status = 500


class StorageError(SignetError):
    """The database cannot be written: nothing was written, reads go on."""

    code = "storage_unavailable"
    status = 503


class StorageFull(StorageError):
    code = "disk_full"
    status = 507


class StorageBusy(StorageError):
    """Every read connection stayed busy for a minute: retry (nothing was read or written)."""

    code = "storage_busy"


class Stopping(Exception):
    """A background load abandoned because the daemon is stopping.

    Not a :class:`SignetError`: nothing failed and no caller is told. Loading a big store's
    indexes takes minutes; a ``signet stop`` meanwhile must not wait for it."""


def until_stopped(rows: Iterable[T], stopping: Callable[[], bool], every: int = 256) -> Iterator[T]:
    """``rows``, raising :class:`Stopping` once ``stopping()`` says so (asked every ``every``
    rows: a loop over a million rows stays a loop over rows)."""
    for i, row in enumerate(rows):
        if i % every == 0 and stopping():
            raise Stopping
        yield row


ERRORS_BY_CODE: dict[str, type[SignetError]] = {
    cls.code: cls
    for cls in (
        InvalidRequest,
        ConfirmationRequired,
        AmbiguousId,
        Unauthorized,
        Forbidden,
        NotFound,
        Conflict,
        VersionConflict,
        NotDeleted,
        RetentionExpired,
        WrongWorkspace,
        RateLimited,
        StorageError,
        StorageFull,
        StorageBusy,
        MutationsFrozen,
        DaemonUnavailable,
    )
}


def error_from_payload(status: int, payload: dict[str, Any]) -> SignetError:
    """Rebuild the typed error a daemon response describes (used by the SDK and CLI)."""
    code = str(payload.get("code", "error"))
    message = str(payload.get("error") or payload.get("detail") or f"HTTP {status}")
    details = {k: v for k, v in payload.items() if k not in ("error", "code")}
    cls = ERRORS_BY_CODE.get(code)
    if cls is RateLimited:
        retry_after = int(details.pop("retry_after", 1) or 1)
        return RateLimited(message, retry_after=retry_after, **details)
    if cls is None:
        err = SignetError(message, code=code, **details)
        err.status = status
        return err
    return cls(message, **details)


def storage_error(exc: BaseException, db_path: Path) -> StorageError | None:
    """What a SQLite or OS error means for the user, with what to do; None for other errors.

    SQLite says "database or disk is full" (SQLITE_FULL), "attempt to write a readonly
    database" (SQLITE_READONLY), "disk I/O error" (SQLITE_IOERR), "database disk image is
    malformed" / "file is not a database" (SQLITE_CORRUPT / NOTADB)."""
    text = str(exc).lower()
    code = getattr(exc, "errno", None)
    where = db_path.parent
    if "disk is full" in text or code == errno.ENOSPC:
        free = free_mb(where)
        return StorageFull(
            f"disk full ({free:.1f} MB free) at {where}; free some space and writes resume by "
            "themselves (nothing was written)",
            free_mb=round(free, 1),
            path=str(where),
        )
    if "readonly" in text or "read-only" in text or code in (errno.EROFS, errno.EACCES, errno.EPERM):
        return StorageError(
            f"the database at {db_path} cannot be written (read-only file or filesystem); check "
            "the workspace's permissions and mount (nothing was written)",
            code="storage_read_only",
            path=str(db_path),
        )
    if "disk i/o error" in text or "malformed" in text or "not a database" in text:
        return StorageError(
            f"the database at {db_path} is damaged or unreadable ({exc}); stop the daemon and run "
            "`signet repair --recover`, or restore a backup",
            code="storage_damaged",
            path=str(db_path),
        )
    return None


def free_mb(path: Path) -> float:
    """Free space for unprivileged writes on the filesystem holding ``path`` (MB)."""
    probe = path
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    try:
        st = os.statvfs(probe)
    except OSError:
        return 0.0
    return st.f_bavail * st.f_frsize / 1e6
