"""``signet connectors …``: keep a folder's markdown and text files as documents."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import quote

import typer

from signet.cli.app import app
from signet.cli.client import DaemonClient
from signet.errors import InvalidRequest, SignetError

connectors_app = typer.Typer(help="Connectors: folders kept in step with their documents.", no_args_is_help=True)
app.add_typer(connectors_app, name="connectors")

BUSY = ("queued", "extracting", "chunking", "embedding", "indexing")


def _q(connector_id: str) -> str:
    return quote(connector_id, safe="")


def _summary(r: dict[str, Any]) -> str:
    skipped = f", {r['skipped']} skipped" if r["skipped"] else ""
    return (
        f"scanned {r['scanned']} files: {r['queued']} queued, {r['unchanged']} unchanged, "
        f"{r['deleted']} deleted{skipped}"
    )


def _follow(client: DaemonClient, cid: str, timeout: float) -> dict[str, Any]:
    """Print progress until no document of the connector waits; its health at the end."""
    deadline = time.monotonic() + timeout
    last = ""
    while True:
        h: dict[str, Any] = client.get_json(f"/api/connectors/{_q(cid)}/health")
        docs = h["documents"]
        busy = sum(docs.get(s, 0) for s in BUSY)
        line = f"  {docs.get('total', 0) - busy}/{docs.get('total', 0)} documents processed"
        if docs.get("failed"):
            line += f", {docs['failed']} failed"
        if line != last:
            typer.echo(line, err=True)
            last = line
        if busy == 0:
            return h
        if time.monotonic() > deadline:
            raise SignetError(f"{busy} documents still waiting after {timeout:g}s; `signet documents list` shows them")
        time.sleep(0.5)


@connectors_app.command("add")
def add(
    root: Annotated[str, typer.Argument(help="The folder whose files become documents.")],
    name: Annotated[str | None, typer.Option(help="Defaults to the folder's name.")] = None,
    include: Annotated[
        list[str] | None, typer.Option(help="A glob of files to keep (repeat; default md, txt).")
    ] = None,
    exclude: Annotated[list[str] | None, typer.Option(help="A glob of files to leave out (repeat).")] = None,
    gitignore: Annotated[bool, typer.Option("--gitignore/--no-gitignore", help="Respect .gitignore files.")] = True,
    watch: Annotated[bool, typer.Option("--watch/--no-watch", help="Sync on every change.")] = True,
    project: Annotated[str | None, typer.Option()] = None,
    wait: Annotated[bool, typer.Option("--wait", help="Wait until every document is processed.")] = False,
    timeout: Annotated[float, typer.Option(help="Seconds --wait waits at most.", min=1)] = 3600.0,
) -> None:
    """Register a folder and sync it once."""
    folder = Path(root).expanduser()
    if not folder.is_dir():
        raise InvalidRequest(f"not a folder: {root}")
    config: dict[str, Any] = {"root": str(folder.resolve()), "gitignore": gitignore, "watch": watch}
    if include:
        config["include"] = include
    if exclude:
        config["exclude"] = exclude
    body = {"config": config, "name": name, "project": project}
    client = DaemonClient()
    made = client.post_json("/api/connectors", {k: v for k, v in body.items() if v is not None})
    typer.echo(f"added connector {made['id'][:8]} ({made['name']}: {made['config']['root']})")
    result = client.post_json(f"/api/connectors/{made['id']}/sync")
    typer.echo(_summary(result))
    if wait:
        _follow(client, made["id"], timeout)


@connectors_app.command("list")
def list_connectors(as_json: Annotated[bool, typer.Option("--json")] = False) -> None:
    """Connectors with their status, documents and last error."""
    data = DaemonClient().get_json("/api/connectors")
    if as_json:
        typer.echo(json.dumps(data, indent=2))
        return
    for c in data["items"]:
        err = f"  error: {c['last_error']}" if c["last_error"] else ""
        typer.echo(f"{c['id'][:8]}  {c['status']:<7} {c['documents']:>6} docs  {c['name']}  {c['config']['root']}{err}")
    typer.echo(f"{data['total']} connectors")


@connectors_app.command("sync")
def sync(
    connector_id: Annotated[str, typer.Argument(help="A connector id or a unique prefix of it.")],
    full: Annotated[bool, typer.Option("--full", help="Queue every file again, whatever changed.")] = False,
    wait: Annotated[bool, typer.Option("--wait", help="Wait until every document is processed.")] = False,
    timeout: Annotated[float, typer.Option(help="Seconds --wait waits at most.", min=1)] = 3600.0,
) -> None:
    """Sync a connector now (incremental, or --full)."""
    client = DaemonClient()
    result = client.post_json(f"/api/connectors/{_q(connector_id)}/sync" + ("/full" if full else ""))
    typer.echo(_summary(result))
    if wait:
        h = _follow(client, result["connector_id"], timeout)
        if h["documents"].get("failed"):
            raise SignetError(f"{h['documents']['failed']} documents failed; `signet documents list --status failed`")


@connectors_app.command("rm")
def rm(connector_id: Annotated[str, typer.Argument(help="A connector id or a unique prefix of it.")]) -> None:
    """Delete a connector with its documents and their chunk memories."""
    done = DaemonClient().delete_json(f"/api/connectors/{_q(connector_id)}")
    typer.echo(
        f"deleted connector {done['id'][:8]}, {done['documents_deleted']} documents, "
        f"{done['memories_deleted']} chunk memories"
    )
