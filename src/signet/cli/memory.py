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
    expand: Annotated[
        bool, typer.Option("--expand", help="Show the transcript turns the best results were extracted from.")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Hybrid search over memories."""
    fields = _drop_none(
        {"limit": limit, "type": type, "tags": _tags(tags), "project": project, "who": who, "expand": expand or None}
    )
    found = DaemonClient().recall(query, **fields)
    if as_json:
        typer.echo(found.model_dump_json(indent=2))
        return
    data = found.model_dump(mode="json")
    if expand:
        _print_expanded(data)
        return
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


def _indented(text: str, first: str, rest: str) -> str:
    lines = text.splitlines() or [""]
    return "\n".join([first + lines[0], *(rest + line for line in lines[1:])])


def _print_expanded(data: dict[str, Any]) -> None:
    """``recall --expand``: one line per result, its excerpt's turns indented under it (plain
    text, not a table: transcript turns are long and multi-line); the matching turn is marked ``>``."""
    if not data["vector_search"]["available"]:
        typer.echo(f"keyword results only: {data['vector_search']['reason']}")
    if not data["results"]:
        typer.echo("no memories match")
        return
    for r in data["results"]:
        typer.echo(f"{r['score']:.3f}  {r['type']}  {r['id'][:8]}  {r['created_at'][:10]}  {r['content']}")
        ex = r.get("excerpt")
        if not ex:
            continue
        typer.echo(f"    from {ex['session_key']}:")
        for t in ex["turns"]:
            mark = ">" if t["index"] == ex["turn_index"] else " "
            typer.echo(_indented(f"{t['role']}: {t['content']}", f"    {mark} ", "      "))


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
