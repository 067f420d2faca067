"""Small helpers for the ASGI layers in front of the app (auth, the workspace guard).

They read a header from the raw scope, and read a request body once and hand it on: the auth
middleware reads JSON bodies (a scoped token's agent and project); the app behind it must still
receive the body, unchanged.
"""

from __future__ import annotations

import json
from typing import Any

from starlette.types import Message, Receive, Scope


def header(scope: Scope, name: bytes) -> str | None:
    """The first value of a (lower-case) header, as Starlette's ``Headers.get`` gives it."""
    for k, v in scope.get("headers", []):
        if k == name:
            return str(v.decode("latin-1"))
    return None


async def read_body(receive: Receive) -> bytes:
    """The whole request body (every ``http.request`` chunk)."""
    chunks: list[bytes] = []
    while True:
        msg = await receive()
        if msg["type"] != "http.request":
            break
        chunks.append(msg.get("body", b""))
        if not msg.get("more_body", False):
            break
    return b"".join(chunks)


def replay(body: bytes, receive: Receive) -> Receive:
    """A ``receive`` that gives ``body`` as one chunk, then defers to the original (disconnects)."""
    sent = False

    async def again() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return again


MAX_JSON_DEPTH = 64
"""Deepest nesting a request body may have: no Signet request needs more than a handful of
levels, and a bound far below the interpreter's recursion limit keeps every later walk
(validation, scope checks) safe."""


class BodyTooDeep(ValueError):
    """A JSON body nested deeper than :data:`MAX_JSON_DEPTH` (answered with 400)."""


def decode_json(body: bytes) -> Any:
    """Decode a request body once for every layer in front of the app.

    Returns :data:`NOT_JSON` for an empty or malformed body (the route's own validation then
    answers 422); raises :class:`BodyTooDeep` for nesting beyond :data:`MAX_JSON_DEPTH`,
    including nesting so deep that the decoder itself gives up (a ``RecursionError``, which
    used to surface as a 500)."""
    if not body:
        return NOT_JSON
    try:
        data = json.loads(body)
    except RecursionError:
        raise BodyTooDeep(f"request body is nested too deeply (more than {MAX_JSON_DEPTH} levels)") from None
    except (ValueError, UnicodeDecodeError):
        return NOT_JSON
    if _depth_exceeds(data, MAX_JSON_DEPTH):
        raise BodyTooDeep(f"request body is nested too deeply (more than {MAX_JSON_DEPTH} levels)")
    return data


NOT_JSON: Any = object()
"""What :func:`decode_json` returns for a body that is not JSON."""


def _depth_exceeds(data: Any, limit: int) -> bool:
    """Iterative: a recursive walk is what a deep body attacks."""
    stack: list[tuple[Any, int]] = [(data, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict):
            children: Any = node.values()
        elif isinstance(node, list):
            children = node
        else:
            continue
        if depth > limit:
            return True
        stack.extend((c, depth + 1) for c in children if isinstance(c, (dict, list)))
    return False
