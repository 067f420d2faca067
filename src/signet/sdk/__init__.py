"""The Python SDK: typed clients of the Signet daemon's HTTP API.

::

    from signet.sdk import SignetClient

    with SignetClient() as signet:
        saved = signet.remember("the deploy script lives in ops/deploy.sh", tags=["ops"])
        hits = signet.recall("where is the deploy script?", limit=3)

Methods return the shared pydantic models of :mod:`signet.models`; failures raise the
typed errors of :mod:`signet.errors` (re-exported here). ``AsyncSignetClient`` has the
same methods as coroutines.
"""

from signet.errors import (
    AmbiguousId,
    ConfirmationRequired,
    Conflict,
    DaemonUnavailable,
    Forbidden,
    InvalidRequest,
    MutationsFrozen,
    NotDeleted,
    NotFound,
    RateLimited,
    RetentionExpired,
    SignetError,
    Unauthorized,
    VersionConflict,
)
from signet.models import ListQuery
from signet.sdk._client import AsyncSignetClient, SignetClient
from signet.sdk._core import Call

__all__ = [
    "AmbiguousId",
    "AsyncSignetClient",
    "Call",
    "ConfirmationRequired",
    "Conflict",
    "DaemonUnavailable",
    "Forbidden",
    "InvalidRequest",
    "ListQuery",
    "MutationsFrozen",
    "NotDeleted",
    "NotFound",
    "RateLimited",
    "RetentionExpired",
    "SignetClient",
    "SignetError",
    "Unauthorized",
    "VersionConflict",
]
