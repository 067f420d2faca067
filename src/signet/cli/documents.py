"""``signet documents …``: add a URL, a file or a text as a document; list, show and remove them."""

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

documents_app = typer.Typer(help="Documents: web pages, PDFs, markdown and text as memory.", no_args_is_help=True)
app.add_typer(documents_app, name="documents")

FINAL = ("done", "failed")


def _line(d: dict[str, Any]) -> str:
    where = d["source_url"] or "(text)"
    chunks = f"{d['chunk_count']} chunks" if d["status"] == "done" else d["status"]
    return f"{d['id'][:8]}  {chunks:<11} {d['title'] or '-'}  {where}"


def _quoted(document_id: str) -> str:
    return quote(document_id, safe="")


def _looks_like_url(source: str) -> bool:
    return "://" in source


@documents_app.command("add")
def add(
    source: Annotated[str, typer.Argument(help="A URL, a file path, or '-' for text on stdin (with --title).")],
    title: Annotated[str | None, typer.Option(help="The title (required for text on stdin).")] = None,
    project: Annotated[str | None, typer.Option()] = None,
    wait: Annotated[bool, typer.Option("--wait", help="Wait until the document is done or failed.")] = False,
    timeout: Annotated[float, typer.Option(help="Seconds --wait waits at most.", min=1)] = 300.0,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Queue a document: a URL to fetch, a local file (read by the daemon), or text from stdin."""
    body: dict[str, Any] = {"title": title, "project": project}
    if source == "-":
        if not title:
            raise InvalidRequest("text from stdin needs --title")
        body["content"] = typer.get_text_stream("stdin").read()
    elif _looks_like_url(source):
        body["url"] = source
    else:
        path = Path(source).expanduser()
        if not path.exists():
            raise InvalidRequest(f"no such file: {source}")
        body["path"] = str(path.resolve())
    client = DaemonClient()
    queued = client.post_json("/api/documents", {k: v for k, v in body.items() if v is not None})
    doc = queued["document"]
    if wait:
        doc = _wait(client, doc["id"], timeout)
    if as_json:
        typer.echo(json.dumps(doc if wait else queued, indent=2))
    elif doc["status"] == "failed":
        raise SignetError(f"document {doc['id'][:8]} failed: {doc['error']}")
    elif doc["status"] == "done":
        typer.echo(f"done {doc['id'][:8]}: {doc['chunk_count']} chunks from {doc['title'] or source}")
    else:
        verb = "queued" if queued["created"] else "queued again"
        typer.echo(f"{verb} {doc['id'][:8]} ({source}); `signet documents show {doc['id'][:8]}` follows it")
    if as_json and doc["status"] == "failed":
        raise typer.Exit(1)


def _wait(client: DaemonClient, doc_id: str, timeout: float) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    last = None
    while True:
        doc: dict[str, Any] = client.get_json(f"/api/documents/{doc_id}")
        if doc["status"] != last:
            typer.echo(f"  {doc['status']}", err=True)
            last = doc["status"]
        if doc["status"] in FINAL:
            return doc
        if time.monotonic() > deadline:
            raise SignetError(f"document {doc_id[:8]} is still {doc['status']} after {timeout:g}s")
        time.sleep(0.25)


@documents_app.command("list")
def list_documents(
    status: Annotated[str | None, typer.Option("--status", "-s", help="queued, …, done, failed")] = None,
    project: Annotated[str | None, typer.Option()] = None,
    limit: Annotated[int, typer.Option("--limit", "-n", min=1, max=500)] = 50,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Documents, newest first."""
    data = DaemonClient().get_json("/api/documents", status=status, project=project, limit=limit)
    if as_json:
        typer.echo(json.dumps(data, indent=2))
        return
    for d in data["items"]:
        typer.echo(_line(d))
    typer.echo(f"{len(data['items'])} of {data['total']} documents")


@documents_app.command("show")
def show(
    document_id: Annotated[str, typer.Argument(help="A document id or a unique prefix of it.")],
    chunks: Annotated[bool, typer.Option("--chunks", help="Also list its chunks.")] = False,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """A document's status, error, title and counts (and its chunks with --chunks)."""
    client = DaemonClient()
    doc = client.get_json(f"/api/documents/{_quoted(document_id)}")
    parts = client.get_json(f"/api/documents/{doc['id']}/chunks") if chunks else None
    if as_json:
        typer.echo(json.dumps({**doc, "chunks": parts["chunks"]} if parts else doc, indent=2))
        return
    typer.echo(f"{doc['id']}  {doc['status']}")
    typer.echo(f"  title: {doc['title'] or '-'}")
    typer.echo(f"  source: {doc['source_url'] or '(text)'} ({doc['source_type']}, {doc['content_type'] or '?'})")
    typer.echo(f"  chunks: {doc['chunk_count']}, memories: {doc['memory_count']}")
    typer.echo(f"  updated: {doc['updated_at']}" + (f", done {doc['completed_at']}" if doc["completed_at"] else ""))
    if doc["error"]:
        typer.echo(f"  error: {doc['error']}")
    for c in parts["chunks"] if parts else []:
        path = " > ".join(c["heading_path"]) or "-"
        typer.echo(f"  [{c['index']}] {c['memory_id'][:8]}  {path}: {c['content'][:100]}")


@documents_app.command("rm")
def rm(
    document_id: Annotated[str, typer.Argument(help="A document id or a unique prefix of it.")],
) -> None:
    """Delete a document and the chunk memories only it holds."""
    done = DaemonClient().delete_json(f"/api/documents/{_quoted(document_id)}")
    typer.echo(f"deleted {done['id'][:8]} and {done['memories_deleted']} chunk memories")
