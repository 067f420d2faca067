"""``signet token create|revoke``: bearer tokens for team and hybrid modes.

Both work on the workspace directly (the signing secret and the database), so an admin
can issue the first token before any token exists and revoke one with the daemon down;
a running daemon sees a revocation on its next request (the list lives in SQLite).
"""

from __future__ import annotations

import json
from typing import Annotated

import typer

from signet.auth.state import revoke
from signet.auth.tokens import ROLES, Role, issue, load_secret, parse_ttl
from signet.cli.app import app
from signet.errors import InvalidRequest
from signet.secrets.store import reader as secret_reader
from signet.store.choose import build_store
from signet.workspace import Workspace

token_app = typer.Typer(help="Auth tokens for team/hybrid mode: create, revoke.", no_args_is_help=True)
app.add_typer(token_app, name="token")


@token_app.command("create")
def create(
    sub: Annotated[str, typer.Option("--sub", help="Who the token is for (the rate-limit actor).")],
    role: Annotated[str, typer.Option("--role", help="admin, operator, agent or readonly.")] = "agent",
    project: Annotated[str | None, typer.Option("--project", help="Only this project's memories.")] = None,
    agent: Annotated[str | None, typer.Option("--agent", help="Only this agent's view.")] = None,
    user: Annotated[str | None, typer.Option("--user", help="User scope claim.")] = None,
    ttl: Annotated[
        str | None, typer.Option("--ttl", help="Lifetime: seconds or 30m, 12h, 7d (default auth.defaultTtlSeconds).")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the token and its claims as JSON.")] = False,
) -> None:
    """Sign a token with the workspace secret and print it."""
    if role not in ROLES:
        raise InvalidRequest(f"unknown role {role!r}; one of {', '.join(ROLES)}")
    ws = Workspace.from_env()
    r: Role = role
    ttl_s = parse_ttl(ttl) if ttl else ws.settings().auth.default_ttl_s
    token, claims = issue(load_secret(ws.root), sub=sub, role=r, ttl_s=ttl_s, project=project, agent=agent, user=user)
    typer.echo(json.dumps({"token": token, "claims": claims.to_dict()}) if as_json else token)


@token_app.command("revoke")
def revoke_cmd(
    token: Annotated[str, typer.Argument(help="The token to revoke.")],
    reason: Annotated[str | None, typer.Option("--reason")] = None,
) -> None:
    """Add a token to the persistent revocation list (no secret rotation needed)."""
    ws = Workspace.from_env()
    settings = ws.settings()
    with build_store(ws, settings, secret_reader(ws.secrets_dir, settings.secrets.key_store)) as db:
        claims = revoke(db, token.strip(), load_secret(ws.root), reason)
    typer.echo(f"revoked token of {claims.sub} (role {claims.role})")
