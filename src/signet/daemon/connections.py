"""Bounded connections: the HTTP protocol the daemon serves with.

uvicorn closes a keep-alive connection that stays idle after a response, but nothing else: a
client that connects and sends nothing, or sends its request headers a byte at a time (a
"slow-header" client), or starts a body and never finishes it, holds a socket and a file
descriptor for ever, and a thousand of them exhaust the process's descriptors, after which no
client is served. This protocol adds the missing bounds on top of uvicorn's httptools protocol
(the parser and everything else stay uvicorn's):

* a request's headers must arrive within :attr:`Limits.header_timeout` seconds of the
  connection opening or of the request's first byte, and be at most :attr:`Limits.header_bytes`
  long (431 otherwise);
* a body must arrive within :attr:`Limits.body_timeout` seconds of its headers;
* at most :attr:`Limits.max_connections` connections are open: a new connection over the cap
  closes the connections that wait for nothing but the client (idle keep-alive, unfinished
  headers), oldest first, so a flood of idle sockets cannot keep a real client out; only when
  every open connection has a request in flight is the new one refused (503);
* at most :attr:`Limits.max_requests` requests run at once (503 beyond).

Every refusal is the daemon's JSON error shape, never uvicorn's plain text. Counts of what was
closed and refused are kept for ``/metrics``.
"""

from __future__ import annotations

import asyncio
import json
import logging
import resource
from dataclasses import dataclass
from typing import Any, ClassVar

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

log = logging.getLogger(__name__)


@dataclass
class Limits:
    """The bounds one daemon serves with (set once, before uvicorn starts)."""

    header_timeout: float = 10.0
    body_timeout: float = 60.0
    keep_alive: int = 5
    header_bytes: int = 64 * 1024
    max_connections: int = 2048
    max_requests: int = 512


@dataclass
class Counts:
    """What the guard did since the daemon started (``/metrics``)."""

    opened: int = 0
    open: int = 0
    header_timeouts: int = 0
    body_timeouts: int = 0
    evicted: int = 0
    refused: int = 0
    headers_too_large: int = 0


def error_response(status: int, reason: str, code: str, message: str) -> bytes:
    """A complete HTTP/1.1 response with the daemon's JSON error body, closing the connection."""
    body = json.dumps({"error": message, "code": code}).encode()
    head = (
        f"HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\n"
        f"content-length: {len(body)}\r\nconnection: close\r\n\r\n"
    ).encode("ascii")
    return head + body


class GuardedProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol with header/body deadlines, a header size cap and a
    connection cap that evicts idle connections first. Pass as ``uvicorn.Config(http=...)``."""

    limits: ClassVar[Limits] = Limits()
    counts: ClassVar[Counts] = Counts()

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._deadline: asyncio.TimerHandle | None = None
        self._header_bytes = 0
        self._in_headers = False
        self._refused = False
        self.opened_at = 0.0

    # -- the deadline ----------------------------------------------------------------------
    def _arm(self, seconds: float, reason: str) -> None:
        self._disarm()
        self._deadline = self.loop.call_later(seconds, self._expire, reason)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _expire(self, reason: str) -> None:
        self._deadline = None
        if self.transport.is_closing():
            return
        if reason == "header":
            type(self).counts.header_timeouts += 1
            if self._in_headers:  # a request begun but never finished: tell the client why
                self._refuse(
                    408,
                    "Request Timeout",
                    "request_timeout",
                    f"request headers did not arrive within {self.limits.header_timeout:g} s",
                )
                return
        else:
            type(self).counts.body_timeouts += 1
            # The app is waiting for the body: it sees a disconnect, and the client a closed socket.
        self.transport.close()

    def _refuse(self, status: int, reason: str, code: str, message: str) -> None:
        self._refused = True
        self._disarm()
        self.transport.write(error_response(status, reason, code, message))
        self.transport.close()

    def _busy(self) -> bool:
        """A request of this connection is in flight (the app has it, or it waits in the pipeline)."""
        return (self.cycle is not None and not self.cycle.response_complete) or bool(self.pipeline)

    # -- the connection ----------------------------------------------------------------------
    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        counts = type(self).counts
        counts.opened += 1
        counts.open += 1
        self.opened_at = self.loop.time()
        self._arm(self.limits.header_timeout, "header")
        if len(self.connections) > self.limits.max_connections:
            self._make_room()

    def _make_room(self) -> None:
        excess = len(self.connections) - self.limits.max_connections
        idle = sorted(
            (c for c in self.connections if isinstance(c, GuardedProtocol) and c is not self and not c._busy()),
            key=lambda c: c.opened_at,
        )
        for conn in idle[:excess]:
            type(self).counts.evicted += 1
            conn._disarm()
            conn.transport.close()
            # Closed here rather than when the loop gets round to it: the count must drop now.
            self.connections.discard(conn)
        if len(idle) < excess:
            type(self).counts.refused += 1
            log.warning(
                "refusing a connection: %d connections open, every one with a request in flight", len(self.connections)
            )
            self._refuse(
                503,
                "Service Unavailable",
                "too_many_connections",
                f"the daemon serves at most {self.limits.max_connections} connections at once and "
                "all are busy; retry shortly",
            )
            self.connections.discard(self)

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        type(self).counts.open -= 1
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self._refused:
            return
        super().data_received(data)

    def send_400_response(self, msg: str) -> None:
        if self._refused:
            return
        self._refuse(400, "Bad Request", "bad_http", f"{msg} (not a valid HTTP/1.1 request)")

    # -- parser callbacks --------------------------------------------------------------------
    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._in_headers = True
        self._header_bytes = 0
        if self._deadline is None:  # a later request on a kept-alive connection
            self._arm(self.limits.header_timeout, "header")

    def _count(self, n: int) -> None:
        self._header_bytes += n
        if self._header_bytes > self.limits.header_bytes and not self._refused:
            type(self).counts.headers_too_large += 1
            self._refuse(
                431,
                "Request Header Fields Too Large",
                "headers_too_large",
                f"request line and headers over {self.limits.header_bytes} bytes",
            )

    def on_url(self, url: bytes) -> None:
        self._count(len(url))
        super().on_url(url)

    def on_header(self, name: bytes, value: bytes) -> None:
        self._count(len(name) + len(value) + 4)
        if not self._refused:
            super().on_header(name, value)

    def on_headers_complete(self) -> None:
        self._in_headers = False
        if self._refused:
            return
        if len(self.tasks) >= self.limits.max_requests:
            type(self).counts.refused += 1
            self._refuse(
                503,
                "Service Unavailable",
                "too_many_requests",
                f"{len(self.tasks)} requests in flight (at most {self.limits.max_requests}); retry shortly",
            )
            return
        self._arm(self.limits.body_timeout, "body")
        super().on_headers_complete()

    def on_body(self, body: bytes) -> None:
        if not self._refused:
            super().on_body(body)

    def on_message_complete(self) -> None:
        self._disarm()
        if not self._refused:
            super().on_message_complete()


def raise_fd_limit(wanted: int) -> int:
    """Raise this process's soft limit on open files towards ``wanted`` (never past the hard
    limit) and return the soft limit now in force. Many systems start processes at 1024, fewer
    than the connections the daemon is willing to hold."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
    if soft != resource.RLIM_INFINITY and soft < target:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            soft = target
        except (ValueError, OSError) as exc:
            log.warning("could not raise the open-file limit from %d to %d: %s", soft, target, exc)
    return int(soft)


FD_RESERVE = 256
"""Descriptors kept for everything but client sockets: the database and its WAL per reader
thread, the log, the model, the pipeline's HTTP clients."""


def configure(limits: Limits | None = None) -> Limits:
    """Settle the limits for this process: raise the open-file limit, and shrink the connection
    cap when the system does not allow enough descriptors for it."""
    chosen = limits or Limits()
    soft = raise_fd_limit(chosen.max_connections + FD_RESERVE)
    if soft - FD_RESERVE < chosen.max_connections:
        capped = max(64, soft - FD_RESERVE)
        log.warning("open-file limit is %d: serving at most %d connections", soft, capped)
        chosen.max_connections = capped
    GuardedProtocol.limits = chosen
    GuardedProtocol.counts = Counts()
    return chosen
