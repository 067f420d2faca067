"""The sans-I/O core: a :class:`Call` says what to send and how to read the answer.

Nothing here touches the network. Building a call validates the arguments against the
shared pydantic models (so a bad argument fails before any I/O, with the same message the
daemon would give), and :func:`read_response` turns any HTTP answer into either the typed
model or the typed :mod:`signet.errors` exception. The sync and async clients only move
bytes between these two functions.
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar
from urllib.parse import quote

from pydantic import BaseModel, ValidationError

from signet.errors import (
    Conflict,
    Forbidden,
    InvalidRequest,
    NotFound,
    RateLimited,
    SignetError,
    Unauthorized,
    error_from_payload,
)

T = TypeVar("T")
M = TypeVar("M", bound=BaseModel)

# When a body carries no ``code`` (a proxy's error page, an old daemon), the status decides.
CODE_BY_STATUS = {
    400: "invalid_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    409: "conflict",
    422: "invalid_request",
    429: "rate_limited",
    503: "daemon_unavailable",
}
CLASS_BY_STATUS: dict[int, type[SignetError]] = {
    400: InvalidRequest,
    401: Unauthorized,
    403: Forbidden,
    404: NotFound,
    409: Conflict,
    422: InvalidRequest,
}


@dataclass(frozen=True)
class Call(Generic[T]):
    """One HTTP exchange with the daemon: the request, and the parser for a 2xx body."""

    method: str
    path: str
    parse: Callable[[Any], T]
    json: Any = None
    params: Mapping[str, Any] = field(default_factory=dict)
    # A 2xx body that is not JSON (the NDJSON export): ``parse`` gets the decoded text.
    text: bool = False


def validation_message(exc: ValidationError) -> str:
    """``field: message`` of the first problem, the way the daemon words a 422."""
    err = exc.errors()[0]
    loc = ".".join(str(p) for p in err.get("loc", ())) or "body"
    more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
    return f"invalid request: {loc}: {err.get('msg', 'invalid')}{more}"


def build(model: type[M], data: M | Mapping[str, Any]) -> M:
    """Validate ``data`` as ``model`` locally; a failure is the same InvalidRequest the daemon raises."""
    if isinstance(data, model):
        return data
    try:
        return model.model_validate(dict(data) if isinstance(data, Mapping) else data)
    except ValidationError as exc:
        problems = [
            {"field": ".".join(str(p) for p in e.get("loc", ())) or "body", "message": e.get("msg", "")}
            for e in exc.errors()[:20]
        ]
        raise InvalidRequest(validation_message(exc), problems=problems) from None


def body(model: BaseModel) -> dict[str, Any]:
    """The JSON body of a request model: only what the caller set, so daemon defaults apply."""
    return model.model_dump(mode="json", exclude_unset=True, by_alias=True)


def query(**params: Any) -> dict[str, Any]:
    """Query parameters without the unset ones; booleans as ``true``/``false``."""
    out: dict[str, Any] = {}
    for key, value in params.items():
        if value is None or value == []:
            continue
        if isinstance(value, bool):
            value = "true" if value else "false"
        elif hasattr(value, "isoformat"):
            value = value.isoformat()
        elif hasattr(value, "value"):
            value = value.value
        out[key] = value
    return out


def parser(model: type[M]) -> Callable[[Any], M]:
    return model.model_validate


def json_object(data: Any) -> dict[str, Any]:
    """A JSON object as it is: for operator reports whose models live in the daemon's route
    modules, which the SDK may not import (the layers contract keeps it below the daemon)."""
    if not isinstance(data, dict):
        raise SignetError(f"expected a JSON object, got {type(data).__name__}", code="bad_response")
    return data


def as_text(data: Any) -> str:
    return str(data)


def segment(value: str, noun: str) -> str:
    """One path segment from a caller's id or name, percent-quoted so a ``/`` or ``..`` in it
    cannot reach another route; an empty one fails here, before any I/O."""
    if not isinstance(value, str) or not value.strip():
        raise InvalidRequest(f"a {noun} is required")
    return quote(value, safe="")


def error_for(status: int, headers: Mapping[str, str], content: bytes) -> SignetError:
    """The typed exception an error response describes."""
    try:
        data = json.loads(content) if content else {}
    except ValueError:
        data = None
    if not isinstance(data, dict):
        data = {"error": foreign_answer(status, content)}
    payload = dict(data)
    payload.setdefault("code", CODE_BY_STATUS.get(status, "error"))
    if payload["code"] == RateLimited.code and "retry_after" not in payload:
        try:
            payload["retry_after"] = int(headers.get("retry-after", "1"))
        except ValueError:
            payload["retry_after"] = 1
    err = error_from_payload(status, payload)
    if type(err) is SignetError:
        # A code this SDK has no class for (``invalid_schedule``, ``session_not_found``): the
        # status still says what kind of failure it is, so ``except NotFound`` catches it.
        cls = CLASS_BY_STATUS.get(status)
        if cls is not None:
            return cls(err.message, code=err.code, **err.details)
        err.status = status
    return err


def foreign_answer(status: int, content: bytes) -> str:
    """One line for an error answer that is not Signet's JSON (another web server on the
    port, a proxy's error page): its title or first words, never the whole HTML page."""
    text = content.decode("utf-8", "replace")
    if not _TAG.search(text):
        return " ".join(text.split())[:200] or f"HTTP {status}"
    title = _TITLE.search(text)
    words = " ".join(html.unescape(_TAG.sub(" ", title.group(1) if title else text)).split())
    return (
        f"HTTP {status} from a server that is not Signet ({words[:120] or 'an HTML page'}); "
        "is another program listening at this address?"
    )


_TAG = re.compile(r"<[^>]*>")
_TITLE = re.compile(r"<title[^>]*>(.*?)</title>", re.IGNORECASE | re.DOTALL)


def read_response(call: Call[T], status: int, headers: Mapping[str, str], content: bytes) -> T:
    """The parsed body of a 2xx answer, or the typed error of any other."""
    if status >= 400:
        raise error_for(status, headers, content)
    if call.text:
        return call.parse(content.decode("utf-8", "replace"))
    try:
        data = json.loads(content)
    except ValueError:
        raise SignetError(
            f"{call.method} {call.path}: the daemon answered with non-JSON (HTTP {status})", code="bad_response"
        ) from None
    try:
        return call.parse(data)
    except ValidationError as exc:
        raise SignetError(
            f"{call.method} {call.path}: unexpected response shape: {validation_message(exc)}", code="bad_response"
        ) from None
