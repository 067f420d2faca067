"""Wiring auth into the app and the server (one call each from the core)."""

from __future__ import annotations

from fastapi import FastAPI
from starlette.middleware.cors import CORSMiddleware

from signet.auth.middleware import AuthMiddleware
from signet.auth.state import effective_mode, is_loopback
from signet.config import Settings
from signet.errors import ConfigError


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


def check_bind(host: str, settings: Settings) -> None:
    """Local mode has no tokens, so it may only listen on loopback."""
    if effective_mode(settings) == "local" and not (is_loopback(host) or host.lower() == "localhost"):
        raise ConfigError(
            f"refusing to listen on {host}: authMode is 'local' (no tokens), which is only safe on "
            "loopback. Set `auth: {mode: team}` (or hybrid) in agent.yaml and create tokens with "
            "`signet token create`, or bind 127.0.0.1. See docs/security.md."
        )
