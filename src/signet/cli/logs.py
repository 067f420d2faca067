"""``signet logs``: the daemon's log, through its API when it runs, from the files when not.

With the daemon up, the entries come from ``GET /api/logs`` and ``--follow`` reads
``GET /api/logs/stream`` (server-sent events, plain httpx streaming), starting right after the
last entry printed so nothing falls between the two. With the daemon down, the same filters
run over the workspace's log files (signet.ops.logs) and ``--follow`` watches the newest file.
Ctrl-C ends a follow with status 0; a daemon that goes away ends it with one line and status 1.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any

import httpx
import typer

from signet.cli.app import app
from signet.cli.client import DaemonClient
from signet.errors import DaemonUnavailable, InvalidRequest, SignetError, error_from_payload
from signet.ops.logs import Entry, LogQuery, log_files, parse_line, query_logs, render
from signet.workspace import Workspace

HEARTBEAT_S = 10.0
"""The stream's keep-alive interval asked of the daemon; three missed ones mean it is gone."""


def _print(entry: Entry, as_json: bool) -> None:
    if as_json:
        typer.echo(json.dumps(entry, ensure_ascii=False, default=str))
    else:
        typer.echo(render(entry))


@app.command()
def logs(
    lines: Annotated[int, typer.Option("-n", "--lines", min=1, max=5000, help="Entries to show (the newest).")] = 50,
    follow: Annotated[bool, typer.Option("-f", "--follow", help="Then print new entries as they are logged.")] = False,
    level: Annotated[
        str | None, typer.Option("--level", help="Minimum level: debug, info, warning, error, critical.")
    ] = None,
    since: Annotated[
        str | None, typer.Option("--since", help="From this time: ISO-8601, or back from now (10m, 2h, 7d).")
    ] = None,
    logger: Annotated[str | None, typer.Option("--logger", help="Logger name prefix (signet.pipeline).")] = None,
    grep: Annotated[str | None, typer.Option("--grep", help="Substring of the message (any case).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON entry per line.")] = False,
) -> None:
    """Show the daemon's log: through the daemon when it runs, else from the workspace's log files."""
    try:
        query = LogQuery.parse(level=level, since=since, logger=logger, text=grep)
    except ValueError as exc:
        raise InvalidRequest(str(exc)) from None
    filters = {"level": level, "since": since, "logger": logger, "text": grep}
    ws = Workspace.from_env()
    client = DaemonClient()
    try:
        try:
            data = client.get_json("/api/logs", limit=lines, **filters)
        except DaemonUnavailable:
            typer.echo(f"the daemon is not running: reading the log files in {ws.logs_dir}", err=True)
            _from_files(ws.logs_dir, query, lines, follow, as_json)
            return
        for entry in data["entries"]:
            _print(entry, as_json)
        if follow:
            _follow_stream(client, filters, data.get("last_seq"), as_json)
    except KeyboardInterrupt:
        raise typer.Exit(0) from None
    finally:
        client.close()


def _from_files(logs_dir: Path, query: LogQuery, lines: int, follow: bool, as_json: bool) -> None:
    if not log_files(logs_dir):
        raise SignetError(f"no daemon log in {logs_dir} yet; start the daemon with `signet start`")
    for entry in query_logs(None, logs_dir, query, lines).entries:
        _print(entry, as_json)
    if follow:
        for entry in _tail_files(logs_dir):
            if query.matches(entry):
                _print(entry, as_json)


def _tail_files(logs_dir: Path, poll_s: float = 0.3) -> Iterator[Entry]:
    """New entries in the newest log file, as they are written (moving on when a newer file
    appears: a rotation, a new day)."""
    files = log_files(logs_dir)
    path = files[-1] if files else None
    offset = path.stat().st_size if path is not None and path.exists() else 0
    buf = ""
    while True:
        now = log_files(logs_dir)
        newest = now[-1] if now else None
        if newest is not None and newest != path:
            path, offset, buf = newest, 0, ""
        if path is not None:
            try:
                with path.open(encoding="utf-8", errors="replace") as fh:
                    fh.seek(offset)
                    chunk = fh.read()
                    offset = fh.tell()
            except OSError:
                chunk = ""
            buf += chunk
            *complete, buf = buf.split("\n")
            for line in complete:
                entry = parse_line(line)
                if entry is not None:
                    yield entry
        time.sleep(poll_s)


def _follow_stream(client: DaemonClient, filters: dict[str, Any], after: int | None, as_json: bool) -> None:
    url = client.url
    try:
        with client.stream(
            "/api/logs/stream", read_timeout=3 * HEARTBEAT_S, after=after, heartbeat=HEARTBEAT_S, **filters
        ) as resp:
            if resp.status_code != 200:
                resp.read()
                try:
                    payload = resp.json()
                except ValueError:
                    payload = {"error": f"HTTP {resp.status_code}"}
                raise error_from_payload(resp.status_code, payload if isinstance(payload, dict) else {})
            for event, data in _sse(resp.iter_lines()):
                if event == "log":
                    _print(json.loads(data), as_json)
                elif event == "dropped":
                    n = json.loads(data).get("dropped", 0)
                    typer.echo(f"({n} log entries were skipped: this reader fell behind)", err=True)
                elif event == "end":
                    raise SignetError("the daemon is stopping; the log stream ended")
    except httpx.TimeoutException:
        raise SignetError(f"the daemon at {url} stopped answering; the log stream ended") from None
    except httpx.TransportError:
        raise SignetError(f"lost the daemon at {url}; the log stream ended") from None
    raise SignetError(f"the daemon at {url} closed the log stream; run `signet logs --follow` again")


def _sse(lines: Iterator[str]) -> Iterator[tuple[str, str]]:
    """(event, data) for each server-sent event; comments (pings) and ids are skipped."""
    event = "message"
    data: list[str] = []
    for line in lines:
        if not line:
            if data:
                yield event, "\n".join(data)
            event, data = "message", []
        elif line.startswith(":"):
            continue
        else:
            field, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            if field == "event":
                event = value
            elif field == "data":
                data.append(value)
