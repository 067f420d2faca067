"""``signet export`` and ``signet import``: the store as a JSON Lines file, and back; and other
tools' memory files (Markdown) as memories.

Both go through the daemon, which owns the database (one writer): ``GET /api/export`` streams
the file, ``POST /api/import`` takes it in batches. An import reads the whole file once first
and sends nothing unless every line is valid, refers only to entities the file defines, and
the counts match its header (a cut-off file is refused whole). Progress goes to stderr, so
``signet export - | gzip`` keeps a clean stdout.
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Annotated, Any

import httpx
import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from signet.cli.app import app
from signet.cli.client import DaemonClient
from signet.errors import InvalidRequest, RateLimited, SignetError, WrongWorkspace
from signet.ingest.base import NotText
from signet.ingest.memory_files import DEFAULT_MAX_TOKENS, KINDS, read_memory_file, remember_items
from signet.instance import wrong_workspace_message
from signet.memory.export_format import (
    MAX_LINE_BYTES,
    EntityLine,
    Header,
    MemoryLine,
    RelationLine,
    RetirementLine,
    check_header,
    parse_line,
    sniff_header,
)
from signet.sdk._client import _unreachable
from signet.sdk._core import error_for

TIMEOUT_S = 300.0
BATCH_LINES = 500
BATCH_BYTES = MAX_LINE_BYTES
RATE_LIMIT_RETRIES = 5


def _progress(label: str) -> Progress:
    """A progress bar on stderr, shown on a terminal only: piped or logged, stderr gets the
    summary and errors, one line each, not a bar's last frame."""
    console = Console(stderr=True)
    return Progress(
        TextColumn(f"[bold]{label}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=False,
        disable=not console.is_terminal,
    )


def _error(client: DaemonClient, resp: httpx.Response) -> SignetError:
    err = error_for(resp.status_code, resp.headers, resp.content)
    if isinstance(err, WrongWorkspace):
        served = err.details.get("workspace")
        served = served if isinstance(served, str) else None
        return WrongWorkspace(wrong_workspace_message(client.port, served, client.workspace), workspace=served)
    return err


# -- export ------------------------------------------------------------------------------------


@contextmanager
def _target(file: str, force: bool) -> Iterator[tuple[IO[bytes], Path | None]]:
    """Where the export goes: stdout, or ``FILE.partial`` renamed to FILE once complete."""
    if file == "-":
        if sys.stdout.isatty():
            raise SignetError("name a file to export to (`signet export memories.jsonl`), or pipe stdout")
        yield sys.stdout.buffer, None
        sys.stdout.buffer.flush()
        return
    path = Path(file).expanduser()
    if path.exists() and not force:
        raise SignetError(f"{path} exists; pass --force to replace it")
    partial = path.with_name(path.name + ".partial")
    try:
        with partial.open("wb") as fh:
            yield fh, partial
        partial.replace(path)
    finally:
        partial.unlink(missing_ok=True)


@dataclass
class _Copied:
    header: dict[str, Any] | None = None
    lines: int = 0
    expected: int = 0


def _copy(chunks: Iterator[bytes], out: IO[bytes], copied: _Copied) -> None:
    """Write the streamed export as it comes (the bytes untouched), counting its lines; the
    progress bar starts once the header says how many lines will come."""
    head = b""
    for chunk in chunks:
        out.write(chunk)
        copied.lines += chunk.count(b"\n")
        head += chunk
        if b"\n" in head:
            break
    else:
        return
    copied.header = json.loads(head.split(b"\n", 1)[0])
    c = copied.header["counts"]
    copied.expected = 1 + c["entities"] + c["relations"] + c.get("retirements", 0) + c["memories"]
    with _progress("export") as progress:
        task = progress.add_task("", total=copied.expected, completed=copied.lines)
        for chunk in chunks:
            out.write(chunk)
            copied.lines += chunk.count(b"\n")
            progress.update(task, completed=copied.lines)


@app.command("export")
def export_cmd(
    file: Annotated[str, typer.Argument(help="The file to write, or - for stdout.")] = "-",
    vectors: Annotated[bool, typer.Option("--vectors", help="Include each memory's embedding.")] = False,
    deleted: Annotated[
        bool, typer.Option("--deleted/--no-deleted", help="Include forgotten (tombstoned) memories.")
    ] = True,
    force: Annotated[bool, typer.Option("--force", help="Replace FILE if it exists.")] = False,
) -> None:
    """Export every memory (history, tags, entity mentions, optionally vectors) and the knowledge
    graph as JSON Lines; two exports of the same store are byte-identical."""
    client = DaemonClient(timeout=TIMEOUT_S)
    params = {"vectors": str(vectors).lower(), "deleted": str(deleted).lower()}
    nothing = "" if file == "-" else f"; nothing was written to {file}"
    copied = _Copied()
    with _target(file, force) as (out, _):
        try:
            with client._http.stream("GET", "/api/export", params=params) as resp:
                if resp.status_code >= 400:
                    resp.read()
                    raise _error(client, resp)
                _copy(resp.iter_bytes(), out, copied)
        except httpx.TransportError as exc:
            if copied.header is None:  # no daemon, or it went away before answering: the usual one line
                raise _unreachable(client.url, exc) from None
            raise SignetError(
                f"the export stopped after {copied.lines} lines: {_unreachable(client.url, exc).message}{nothing}"
            ) from None
        if copied.header is None or copied.lines != copied.expected:
            raise SignetError(
                f"the export stopped after {copied.lines} of {copied.expected or '?'} lines "
                f"(see the daemon log){nothing}"
            )
    header = copied.header
    c = header["counts"]
    Console(stderr=True).print(
        f"exported {c['memories']} memories ({c['history']} history rows, {c['mentions']} mentions, "
        f"{c['vectors']} vectors), {c['entities']} entities and {c['relations']} relations"
        + ("" if file == "-" else f" to {file}"),
        highlight=False,
    )


# -- import of an export file ------------------------------------------------------------------


@dataclass
class _Scan:
    header: Header
    lines: int = 0
    """Data lines (not the header)."""
    counts: dict[str, int] = field(
        default_factory=lambda: dict.fromkeys(
            ("entities", "relations", "memories", "history", "mentions", "vectors", "retirements"), 0
        )
    )


def _read_line(fh: IO[bytes], lineno: int) -> bytes | None:
    """The next line without its newline; None at the end. A line over the limit is refused
    without reading the rest of it into memory."""
    raw = fh.readline(MAX_LINE_BYTES + 2)  # at most one byte over: enough to know it is too long
    if not raw:
        return None
    body = raw[:-1] if raw.endswith(b"\n") else raw
    if len(body) > MAX_LINE_BYTES:
        raise InvalidRequest(f"line {lineno}: over the {MAX_LINE_BYTES / 2**20:.0f} MiB a line may have")
    if not body.strip():
        raise InvalidRequest(f"line {lineno}: empty line (an export has none)")
    return body


def _scan(fh: IO[bytes]) -> _Scan:
    """Validate the whole file before anything is sent."""
    first = _read_line(fh, 1)
    if first is None:
        raise InvalidRequest("the file is empty: not a Signet export")
    why = sniff_header(first)
    if why is not None:
        raise InvalidRequest(f"line 1: {why}")
    scan = _Scan(check_header(parse_line(first, 1)))
    entities: set[str] = set()
    lineno = 1
    while (raw := _read_line(fh, lineno + 1)) is not None:
        lineno += 1
        line = parse_line(raw, lineno)
        if isinstance(line, Header):
            raise InvalidRequest(f"line {lineno}: a second header line")
        scan.lines += 1
        if isinstance(line, EntityLine):
            entities.add(line.id)
            scan.counts["entities"] += 1
        elif isinstance(line, RelationLine):
            for end in (line.source_entity_id, line.target_entity_id):
                if end not in entities:
                    raise InvalidRequest(f"line {lineno}: the relation names entity {end}, not defined before it")
            scan.counts["relations"] += 1
        elif isinstance(line, RetirementLine):
            scan.counts["retirements"] += 1
        else:
            for mention in line.mentions:
                if mention.entity_id not in entities:
                    raise InvalidRequest(
                        f"line {lineno}: a mention names entity {mention.entity_id}, not defined before it"
                    )
            scan.counts["memories"] += 1
            scan.counts["history"] += len(line.history)
            scan.counts["mentions"] += len(line.mentions)
            scan.counts["vectors"] += line.vector is not None
    said = scan.header.counts.model_dump()
    if said != scan.counts:
        diff = ", ".join(f"{k} {said[k]} said, {scan.counts[k]} found" for k in said if said[k] != scan.counts[k])
        raise InvalidRequest(f"the file does not match its header ({diff}): cut short or edited; nothing was imported")
    return scan


def _referenced(line: Header | EntityLine | RelationLine | RetirementLine | MemoryLine) -> list[str]:
    if isinstance(line, RelationLine):
        return [line.source_entity_id, line.target_entity_id]
    if isinstance(line, MemoryLine):
        return [m.entity_id for m in line.mentions]
    return []


def _post_batch(client: DaemonClient, body: bytes) -> dict[str, Any]:
    """One batch; a rate limit (team mode) is waited out, up to :data:`RATE_LIMIT_RETRIES` times."""
    for attempt in range(RATE_LIMIT_RETRIES + 1):
        try:
            resp = client._http.post("/api/import", content=body, headers={"content-type": "application/json"})
        except httpx.TransportError as exc:
            raise _unreachable(client.url, exc) from None
        if resp.status_code < 400:
            data: dict[str, Any] = resp.json()
            return data
        err = _error(client, resp)
        if isinstance(err, RateLimited) and attempt < RATE_LIMIT_RETRIES:
            time.sleep(max(err.retry_after, 1))
            continue
        raise err
    raise AssertionError("unreachable")


def _send(client: DaemonClient, fh: IO[bytes], scan: _Scan) -> dict[str, int]:
    totals: dict[str, int] = {}
    entity_map: dict[str, str] = {}
    fh.seek(0)
    fh.readline(MAX_LINE_BYTES + 2)  # the header, validated already
    done_through = 1
    with _progress("import") as progress:
        task = progress.add_task("", total=scan.lines)
        lineno = 1
        while True:
            raws: list[bytes] = []
            refs: set[str] = set()
            size = 0
            first = lineno + 1
            while len(raws) < BATCH_LINES:
                pos = fh.tell()
                raw = _read_line(fh, lineno + 1)
                if raw is None:
                    break
                if raws and size + len(raw) > BATCH_BYTES:
                    fh.seek(pos)
                    break
                lineno += 1
                raws.append(raw)
                size += len(raw) + 1
                refs.update(_referenced(parse_line(raw, lineno)))
            if not raws:
                break
            mapping = {k: v for k, v in entity_map.items() if k in refs}
            body = (
                b'{"first_line":%d,"entity_map":%s,"lines":[' % (first, json.dumps(mapping).encode())
                + b",".join(raws)
                + b"]}"
            )
            try:
                report = _post_batch(client, body)
            except SignetError as exc:
                if done_through > 1:
                    exc.message += (
                        f"; lines 2-{done_through} were imported before it (importing the file again skips them)"
                    )
                raise
            done_through = lineno
            entity_map.update(report.pop("entity_map"))
            for k, v in report.items():
                totals[k] = totals.get(k, 0) + int(v)
            progress.update(task, completed=lineno - 1)
    return totals


def _import_export(source: str) -> None:
    client = DaemonClient(timeout=TIMEOUT_S)
    with _open_source(source) as fh:
        scan = _scan(fh)
        t = _send(client, fh, scan)
    added = (
        f"imported {t.get('memories_added', 0)} memories ({t.get('history_added', 0)} history rows, "
        f"{t.get('mentions_added', 0)} mentions, {t.get('vectors_added', 0)} vectors), "
        f"{t.get('entities_added', 0)} entities and {t.get('relations_added', 0)} relations"
    )
    skipped = (
        f"; already stored: {t.get('memories_present', 0)} memories by id, {t.get('memories_duplicate', 0)} by text, "
        f"{t.get('entities_present', 0)} entities, {t.get('relations_present', 0)} relations"
    )
    queued = f"; {t['to_embed']} queued for embedding" if t.get("to_embed") else ""
    retired = (
        f"; retirement ledger: {t.get('retirements_added', 0)} rows, {t.get('memories_retired', 0)} memories kept out"
        if t.get("retirements_added") or t.get("memories_retired")
        else ""
    )
    typer.echo(added + skipped + queued + retired)


@contextmanager
def _open_source(source: str) -> Iterator[IO[bytes]]:
    """The file, or stdin spooled to a temporary file (an import reads it twice)."""
    if source != "-":
        with Path(source).expanduser().open("rb") as fh:
            yield fh
        return
    with tempfile.TemporaryFile() as spool:
        shutil.copyfileobj(sys.stdin.buffer, spool)
        spool.seek(0)
        yield spool


# -- import of memory files --------------------------------------------------------------------


def _memory_files(paths: list[str]) -> list[Path]:
    out: dict[Path, None] = {}
    for name in paths:
        p = Path(name).expanduser()
        if p.is_dir():
            for f in sorted(p.rglob("*.md")):
                rel = f.relative_to(p).parts
                if f.is_file() and not any(part.startswith(".") for part in rel):
                    out.setdefault(f.resolve(), None)
        elif p.is_file():
            out.setdefault(p.resolve(), None)
        else:
            raise SignetError(f"{p}: no such file or directory")
    return list(out)


def _batches(items: list[dict[str, object]]) -> Iterator[list[dict[str, object]]]:
    """Remember-batch requests well under the daemon's body limit (one transaction each)."""
    batch: list[dict[str, object]] = []
    size = 0
    for item in items:
        n = len(str(item["content"]).encode("utf-8")) * 2 + 512  # JSON escapes, the other fields
        if batch and (len(batch) >= BATCH_LINES or size + n > BATCH_BYTES):
            yield batch
            batch, size = [], 0
        batch.append(item)
        size += n
    if batch:
        yield batch


def _import_memory_files(paths: list[str], kind: str | None, project: str | None, max_tokens: int) -> None:
    files = _memory_files(paths)
    if not files:
        raise SignetError("no Markdown memory files (*.md) found in " + ", ".join(paths))
    client = DaemonClient(timeout=TIMEOUT_S)
    created = deduped = failed = 0
    with _progress("import") as progress:
        task = progress.add_task("", total=len(files))
        for f in files:
            try:
                mf = read_memory_file(f, kind=kind, max_tokens=max_tokens)
            except (NotText, OSError) as exc:
                progress.console.print(f"[red]failed[/] {exc}", highlight=False)
                failed += 1
                progress.advance(task)
                continue
            for batch in _batches(remember_items(mf, project=project)):
                res = client.post_json("/api/memory/remember/batch", {"items": batch})
                created += int(res["created"])
                deduped += int(res["deduped"])
            progress.advance(task)
    typer.echo(
        f"imported {len(files) - failed} memory file(s): {created} memories stored, {deduped} already stored"
        + (f", {failed} failed" if failed else "")
    )
    if failed:
        raise typer.Exit(1)


def _is_export(source: str) -> bool:
    if source == "-":
        return True
    p = Path(source).expanduser()
    if p.suffix.lower() in (".jsonl", ".ndjson", ".json"):
        return True
    if not p.is_file():
        return False
    with p.open("rb") as fh:
        return fh.read(1) == b"{"


@app.command("import")
def import_cmd(
    paths: Annotated[
        list[str], typer.Argument(help="An export file (- for stdin), or Markdown memory files and directories.")
    ],
    source: Annotated[
        str | None,
        typer.Option(
            "--from",
            help="signet (an export file), claude-code, openclaw-memory or markdown; default: by the file.",
        ),
    ] = None,
    project: Annotated[str | None, typer.Option(help="Project of the memories made from memory files.")] = None,
    max_tokens: Annotated[
        int, typer.Option("--max-tokens", min=16, max=25_000, help="Chunk size for memory files (~4 chars a token).")
    ] = DEFAULT_MAX_TOKENS,
) -> None:
    """Import an export file (idempotent: importing it again adds nothing), or other tools' memory
    files (Claude Code's MEMORY.md, OpenClaw's memory logs, any Markdown) as memories."""
    if source is not None and source != "signet" and source not in KINDS:
        raise typer.BadParameter(f"--from must be signet, {', '.join(KINDS)}")
    if source == "signet" or (source is None and len(paths) == 1 and _is_export(paths[0])):
        if len(paths) != 1:
            raise SignetError("import one export file at a time")
        if project is not None:
            raise SignetError("--project is for memory files; an export's memories keep their own projects")
        _import_export(paths[0])
        return
    if "-" in paths:
        raise SignetError("memory files are read from paths, not stdin")
    _import_memory_files(paths, source, project, max_tokens)
