"""``signet knowledge communities``: the knowledge graph's entity communities, recomputed on
demand with ``--refresh`` (docs/recall.md#entity-communities)."""

from __future__ import annotations

import json
from typing import Annotated
from urllib.parse import urlencode

import typer

from signet.cli.app import app
from signet.cli.client import DaemonClient
from signet.knowledge.communities import RefreshResult
from signet.knowledge.community_read import CommunityList

knowledge_app = typer.Typer(help="The knowledge graph: entity communities.", no_args_is_help=True)
app.add_typer(knowledge_app, name="knowledge")


@knowledge_app.command("communities")
def communities(
    refresh: Annotated[
        bool, typer.Option("--refresh", help="Recompute them first (Louvain; seconds on a large store).")
    ] = False,
    agent: Annotated[str | None, typer.Option("--agent", help="Whose graph (default: the default agent).")] = None,
    limit: Annotated[int, typer.Option("--limit", "-n", min=1, max=200)] = 20,
    members: Annotated[int, typer.Option("--members", min=0, max=50, help="Member names shown per community.")] = 8,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Groups of entities the memories keep naming together, largest first."""
    client = DaemonClient(timeout=600.0 if refresh else 30.0)
    if refresh:
        path = "/api/knowledge/communities/refresh" + (f"?{urlencode({'agent_id': agent})}" if agent else "")
        done = RefreshResult.model_validate(client.post_json(path))
        typer.echo(
            f"computed {done.communities} communities of {done.members} of {done.entities} entities "
            f"({done.edges} edges) in {done.took_ms / 1000:.1f} s",
            err=True,
        )
    params = {"limit": limit, "members": members, **({"agent_id": agent} if agent else {})}
    got = CommunityList.model_validate(client.get_json("/api/knowledge/communities", **params))
    if as_json:
        typer.echo(json.dumps(got.model_dump(mode="json"), indent=2))
        return
    if not got.communities:
        typer.echo(
            f"no communities for agent {got.agent_id}"
            + ("" if got.computed_at else " yet: `signet knowledge communities --refresh` computes them")
        )
        return
    typer.echo(f"{got.total} communities of agent {got.agent_id}, computed {got.computed_at}")
    for c in got.communities:
        names = ", ".join(m.name for m in c.members)
        more = f" (+{c.size - len(c.members)})" if c.size > len(c.members) else ""
        typer.echo(f"  {c.id[:8]}  {c.size:>5}  {c.quality or '-':<10} {names}{more}")
