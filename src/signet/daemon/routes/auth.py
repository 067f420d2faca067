"""/api/auth/*: who am I, issue a token (admin), revoke a token (admin), and the admin's lists
(agents with their read policy and memory counts, revoked tokens) that the dashboard shows."""

from __future__ import annotations

import json
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from pydantic import BaseModel, Field

from signet.auth.policy import ALL_PERMISSIONS, ROLE_PERMISSIONS
from signet.auth.state import AuthContext, revoke
from signet.auth.tokens import Role, issue
from signet.daemon.deps import RuntimeDep
from signet.models import StrictModel
from signet.store.scope import UNSCOPED, ReadScope
from signet.store.sqlite import Connection

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


class AgentInfo(BaseModel):
    name: str
    read_policy: str
    group: list[str]
    on_roster: bool = Field(description="False for an agent id that owns memories but is not in agents.roster")
    memories: int = Field(description="live memories it owns")


class AgentList(BaseModel):
    items: list[AgentInfo]


class Revocation(BaseModel):
    token_id: str = Field(description="the first 12 hex digits of the token's SHA-256 (the token is never stored)")
    sub: str | None
    revoked_at: int
    expires_at: int
    reason: str | None


class RevocationList(BaseModel):
    items: list[Revocation]
    total: int


@router.get("/agents")
def list_agents(runtime: RuntimeDep) -> AgentList:
    """The roster (agents table) and any other agent id that owns live memories: an agent's
    read policy decides what its tokens see, so an admin checks it before issuing one."""
    runtime.auth.synced()

    def read(conn: Connection) -> AgentList:
        counts = {
            str(r[0]): int(r[1])
            for r in conn.execute("SELECT agent_id, COUNT(*) FROM memories WHERE is_deleted = 0 GROUP BY agent_id")
        }
        items: list[AgentInfo] = []
        for name, policy, group in conn.execute("SELECT name, read_policy, agent_group FROM agents ORDER BY name"):
            items.append(
                AgentInfo(
                    name=name,
                    read_policy=policy,
                    group=json.loads(group or "[]"),
                    on_roster=True,
                    memories=counts.pop(name, 0),
                )
            )
        items += [
            AgentInfo(name=n, read_policy="shared", group=[], on_roster=False, memories=c)
            for n, c in sorted(counts.items())
        ]
        return AgentList(items=items)

    return runtime.db.read(read)


@router.get("/revocations")
def list_revocations(
    runtime: RuntimeDep,
    limit: Annotated[int, Query(ge=1, le=500)] = 100,
    offset: Annotated[int, Query(ge=0, le=10_000_000)] = 0,
) -> RevocationList:
    """Revoked tokens, newest first. Tokens are signed, not stored, so this is the only token
    list the daemon has: an issued token is known to it only once revoked."""

    def read(conn: Connection) -> RevocationList:
        total = int(conn.execute("SELECT COUNT(*) FROM auth_revocations").fetchone()[0])
        rows = conn.execute(
            "SELECT token_id, sub, revoked_at, expires_at, reason FROM auth_revocations"
            " ORDER BY revoked_at DESC, token_id LIMIT ? OFFSET ?",
            (limit, offset),
        ).fetchall()
        return RevocationList(
            items=[
                Revocation(token_id=r[0][:12], sub=r[1], revoked_at=r[2], expires_at=r[3], reason=r[4]) for r in rows
            ],
            total=total,
        )

    return runtime.db.read(read)
