"""The daemon's log over HTTP: a query, a live stream (server-sent events) and a summary.

``GET /api/logs`` reads the broker's ring of recent entries, then the files for older ones;
``GET /api/logs/stream`` follows new entries as they are logged; ``GET /api/analytics/logs``
counts a window's entries by level and logger and lists its latest errors (signet.ops.logs).
A stream ends by itself when the daemon stops (sse-starlette sees uvicorn's exit and the
generator says ``end``), so shutdown never waits for a follower.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from typing import Annotated, Any

import anyio
from fastapi import APIRouter, Header, Query
from pydantic import BaseModel, Field
from sse_starlette import EventSourceResponse, ServerSentEvent

from signet.daemon.deps import RuntimeDep
from signet.errors import InvalidRequest
from signet.ops.logs import (
    LogQuery,
    Subscription,
    iter_since,
    live_broker,
    now_iso,
    parse_since,
    query_logs,
    summarize,
)

router = APIRouter(tags=["logs"])

LevelQ = Annotated[
    str | None, Query(max_length=16, description="minimum level: debug, info, warning, error or critical")
]
SinceQ = Annotated[
    str | None,
    Query(
        max_length=64,
        description="from this time: ISO-8601 (UTC when no zone is given) or back from now: 30s, 10m, 2h, 7d",
    ),
]
LoggerQ = Annotated[str | None, Query(max_length=200, description="logger name prefix, e.g. signet.pipeline")]
TextQ = Annotated[str | None, Query(max_length=500, description="substring of the message or traceback (any case)")]


class LogEntry(BaseModel):
    ts: str = Field(description="ISO-8601 UTC with milliseconds")
    level: str
    logger: str
    message: str
    exc: str | None = Field(None, description="the traceback, when the record carried one")
    extra: dict[str, Any] | None = Field(None, description="structured fields logged with the record")
    seq: int | None = Field(None, description="order in this daemon run (entries still in memory); null from the files")


class LogsResponse(BaseModel):
    entries: list[LogEntry] = Field(description="oldest first; the newest `limit` that match")
    count: int
    more: bool = Field(description="older entries may match too (raise `limit` or narrow `since`)")
    sources: list[str] = Field(description="memory (the recent entries this daemon holds) and/or files")
    last_seq: int | None = Field(None, description="the newest entry's seq: pass it as `after` to a stream")


class LogSummary(BaseModel):
    since: str
    until: str
    total: int
    by_level: dict[str, int]
    by_logger: dict[str, int] = Field(description="the 50 busiest loggers")
    latest_errors: list[LogEntry] = Field(description="newest first, ERROR and above")


def _query(level: str | None, since: str | None, logger: str | None, text: str | None) -> LogQuery:
    try:
        return LogQuery.parse(level=level, since=since, logger=logger, text=text)
    except ValueError as exc:
        raise InvalidRequest(str(exc)) from None


@router.get("/api/logs", response_model=LogsResponse)
def get_logs(
    runtime: RuntimeDep,
    level: LevelQ = None,
    since: SinceQ = None,
    logger: LoggerQ = None,
    text: TextQ = None,
    limit: Annotated[int, Query(ge=1, le=5000, description="entries at most (the newest)")] = 100,
) -> LogsResponse:
    """The daemon's log entries that match, newest ``limit``, oldest first: recent ones from
    memory, older ones from the workspace's log files."""
    result = query_logs(live_broker(), runtime.workspace.logs_dir, _query(level, since, logger, text), limit)
    return LogsResponse(
        entries=[LogEntry.model_validate(e) for e in result.entries],
        count=len(result.entries),
        more=result.more,
        sources=result.sources,
        last_seq=result.last_seq,
    )


def _event(entry: dict[str, Any]) -> ServerSentEvent:
    return ServerSentEvent(data=json.dumps(entry, ensure_ascii=False, default=str), event="log", id=str(entry["seq"]))


async def _events(sub: Subscription, pending: list[dict[str, Any]], gap: int) -> AsyncIterator[ServerSentEvent]:
    broker = live_broker()
    try:
        if gap:
            yield ServerSentEvent(data=json.dumps({"dropped": gap, "reason": "no longer held"}), event="dropped")
        for entry in pending:
            yield _event(entry)
        while True:
            entries, dropped, closed = await sub.next()
            if dropped:
                yield ServerSentEvent(data=json.dumps({"dropped": dropped, "reason": "slow reader"}), event="dropped")
            for entry in entries:
                yield _event(entry)
            if closed:
                yield ServerSentEvent(data=json.dumps({"reason": "the daemon is stopping"}), event="end")
                return
    finally:
        if broker is not None:
            broker.unsubscribe(sub)
        else:
            sub.close()


