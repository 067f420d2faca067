"""/api/auth/*: who am I, issue a token (admin), revoke a token (admin)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Request
from pydantic import BaseModel, Field

from signet.auth.policy import ALL_PERMISSIONS, ROLE_PERMISSIONS
from signet.auth.state import AuthContext, revoke
from signet.auth.tokens import Role, issue
from signet.daemon.deps import RuntimeDep
from signet.models import StrictModel
from signet.store.scope import UNSCOPED, ReadScope

router = APIRouter(prefix="/api/auth", tags=["auth"])

Name = Annotated[str, Field(min_length=1, max_length=200)]


class TokenRequest(StrictModel):
    model_config = {"extra": "forbid", "populate_by_name": True}
    sub: Name
    role: Role = "agent"
    project: Name | None = None
    agent: Name | None = None
    user: Name | None = None
    ttl_seconds: int | None = Field(None, ge=1, le=10 * 365 * 86_400)


class TokenResponse(BaseModel):
    token: str
    claims: dict[str, Any]


class RevokeRequest(StrictModel):
    model_config = {"extra": "forbid"}
    token: Annotated[str, Field(min_length=3, max_length=8192)]
    reason: Annotated[str, Field(max_length=500)] | None = None


class WhoAmI(BaseModel):
    mode: str
    authenticated: bool
    local: bool
    claims: dict[str, Any] | None
    agent_id: str
    read_policy: str
    project: str | None
    permissions: list[str] = Field(
        default_factory=list,
        description="what this caller may do ('local': config, identity, tasks); the dashboard hides the rest",
    )


@router.get("/whoami")
def whoami(request: Request, runtime: RuntimeDep) -> WhoAmI:
    ctx = getattr(request.state, "auth", None)
    if not isinstance(ctx, AuthContext):
        ctx = AuthContext(runtime.auth.synced().mode, local=True)
    scope = getattr(request.state, "scope", UNSCOPED)
    scope = scope if isinstance(scope, ReadScope) else UNSCOPED
    return WhoAmI(
        mode=ctx.mode,
        authenticated=ctx.authenticated,
        local=ctx.local,
        claims=ctx.claims.to_dict() if ctx.claims else None,
        agent_id=scope.agent_id,
        read_policy=scope.policy,
        project=scope.project,
        permissions=_permissions(ctx),
    )


def _permissions(ctx: AuthContext) -> list[str]:
    """A local caller may do everything; a token, what its role allows; no token, nothing."""
    if ctx.claims is not None:
        granted = set(ROLE_PERMISSIONS[ctx.claims.role])
        return sorted(granted | {"local"} if "admin" in granted else granted)
    return sorted({*ALL_PERMISSIONS, "local"}) if ctx.local else []


@router.post("/token")
def create_token(body: TokenRequest, runtime: RuntimeDep) -> TokenResponse:
    st = runtime.auth.synced()
    token, claims = issue(
        st.secret,
        sub=body.sub,
        role=body.role,
        ttl_s=body.ttl_seconds or runtime.settings.auth.default_ttl_s,
        project=body.project,
        agent=body.agent,
        user=body.user,
    )
    return TokenResponse(token=token, claims=claims.to_dict())


@router.post("/revoke")
def revoke_token(body: RevokeRequest, runtime: RuntimeDep) -> dict[str, Any]:
    st = runtime.auth.synced()
    claims = revoke(runtime.db, body.token, st.secret, body.reason)
    return {"revoked": True, "sub": claims.sub, "exp": claims.exp}
