"""The FastAPI app factory."""

from __future__ import annotations

import importlib
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager

from fastapi import FastAPI
from starlette.routing import BaseRoute, Route

from signet import __version__
from signet.auth.install import install_auth
from signet.daemon.analytics_middleware import AnalyticsMiddleware
from signet.daemon.errors import BodySizeLimit, CatchAll, install_error_handlers
from signet.daemon.idle import IdleTrim
from signet.daemon.intake_barrier import IntakeBarrier
from signet.daemon.workspace_guard import WorkspaceGuard
from signet.mcp.http import mount_mcp
from signet.runtime import Runtime
from signet.workspace import Workspace

# One router per area, one line each (add yours on its own line).
ROUTERS = [
    "health",
    "memory",
    "lifecycle",
    "consolidation",
    "repair",
    "dashboard",
    "embeddings",
    "diagnostics",
    "hooks",
    "harnesses",
    "ingest",
    "pipeline",
    "feedback",
    "knowledge",
    "auth",
    "metrics",
    "docs",
    "backup",
    "transfer",
    "analytics",
    "logs",
    "secrets",
    "tasks",
    "documents",
    "connectors",
    "skills",
    "git",
    "update",
    "continuity",
]


def create_app(runtime: Runtime | Workspace | None = None, *, manage_runtime: bool = True) -> FastAPI:
    """Build the app. With ``manage_runtime`` the app starts and stops the runtime in its lifespan."""
    if runtime is None:
        runtime = Runtime(Workspace.from_env())
    elif isinstance(runtime, Workspace):
        runtime = Runtime(runtime)
    rt = runtime

    @asynccontextmanager
    async def lifespan(a: FastAPI) -> AsyncIterator[None]:
        if manage_runtime:
            rt.start()
            a.state.idle.start()
        try:
            async with a.state.mcp.lifespan():  # the /mcp session manager (signet.mcp.http)
                yield
        finally:
            if manage_runtime:
                a.state.idle.stop()
                rt.stop()

    app = FastAPI(
        title="Signet",
        version=__version__,
        description="Local-first memory for AI agents.",
        lifespan=lifespan,
        # No OpenTelemetry: a local daemon exports nothing, and FastAPI's native telemetry
        # asks the global providers on every request otherwise (docs/benchmarks.md, latency).
        telemetry={"tracing": False, "metrics": False, "logs": False},
        # FastAPI's pages load their scripts from a CDN: the daemon serves its own (routes/docs.py).
        docs_url=None,
        redoc_url=None,
    )
    app.state.runtime = rt
    install_error_handlers(app)
    for name in ROUTERS:
        app.include_router(importlib.import_module(f"signet.daemon.routes.{name}").router)
    document_errors(app)
    app.state.mcp = mount_mcp(app, rt)
    app.add_middleware(IntakeBarrier, runtime=rt)  # reads see the remembers accepted before them
    install_auth(app, rt.settings)  # Host check, tokens, permissions, scopes, rate limits (signet.auth)
    app.add_middleware(BodySizeLimit)
    app.add_middleware(WorkspaceGuard, runtime=rt)  # a request for another workspace does nothing
    app.add_middleware(AnalyticsMiddleware, analytics=rt.observability.analytics)  # usage, latency, errors
    app.state.responses = {"2xx": 0, "3xx": 0, "4xx": 0, "5xx": 0, "work": 0}
    responses = app.state.responses
    app.state.idle = IdleTrim(lambda: responses["work"])  # memory back to the system when idle
    app.add_middleware(
        CatchAll, responses=app.state.responses
    )  # outermost: an unexpected error is a JSON 500 on a connection that stays open
    return app


FRONT_DOOR_ERRORS = {
    400: "malformed or too deeply nested body",
    401: "a token is required or invalid (team/hybrid mode)",
    403: "not allowed: host, origin, role or scope",
    409: "the daemon serves another workspace (X-Signet-Workspace), or a conflict",
    413: "body over 8 MiB",
    422: "invalid request",
    429: "rate limited (Retry-After)",
    500: "unexpected error (see the daemon log)",
    503: "unavailable: storage, provider or frozen mutations",
}
"""Answers the layers in front of every route can give, whatever the route."""


def document_errors(app: FastAPI) -> None:
    """Declare the error answers every route can give (the front door's, and 404 where a path
    names a resource) in the OpenAPI schema, with the one error shape: what a client reads in
    the schema is what it gets (schemathesis checks status codes and content types)."""
    from fastapi.routing import APIRoute

    from signet.models import ErrorResponse

    for _, path, route in iter_routes(app.routes):
        if not isinstance(route, APIRoute):
            continue
        codes = dict(FRONT_DOOR_ERRORS)
        if "{" in path:
            codes[404] = "not found"
        for code, why in codes.items():
            route.responses.setdefault(code, {"model": ErrorResponse, "description": why})


def iter_routes(routes: list[BaseRoute], prefix: str = "") -> Iterator[tuple[str, str, BaseRoute]]:
    """Every (method, path, route) of an app, flattening included routers.

    FastAPI keeps ``include_router`` results as nested router objects, so ``app.routes``
    alone does not list the endpoints; tests (docs, permissions) must walk them with this.
    """
    for route in routes:
        ctx = getattr(route, "include_context", None)
        if ctx is not None:
            yield from iter_routes(ctx.included_router.routes, prefix + (ctx.prefix or ""))
        elif isinstance(route, Route):
            for method in sorted(route.methods or {"GET"}):
                if method != "HEAD":
                    yield method, prefix + route.path, route
        else:
            path = getattr(route, "path", None)
            if path is not None:
                yield "*", prefix + path, route
