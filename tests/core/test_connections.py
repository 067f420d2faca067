"""Bounded connections against a real daemon process (signet.daemon.connections): idle
sockets, slow-header and slow-body clients, oversized headers and connection floods cannot keep
a normal client out, and every refusal is JSON."""

from __future__ import annotations

import json
import resource
import socket
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from signet.workspace import Workspace
from tests.conftest import DaemonProcess, write_config


def open_fds(pid: int) -> int:
    return len(list(Path(f"/proc/{pid}/fd").iterdir()))


def soft_nofile(pid: int) -> int:
    for line in Path(f"/proc/{pid}/limits").read_text(encoding="ascii").splitlines():
        if line.startswith("Max open files"):
            return int(line.split()[3])
    raise AssertionError("no open-file limit in /proc/<pid>/limits")


@contextmanager
def soft_limit(n: int) -> Iterator[None]:
    """Processes started inside inherit a soft open-file limit of ``n`` (as many systems give)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (n, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def read_all(s: socket.socket, timeout: float) -> bytes:
    """What the server sent until it closed the socket (or ``timeout`` passed)."""
    s.settimeout(timeout)
    data = b""
    try:
        while chunk := s.recv(65536):
            data += chunk
    except TimeoutError:
        return data + b"<still open>"
    except ConnectionResetError:
        return data
    return data


def json_error(raw: bytes) -> tuple[int, dict[str, str]]:
    head, _, body = raw.partition(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    assert b"content-type: application/json" in head.lower()
    return status, json.loads(body)


def serve_normally(d: DaemonProcess) -> None:
    with httpx.Client(base_url=d.url, timeout=10) as c:
        assert c.get("/health").status_code == 200
        r = c.post("/api/memory/remember", json={"content": "the flood did not keep this write out"})
        assert r.status_code == 200, r.text
        hits = c.post("/api/memory/recall", json={"query": "flood write"}).json()["results"]
        assert any("flood" in h["content"] for h in hits)


def test_a_thousand_idle_and_slow_header_connections_do_not_keep_a_client_out(
    make_workspace: Callable[..., Workspace], start_daemon: Callable[..., DaemonProcess]
) -> None:
    ws = make_workspace(embedding="none")
    write_config(ws, embedding={"provider": "none"}, daemon={"header_timeout_s": 6})
    resource.setrlimit(resource.RLIMIT_NOFILE, (resource.getrlimit(resource.RLIMIT_NOFILE)[1],) * 2)
    with soft_limit(1024):  # the daemon raises its own limit past the connections it holds
        d = start_daemon(ws)
    assert soft_nofile(d.proc.pid) >= 2048
    baseline = open_fds(d.proc.pid)

    idle = [socket.create_connection(("127.0.0.1", d.port)) for _ in range(900)]
    slow = [socket.create_connection(("127.0.0.1", d.port)) for _ in range(100)]
    for s in slow:  # a request begun, its headers never finished
        s.sendall(b"POST /api/memory/remember HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: a")
    try:
        deadline = time.monotonic() + 10
        while open_fds(d.proc.pid) < baseline + 990 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert open_fds(d.proc.pid) >= baseline + 990  # the daemon really holds all of them
        serve_normally(d)

        # After the header timeout every one of them is closed; the half-sent requests are told why.
        answers = [read_all(s, 10) for s in slow]
        assert all(a.startswith(b"HTTP/1.1 408") for a in answers), answers[0]
        status, body = json_error(answers[0])
        assert status == 408 and body["code"] == "request_timeout"
        assert all(read_all(s, 5) == b"" for s in idle)
        assert open_fds(d.proc.pid) <= baseline + 5
    finally:
        for s in idle + slow:
            s.close()
    serve_normally(d)


def test_over_the_cap_idle_connections_are_closed_oldest_first(
    make_workspace: Callable[..., Workspace], start_daemon: Callable[..., DaemonProcess]
) -> None:
    ws = make_workspace(embedding="none")
    write_config(ws, embedding={"provider": "none"}, daemon={"max_connections": 64, "header_timeout_s": 60})
    d = start_daemon(ws)
    socks = [socket.create_connection(("127.0.0.1", d.port)) for _ in range(200)]
    try:
        serve_normally(d)  # over the cap: the oldest idle connections made room
        assert read_all(socks[0], 5) == b""  # the first ones opened were closed
        assert read_all(socks[-1], 0.5) == b"<still open>"  # the newest still wait
        with httpx.Client(base_url=d.url) as c:
            metrics = c.get("/metrics").text
        evicted = next(line for line in metrics.splitlines() if line.startswith("signet_connections_evicted_total"))
        assert float(evicted.split()[-1]) >= 130
    finally:
        for s in socks:
            s.close()


def test_slow_bodies_oversized_headers_and_garbage_get_json_answers(
    make_workspace: Callable[..., Workspace], start_daemon: Callable[..., DaemonProcess]
) -> None:
    ws = make_workspace(embedding="none")
    write_config(ws, embedding={"provider": "none"}, daemon={"body_timeout_s": 1, "keep_alive_s": 1})
    d = start_daemon(ws)

    # A body that never finishes: the connection is closed; the daemon goes on serving.
    s = socket.create_connection(("127.0.0.1", d.port))
    s.sendall(
        b"POST /api/memory/remember HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        b'Content-Length: 100\r\n\r\n{"content": '
    )
    assert b"<still open>" not in read_all(s, 10)
    s.close()

    s = socket.create_connection(("127.0.0.1", d.port))
    s.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n" + b"X-Big: " + b"a" * 100_000 + b"\r\n\r\n")
    status, body = json_error(read_all(s, 10))
    assert status == 431 and body["code"] == "headers_too_large"
    s.close()

    s = socket.create_connection(("127.0.0.1", d.port))
    s.sendall(b"\x16\x03\x01 not http at all\r\n\r\n")
    status, body = json_error(read_all(s, 10))
    assert status == 400 and "not a valid HTTP/1.1 request" in body["error"]
    s.close()

    # A kept-alive connection idle past keep_alive_s is closed.
    s = socket.create_connection(("127.0.0.1", d.port))
    s.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    answer = read_all(s, 10)
    assert answer.startswith(b"HTTP/1.1 200") and b"<still open>" not in answer
    s.close()
    serve_normally(d)
    assert "Traceback" not in d.log.read_text()
