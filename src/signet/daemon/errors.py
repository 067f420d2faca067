"""Every failure becomes a JSON body with a message and a code; bodies are size-capped."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from signet.errors import InvalidRequest, RateLimited, SignetError, StorageBusy, StorageError, storage_error
from signet.store.sqlite import sqlite3

log = logging.getLogger(__name__)

MAX_BODY_BYTES = 8 * 1024 * 1024


def _problems(exc: RequestValidationError) -> list[dict[str, Any]]:
    out = []
    for err in exc.errors()[:20]:
        loc = ".".join(str(p) for p in err.get("loc", ()) if p != "body")
        out.append({"field": loc or "body", "message": str(err.get("msg", "invalid"))})
    return out


def signet_error_response(exc: SignetError) -> JSONResponse:
    """A domain error as the API answers it: its status, message and code (and Retry-After)."""
    headers = {"Retry-After": str(exc.retry_after)} if isinstance(exc, RateLimited) else None
    return JSONResponse(exc.to_dict(), status_code=exc.status, headers=headers)


def database_error(exc: BaseException, db_path: Path) -> SignetError | None:
    """What a store error under a request means, with what to do; None: an internal error.

    SQLite's are read from its message (signet.errors.storage_error). PostgreSQL's arrive as
    the same DB-API classes carrying ``sqlstate`` (signet.store.pg_errors): a data exception
    (class 22: a NUL byte in text, a number out of range) is a value the server refuses, the
    caller's to correct (400); a lost server (08, 53, 57) or a write that lost a deadlock or a
    lock race with another daemon (40, 55P03) is 503, retry; the file-based readings do not
    apply to a server."""
    state = getattr(exc, "sqlstate", None)
    if state is not None:
        if state.startswith("22"):
            return InvalidRequest(f"the database refuses a value of this request: {exc}")
        if state.startswith(("08", "53", "57")):  # connection, resources, operator intervention
            return StorageError(f"the PostgreSQL server cannot serve this request now ({exc}); retry it")
        if state.startswith("40") or state == "55P03":  # deadlock, serialization, lock not available
            return StorageBusy(f"this write collided with another daemon's ({exc}); retry it")
        return None
    return storage_error(exc, db_path)


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(SignetError)
    async def signet_error(_: Request, exc: SignetError) -> JSONResponse:
        return signet_error_response(exc)

    @app.exception_handler(RequestValidationError)
    async def validation_error(_: Request, exc: RequestValidationError) -> JSONResponse:
        problems = _problems(exc)
        first = problems[0] if problems else {"field": "body", "message": "invalid request"}
        return JSONResponse(
            {
                "error": f"invalid request: {first['field']}: {first['message']}",
                "code": "invalid_request",
                "problems": problems,
            },
            status_code=422,
        )

    @app.exception_handler(StarletteHTTPException)
    async def http_error(_: Request, exc: StarletteHTTPException) -> JSONResponse:
        code = {404: "not_found", 405: "method_not_allowed", 413: "payload_too_large"}.get(
            exc.status_code, "http_error"
        )
        return JSONResponse(
            {"error": str(exc.detail), "code": code}, status_code=exc.status_code, headers=getattr(exc, "headers", None)
        )

    @app.exception_handler(sqlite3.DatabaseError)
    async def storage_failure(request: Request, exc: Exception) -> JSONResponse:
        # A read that hits a damaged page: say what is wrong and what to do, not "internal error".
        typed = database_error(exc, request.app.state.runtime.db_path)
        if typed is None:
            log.exception("database error on %s %s", request.method, request.url.path)
            return JSONResponse(
                {"error": f"internal error: {type(exc).__name__}; see the daemon log", "code": "internal_error"},
                status_code=500,
            )
        return signet_error_response(typed)

    @app.exception_handler(Exception)
    async def unexpected(request: Request, exc: Exception) -> JSONResponse:
        log.exception("unhandled error on %s %s", request.method, request.url.path)
        return JSONResponse(
            {"error": f"internal error: {type(exc).__name__}; see the daemon log", "code": "internal_error"},
            status_code=500,
        )


class BodySizeLimit:
    """Refuse bodies over ``limit`` bytes with 413, whether or not Content-Length is sent."""

    def __init__(self, app: ASGIApp, limit: int = MAX_BODY_BYTES) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        for name, value in scope.get("headers", []):
            if name == b"content-length":
                try:
                    too_big = int(value) > self.limit
                except ValueError:
                    too_big = True
                if too_big:
                    await self._reject(send)
                    return
        seen = 0

        async def limited() -> Message:
            nonlocal seen
            msg = await receive()
            if msg["type"] == "http.request":
                seen += len(msg.get("body", b""))
                if seen > self.limit:
                    raise _TooLarge
            return msg

        try:
            await self.app(scope, limited, send)
        except _TooLarge:
            await self._reject(send)

    async def _reject(self, send: Send) -> None:
        resp = JSONResponse(
            {"error": f"request body larger than {self.limit} bytes", "code": "payload_too_large"}, status_code=413
        )
        await send({"type": "http.response.start", "status": 413, "headers": resp.raw_headers})
        await send({"type": "http.response.body", "body": resp.body})


class _TooLarge(Exception):
    pass


QUIET_PATHS = ("/health", "/metrics")


class CatchAll:
    """The last word on an unexpected error: a JSON 500 on a connection that stays open.

    Starlette's own catch-all answers and then re-raises, and uvicorn closes a keep-alive
    connection whose application raised: the client's next request on it fails with no
    answer. Here the error is logged and answered, and nothing is re-raised, unless the
    response had already started (then the connection cannot be saved)."""

    def __init__(self, app: ASGIApp, responses: dict[str, int] | None = None) -> None:
        self.app = app
        self.responses = responses if responses is not None else {}
        """Responses sent since start, by status class (``app.state.responses``, ``/metrics``),
        and under ``"work"`` those of every route but ``/health`` and ``/metrics`` (what tells
        the daemon it is busy: a monitor polling it is not work, signet.daemon.idle)."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False
        responses = self.responses

        async def tracked(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
                klass = f"{int(message['status']) // 100}xx"
                responses[klass] = responses.get(klass, 0) + 1
                if scope.get("path") not in QUIET_PATHS:
                    responses["work"] = responses.get("work", 0) + 1
            await send(message)

        try:
            await self.app(scope, receive, tracked)
        except Exception as exc:
            if started:
                raise
            app = scope.get("app")
            typed = (
                database_error(exc, app.state.runtime.db_path)
                if app is not None and isinstance(exc, sqlite3.DatabaseError)
                else None
            )
            if typed is not None:  # a damaged page under a request: what to do, not "internal error"
                await signet_error_response(typed)(scope, receive, tracked)
                return
            log.exception("unhandled error on %s %s", scope.get("method"), scope.get("path"))
            await JSONResponse(
                {"error": f"internal error: {type(exc).__name__}; see the daemon log", "code": "internal_error"},
                status_code=500,
            )(scope, receive, tracked)
