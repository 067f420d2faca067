"""The exception tree every layer shares.

One error type per failure a caller can act on; each carries a stable machine ``code`` and
the HTTP status the daemon answers with, so the API, SDK, MCP and CLI speak one vocabulary::

    SignetError
    ├── InvalidRequest          400 invalid_request
    │   └── ConfirmationRequired 400 confirm_token_required / confirm_token_mismatch
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

from typing import Any


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


ERRORS_BY_CODE: dict[str, type[SignetError]] = {
    cls.code: cls
    for cls in (
        InvalidRequest,
        ConfirmationRequired,
        Unauthorized,
        Forbidden,
        NotFound,
        Conflict,
        VersionConflict,
        NotDeleted,
        RetentionExpired,
        WrongWorkspace,
        RateLimited,
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
