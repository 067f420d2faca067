"""Memory commands: remember, recall, forget, history."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from signet.cli.app import app
from signet.cli.client import DaemonClient
from signet.errors import InvalidRequest, NotFound


def _tags(value: str | None) -> list[str] | None:
    return [t.strip() for t in value.split(",") if t.strip()] if value else None


def _drop_none(d: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in d.items() if v is not None}


@app.command()
def remember(
    content: Annotated[str, typer.Argument(help="What to remember ('critical:' and '[a,b]:' prefixes work).")],
    type: Annotated[str | None, typer.Option("--type", "-t")] = None,
    importance: Annotated[float | None, typer.Option(min=0.0, max=1.0)] = None,
    tags: Annotated[str | None, typer.Option(help="Comma-separated tags.")] = None,
    who: Annotated[str | None, typer.Option()] = None,
    project: Annotated[str | None, typer.Option()] = None,
    pinned: Annotated[bool, typer.Option("--pinned")] = False,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Store a memory."""
    fields = _drop_none(
        {
            "type": type,
            "importance": importance,
            "tags": _tags(tags),
            "who": who or "cli",
            "project": project,
            "pinned": pinned or None,
        }
    )
    done = DaemonClient().remember(content, **fields)
    if as_json:
        typer.echo(done.model_dump_json(indent=2))
        return
    if done.retired:
        typer.echo(
            f"not stored: this text was retired (memory {done.id}); `signet unretire {done.id[:8]}` allows it again"
        )
        return
    if done.reinforced:
        typer.echo(f"reinforced {done.id} ({done.type}, {done.confirmations} confirmations)")
        return
    verb = "already remembered" if done.deduped else "remembered"
    typer.echo(f"{verb} {done.id} ({done.type})")


@app.command()
def recall(
    query: Annotated[str, typer.Argument(help="What to look for (any text).")],
    limit: Annotated[int, typer.Option("--limit", "-n", min=1, max=200)] = 10,
    type: Annotated[str | None, typer.Option("--type", "-t")] = None,
    tags: Annotated[str | None, typer.Option(help="Comma-separated; all must match.")] = None,
    project: Annotated[str | None, typer.Option()] = None,
    who: Annotated[str | None, typer.Option()] = None,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Hybrid search over memories."""
    fields = _drop_none({"limit": limit, "type": type, "tags": _tags(tags), "project": project, "who": who})
    found = DaemonClient().recall(query, **fields)
    if as_json:
        typer.echo(found.model_dump_json(indent=2))
        return
    data = found.model_dump(mode="json")
    from rich.console import Console
    from rich.table import Table

    console = Console()
    if not data["vector_search"]["available"]:
        console.print(f"[yellow]keyword results only: {data['vector_search']['reason']}[/]")
    if not data["results"]:
        console.print("no memories match")
        return
    t = Table("score", "type", "content", "id", "created", show_lines=False)
    for r in data["results"]:
        t.add_row(f"{r['score']:.3f}", r["type"], r["content"], r["id"][:8], r["created_at"][:10])
    console.print(t)


@app.command()
def forget(
    ids: Annotated[list[str] | None, typer.Argument(help="Memory ids or unique id prefixes.")] = None,
    query: Annotated[str | None, typer.Option("--query", "-q")] = None,
    type: Annotated[str | None, typer.Option("--type", "-t")] = None,
    tags: Annotated[str | None, typer.Option()] = None,
    project: Annotated[str | None, typer.Option()] = None,
    reason: Annotated[str | None, typer.Option(help="Why (required to execute).")] = None,
    force: Annotated[bool, typer.Option(help="Hard delete (not recoverable).")] = False,
    persist: Annotated[
        bool, typer.Option(help="Retire for good: no later ingest, import or remember brings the text back.")
    ] = False,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")] = False,
) -> None:
    """Forget memories: previews what matches, then soft-deletes after confirmation."""
    sel = _drop_none({"ids": ids or None, "query": query, "type": type, "tags": _tags(tags), "project": project})
    if not sel:
        raise InvalidRequest("say what to forget: ids, --query, or a filter such as --type/--tags/--project")
    client = DaemonClient()
    preview = client.forget_preview(**sel)
    # An id that names no memory is a mistake to report (a typo, one already forgotten), not
    # "nothing to do": exit 1 before anything is forgotten. A filter that matches nothing is fine.
    missing = [i for i in ids or [] if not any(c.id.startswith(i) for c in preview.candidates)]
    if missing:
        raise NotFound(
            f"no active memory {'that matches the filters ' if len(sel) > 1 else ''}has id {missing[0]!r}"
            + (f" (nor {len(missing) - 1} other id(s) given)" if len(missing) > 1 else "")
            + "; nothing was forgotten. Find ids with `signet recall QUERY`"
        )
    if not preview.candidates:
        typer.echo("nothing matches")
        return
    for c in preview.candidates:
        typer.echo(f"  {c.id[:8]}  {c.content[:100]}")
    if not reason:
        raise InvalidRequest(f"{preview.count} memories match; pass --reason to forget them")
    if not yes and not typer.confirm(f"Forget {preview.count} memories?"):
        raise typer.Exit(1)
    done = client.forget(**sel, reason=reason, force=force, persist=persist, confirm_token=preview.confirm_token)
    typer.echo(
        f"forgot {done.count} memories"
        + (" (hard delete)" if force else " (recoverable)")
        + (f"; {len(done.retired)} retired for good" if done.retired else "")
    )


@app.command()
def history(
    memory_id: Annotated[str, typer.Argument(help="A memory id, or a unique prefix of it (4+ characters).")],
) -> None:
    """Show the change history of a memory."""
    for e in DaemonClient().history(memory_id).events:
        typer.echo(f"{e.created_at}  {e.event:<9} by {e.changed_by}: {e.reason or ''}")