async def _no_live_log() -> AsyncIterator[ServerSentEvent]:
    reason = "no live log in this process: it is not the daemon (`signet daemon`); GET /api/logs reads the files"
    yield ServerSentEvent(data=json.dumps({"reason": reason}), event="end")


async def _close_on(event: anyio.Event, sub: Subscription) -> None:
    await event.wait()
    sub.close()


class _Stream(EventSourceResponse):
    """An event stream whose subscription ends (with a last ``end`` event) when sse-starlette
    sees the server shutting down."""

    def __init__(self, sub: Subscription, pending: list[dict[str, Any]], gap: int, heartbeat: float) -> None:
        self._shutdown = anyio.Event()
        self._sub = sub
        super().__init__(
            _events(sub, pending, gap),
            ping=heartbeat,
            send_timeout=30,  # a client that stops reading entirely is let go
            shutdown_event=self._shutdown,
            shutdown_grace_period=1.0,
        )

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        watcher = asyncio.ensure_future(_close_on(self._shutdown, self._sub))
        try:
            await super().__call__(scope, receive, send)
        finally:
            watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await watcher
            broker = live_broker()
            if broker is not None:
                broker.unsubscribe(self._sub)  # also when the stream never started (HEAD)
            self._sub.close()


SSE_EVENT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": "one server-sent event (OpenAPI 3.1: the schema of a text/event-stream is one event's)",
    "properties": {
        "event": {"type": "string", "enum": ["log", "dropped", "end"]},
        "data": {"type": "string", "description": "JSON: a log entry, {dropped, reason} or {reason}"},
        "id": {"type": "string", "description": "a log entry's seq"},
    },
    "required": ["event", "data"],
}


@router.get(
    "/api/logs/stream",
    response_class=EventSourceResponse,
    responses={
        200: {
            "content": {"text/event-stream": {"schema": SSE_EVENT_SCHEMA}},
            "description": "events `log` (data: one entry as JSON, id: its seq), `dropped` (data: "
            "{dropped, reason}) and `end` (the daemon is stopping); `: ping` comments every `heartbeat` seconds",
        }
    },
)
async def stream_logs(
    level: LevelQ = None,
    since: Annotated[
        str | None, Query(max_length=64, description="first send the matching entries still in memory from this time")
    ] = None,
    logger: LoggerQ = None,
    text: TextQ = None,
    after: Annotated[
        int | None, Query(ge=0, le=2**53, description="first send the entries in memory after this seq")
    ] = None,
    heartbeat: Annotated[float, Query(ge=1, le=300, description="seconds between keep-alive pings")] = 15,
    last_event_id: Annotated[str | None, Header(max_length=32)] = None,
) -> EventSourceResponse:
    """New log entries as they are written (server-sent events), filtered like ``GET /api/logs``."""
    query = _query(level, since, logger, text)
    broker = live_broker()
    if broker is None:  # an app in another process's hands (tests): nothing live to follow here
        return EventSourceResponse(_no_live_log(), ping=heartbeat)
    if after is None and last_event_id is not None and last_event_id.isdigit():
        after = int(last_event_id)  # a reconnecting EventSource resumes where it was
    sub, pending, gap = broker.subscribe(asyncio.get_running_loop(), query, after=after, replay=query.since is not None)
    return _Stream(sub, pending, gap, heartbeat)


@router.get("/api/analytics/logs", response_model=LogSummary)
def analytics_logs(
    runtime: RuntimeDep,
    since: Annotated[
        str, Query(max_length=64, description="window start: ISO-8601 or back from now (30m, 24h, 7d)")
    ] = "1h",
    errors: Annotated[int, Query(ge=0, le=200, description="latest errors to list")] = 20,
) -> LogSummary:
    """A window of the log at a glance: entries by level and by logger, and the latest errors."""
    try:
        start = parse_since(since)
    except ValueError as exc:
        raise InvalidRequest(str(exc)) from None
    if start is None:
        raise InvalidRequest("since must name a time or a duration, e.g. 1h")
    until = now_iso()
    summary = summarize(iter_since(live_broker(), runtime.workspace.logs_dir, start), errors=errors)
    return LogSummary(
        since=start,
        until=until,
        total=summary["total"],
        by_level=summary["by_level"],
        by_logger=summary["by_logger"],
        latest_errors=[LogEntry.model_validate(e) for e in summary["latest_errors"]],
    )
