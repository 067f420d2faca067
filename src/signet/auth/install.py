"""Wiring auth into the app (the bind check, made before the app exists, is signet.auth.bind.check_bind)."""

from __future__ import annotations

from fastapi import FastAPI
from starlette.middleware.cors import CORSMiddleware

from signet.auth.middleware import AuthMiddleware
from signet.config import Settings


def install_auth(app: FastAPI, settings: Settings) -> None:
    """Add the auth middleware (the agent roster is synced when the runtime starts, or, for a
    runtime started before the app was built, on the first request)."""
    app.add_middleware(AuthMiddleware)
    origins = settings.auth.cors_origins
    if origins:  # closed unless configured: no CORS headers, browser pages of other sites get nothing
        app.add_middleware(
            CORSMiddleware,
            allow_origins=origins,
            allow_methods=["GET", "POST", "PATCH", "DELETE"],
            allow_headers=["authorization", "content-type", "x-signet-actor", "x-signet-agent"],
        )
