"""Small helpers for the ASGI layers in front of the app (auth, the hot path).

They read a header from the raw scope, and read a request body once and hand it on: the auth
middleware reads JSON bodies (a scoped token's agent and project) and the hot path validates
them; the app behind them must still receive the body, unchanged.
"""

from __future__ import annotations

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
