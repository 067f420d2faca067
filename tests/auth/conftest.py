"""Helpers for the auth tests: apps in a chosen mode, tokens signed with the workspace secret."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from signet.auth.tokens import Role, issue, load_secret
from signet.workspace import Workspace
from tests.conftest import write_config


def configure(ws: Workspace, mode: str, **auth: Any) -> Workspace:
    write_config(ws, auth={"mode": mode, **auth})
    return ws


def token_for(
    ws: Workspace, role: Role, sub: str | None = None, *, ttl: int = 3600, now: float | None = None, **scope: str | None
) -> str:
    tok, _ = issue(load_secret(ws.root), sub=sub or f"{role}-user", role=role, ttl_s=ttl, now=now, **scope)
    return tok


def bearer(tok: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {tok}"}


def expired_token(ws: Workspace, role: Role = "admin") -> str:
    return token_for(ws, role, ttl=10, now=time.time() - 100)


def forged_token(ws: Workspace, role: Role = "admin") -> str:
    """Validly shaped and signed, but with another secret."""
    tok, _ = issue(b"x" * 32, sub="mallory", role=role, ttl_s=3600)
    return tok


TokenMaker = Callable[..., str]
