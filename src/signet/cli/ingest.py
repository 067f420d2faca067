"""``signet ingest PATH…``: store transcripts (Claude Code, Codex, OpenClaw JSONL, any JSONL
chat log, Markdown, plain text) once each, with their original times."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from signet.cli.app import app
from signet.cli.client import DaemonClient
from signet.cli.hook import MAX_BODY
from signet.errors import SignetError
from signet.ingest.base import NotText, Transcript, TranscriptError, file_hash, require_text
from signet.ingest.detect import all_adapters, detect, get_adapter

SUFFIXES = {".jsonl", ".ndjson", ".md", ".markdown", ".mdx", ".txt", ".text", ".log", ".vscdb"}


def collect(paths: list[Path]) -> list[Path]:
    """Files named directly, and transcript-like files under directories (sorted, no dupes)."""
    out: dict[Path, None] = {}
    for p in paths:
        if p.is_dir():
            for f in sorted(p.rglob("*")):
                if f.is_file() and f.suffix.lower() in SUFFIXES and not any(part.startswith(".") for part in f.parts):
                    out.setdefault(f.resolve(), None)
        elif p.is_file():
            out.setdefault(p.resolve(), None)
        else:
            raise typer.BadParameter(f"{p}: no such file or directory")
    return list(out)


def bodies_for(path: Path, adapter_name: str | None, adapters: dict[str, Any]) -> list[dict[str, Any]]:
    """The request bodies for one file: one transcript, or one per conversation of a store
    that holds many (a Cursor ``state.vscdb``)."""
    adapter = get_adapter(adapter_name, adapters) if adapter_name else detect(path, adapters)
    parse_many = getattr(adapter, "parse_many", None)
    if getattr(adapter, "binary", False) and callable(parse_many):
        many: list[Transcript] = parse_many(path)
        return [_body(f"{path}#{t.session_id}", adapter.name, t, _conversation_hash(t)) for t in many]
    data = path.read_bytes()
    require_text(path, data)  # a binary file is never stored, whatever text adapter would take it
    return [_body(str(path), adapter.name, adapter.parse(path), file_hash(data))]


def _conversation_hash(t: Transcript) -> str:
    """A conversation of a multi-conversation store is skipped when unchanged: its hash is
    that of its id and turns, not of the whole file (which changes with any conversation)."""
    data = json.dumps([t.session_id, [x.to_dict() for x in t.turns]], ensure_ascii=False).encode("utf-8")
    return file_hash(data)


def _body(source: str, adapter: str, parsed: Transcript, content_hash: str) -> dict[str, Any]:
    """``source``: the file, or ``file#conversation`` for one conversation of a store."""
    body = {
        "path": source,
        "content_hash": content_hash,
        "adapter": adapter,
        "session_id": parsed.session_id,
        "harness": parsed.harness,
        "project": parsed.project,
        "turns": [t.to_dict() for t in parsed.turns],
    }
    size = len(json.dumps(body))
    if size > MAX_BODY:
        raise TranscriptError(f"{source}: {size / 2**20:.1f} MiB of turns is over the daemon's request limit; split it")
    return body


@app.command()
def ingest(
    paths: Annotated[list[Path], typer.Argument(help="Files or directories to ingest.")],
    adapter: Annotated[
        str | None,
        typer.Option(help="Force an adapter (claude-code, codex, openclaw, cursor, jsonl, markdown, text)."),
    ] = None,
    project: Annotated[str | None, typer.Option(help="Tag every transcript with this project.")] = None,
) -> None:
    """Ingest transcripts; unchanged files already ingested are skipped (by content hash)."""
    files = collect(paths)
    named = {p.resolve() for p in paths if p.is_file()}
    adapters = all_adapters()
    client = DaemonClient(timeout=120.0)
    stored = skipped = failed = turns = 0
    with Progress(
        TextColumn("[bold]ingest"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("{task.description}"),
        transient=False,
    ) as progress:
        task = progress.add_task("", total=len(files))
        for f in files:
            progress.update(task, description=f.name)
            try:
                bodies = [b for b in bodies_for(f, adapter, adapters) if b["turns"]]
                if not bodies:
                    progress.console.print(f"[yellow]empty[/] {f} (no turns found)")
                    skipped += 1
                    continue
                results = []
                for body in bodies:
                    if project:
                        body["project"] = project
                    results.append(client.post_json("/api/ingest/transcript", body))
            except NotText as exc:
                if f in named:  # asked for by name: a failure; found in a directory: passed over
                    progress.console.print(f"[red]failed[/] {exc}")
                    failed += 1
                else:
                    progress.console.print(f"[yellow]skipped[/] {exc}")
                    skipped += 1
            except (TranscriptError, OSError) as exc:
                progress.console.print(f"[red]failed[/] {f}: {exc}")
                failed += 1
            except SignetError as exc:
                if exc.code == "daemon_unavailable":
                    raise
                progress.console.print(f"[red]failed[/] {f}: {exc.message}")
                failed += 1
            else:
                for res in results:
                    if res["status"] == "stored":
                        stored += 1
                        turns += int(res["turns"])
                    else:
                        skipped += 1
            finally:
                progress.advance(task)
    typer.echo(
        f"stored {stored} file(s) ({turns} turns), skipped {skipped} unchanged, empty or not text, failed {failed}"
    )
    if failed:
        raise typer.Exit(1)
