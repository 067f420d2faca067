"""Structured logs: JSON Lines files that stay bounded, ``/api/logs``, the live stream and
``signet logs``, against real daemon processes, real files and the real CLI."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient

from signet.daemon.app import create_app
from signet.ops.logs import (
    LogBroker,
    LogQuery,
    TooManyStreams,
    WorkspaceLogHandler,
    log_files,
    parse_since,
    query_logs,
    read_file,
    to_entry,
)
from signet.workspace import Workspace
from tests.conftest import DaemonProcess, default_sigint, start_runtime

pytestmark = pytest.mark.slow

SWEEP_LINE = "retention sweep:"


@pytest.fixture
def quick_ws(make_workspace: Callable[..., Workspace]) -> Workspace:
    """No model to load, and a tombstone the retention sweep purges at once (so the sweep logs)."""
    return make_workspace(embedding="none", retention={"tombstone_days": 0})


def sweep_something(d: DaemonProcess) -> None:
    """A real action that logs at INFO: purge a forgotten memory with the retention sweep."""
    with d.client() as c:
        mid = c.post("/api/memory/remember", json={"content": f"a note to sweep away {time.time()}"}).json()["id"]
        assert c.delete(f"/api/memory/{mid}", params={"reason": "log test"}).status_code == 200
        r = c.post("/api/repair/retention-sweep")
        assert r.status_code == 200 and r.json()["tombstones"] == 1, r.text


class SseReader:
    """A real HTTP client on ``/api/logs/stream``, its events collected on a thread."""

    def __init__(self, url: str, **params: Any) -> None:
        self.events: queue.Queue[tuple[str, str]] = queue.Queue()
        self.status: int | None = None
        self.content_type = ""
        self.connected = threading.Event()
        self.ended = threading.Event()
        self.lines: list[str] = []
        self._thread = threading.Thread(target=self._run, args=(url, params), daemon=True)
        self._thread.start()
        assert self.connected.wait(10), "the stream did not open"

    def _run(self, url: str, params: dict[str, Any]) -> None:
        try:
            with httpx.stream("GET", f"{url}/api/logs/stream", params=params, timeout=30) as resp:
                self.status, self.content_type = resp.status_code, resp.headers.get("content-type", "")
                self.connected.set()
                event, data = "message", []
                for line in resp.iter_lines():
                    self.lines.append(line)
                    if not line:
                        if data:
                            self.events.put((event, "\n".join(data)))
                        event, data = "message", []
                    elif line.startswith("event: "):
                        event = line[7:]
                    elif line.startswith("data: "):
                        data.append(line[6:])
        except httpx.HTTPError as exc:
            self.events.put(("error", repr(exc)))
        finally:
            self.connected.set()
            self.ended.set()

    def wait_for(self, pred: Callable[[str, str], bool], timeout: float = 15) -> tuple[str, str]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                event, data = self.events.get(timeout=max(deadline - time.monotonic(), 0.01))
            except queue.Empty:
                break
            if pred(event, data):
                return event, data
        raise AssertionError(f"no such event within {timeout}s; lines: {self.lines[-20:]}")


def is_log(text: str) -> Callable[[str, str], bool]:
    return lambda event, data: event == "log" and text in json.loads(data)["message"]


# -- the stream, against a real daemon ---------------------------------------------------------


def test_stream_delivers_what_is_logged_after_connecting_and_ends_with_the_daemon(
    quick_ws: Workspace, start_daemon: Callable[..., DaemonProcess]
) -> None:
    d = start_daemon(quick_ws)
    everything = SseReader(d.url, heartbeat=1)
    only_retention = SseReader(d.url, logger="signet.memory.retention", level="info")
    only_errors = SseReader(d.url, level="error")
    assert everything.status == 200 and everything.content_type.startswith("text/event-stream")
    time.sleep(0.3)
    assert not any(SWEEP_LINE in line for line in everything.lines)  # nothing from before connecting

    sweep_something(d)
    _, data = everything.wait_for(is_log(SWEEP_LINE))
    entry = json.loads(data)
    assert entry["level"] == "INFO" and entry["logger"] == "signet.memory.retention"
    assert entry["ts"].endswith("Z") and isinstance(entry["seq"], int)
    _, data = only_retention.wait_for(is_log(SWEEP_LINE))
    assert json.loads(data)["logger"] == "signet.memory.retention"
    # heartbeats keep an idle stream alive (a comment line, every second here)
    deadline = time.monotonic() + 5
    while not any(line.startswith(": ping") for line in everything.lines) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert any(line.startswith(": ping") for line in everything.lines)

    stopping = time.monotonic()
    d.stop()
    for reader in (everything, only_retention, only_errors):
        assert reader.ended.wait(10), "the stream outlived the daemon"
    assert time.monotonic() - stopping < 8, "shutdown waited for the open streams"
    assert d.proc.returncode is not None
    everything.wait_for(lambda event, _: event == "end", timeout=1)
    retention_events = [line for line in only_retention.lines if line.startswith('data: {"ts"')]
    assert retention_events and all("signet.memory.retention" in line for line in retention_events)
    assert not [line for line in only_errors.lines if line.startswith('data: {"ts"')], only_errors.lines


def test_streams_are_released_capped_and_resumable(
    make_workspace: Callable[..., Workspace], quick_ws: Workspace, start_daemon: Callable[..., DaemonProcess]
) -> None:
    d = start_daemon(quick_ws)
    with d.client() as c:
        logged = c.get("/api/logs").json()
    first, last = logged["entries"][0], logged["last_seq"]
    assert first["seq"] == 1 and last >= 2
    # A client that goes away is unsubscribed: 40 streams opened and closed one after another,
    # then the cap (32) at once, and one more is refused in the error shape.
    with httpx.Client(base_url=d.url, timeout=10) as c:
        for _ in range(40):
            with c.stream("GET", "/api/logs/stream") as r:
                assert r.status_code == 200
        time.sleep(1.0)
        with contextlib.ExitStack() as open_streams:
            for _ in range(32):
                r = open_streams.enter_context(c.stream("GET", "/api/logs/stream"))
                assert r.status_code == 200, r.read()
            r = c.get("/api/logs/stream")
            assert r.status_code == 503 and r.json()["code"] == "too_many_streams", r.text
    # after=1: everything still in memory after the first entry, then live
    reader = SseReader(d.url, after=1)
    _, data = reader.wait_for(lambda event, _: event == "log")
    assert json.loads(data)["seq"] == 2
    # an app that is not the daemon process has no live log: its stream ends at once, saying why
    rt = start_runtime(make_workspace(embedding="none"))
    try:
        with TestClient(create_app(rt, manage_runtime=False)) as api:
            r = api.get("/api/logs/stream")
            assert r.status_code == 200 and r.text.startswith("event: end"), r.text
            assert "no live log in this process" in r.text
            assert api.get("/api/logs").json()["sources"] == ["files"]
    finally:
        rt.stop()


# -- queries ---------------------------------------------------------------------------------


def test_query_filters_and_hostile_parameters(quick_ws: Workspace, start_daemon: Callable[..., DaemonProcess]) -> None:
    d = start_daemon(quick_ws)
    sweep_something(d)
    with d.client() as c:
        every = c.get("/api/logs", params={"limit": 5000}).json()
        assert every["count"] >= 3 and every["sources"] == ["memory"]
        seqs = [e["seq"] for e in every["entries"]]
        assert seqs == sorted(seqs)
        by_logger = c.get("/api/logs", params={"logger": "signet.memory"}).json()["entries"]
        assert by_logger and all(e["logger"].startswith("signet.memory") for e in by_logger)
        by_text = c.get("/api/logs", params={"text": SWEEP_LINE.upper()}).json()["entries"]
        assert len(by_text) == 1 and by_text[0]["message"].startswith(SWEEP_LINE)
        for name in ("warning", "WARN"):
            warned = c.get("/api/logs", params={"level": name}).json()["entries"]
            assert all(e["level"] in ("WARNING", "ERROR", "CRITICAL") for e in warned), warned
        assert c.get("/api/logs", params={"since": "2999-01-01T00:00:00Z"}).json()["entries"] == []
        recent = c.get("/api/logs", params={"since": "10m"}).json()["entries"]
        assert len(recent) >= every["count"]
        two = c.get("/api/logs", params={"limit": 2}).json()
        assert len(two["entries"]) == 2 and two["more"] is True
        assert two["entries"][1]["seq"] == two["last_seq"] > two["entries"][0]["seq"]

        summary = c.get("/api/analytics/logs", params={"since": "1h"}).json()
        assert summary["total"] >= every["count"] and summary["by_level"]["INFO"] >= 1
        assert summary["by_logger"]["signet.memory.retention"] == 1 and summary["latest_errors"] == []

        for path, params in (
            ("/api/logs", {"level": "loud"}),
            ("/api/logs", {"since": "yesterday"}),
            ("/api/logs", {"since": "99999999w"}),
            ("/api/logs", {"since": "2025-13-45"}),
            ("/api/logs", {"limit": 0}),
            ("/api/logs", {"limit": 10**12}),
            ("/api/logs", {"limit": "lots"}),
            ("/api/logs", {"text": "x" * 5000}),
            ("/api/logs/stream", {"level": "loud"}),
            ("/api/logs/stream", {"heartbeat": 0}),
            ("/api/logs/stream", {"after": -1}),
            ("/api/analytics/logs", {"since": "soon"}),
            ("/api/analytics/logs", {"since": ""}),
            ("/api/analytics/logs", {"errors": 10**6}),
        ):
            r = c.get(path, params=params)
            assert 400 <= r.status_code < 500, (path, params, r.status_code, r.text)
            body = r.json()
            assert isinstance(body["error"], str) and body["error"] and body["code"], body


def test_the_file_is_json_lines_and_old_text_lines_still_read(
    quick_ws: Workspace, start_daemon: Callable[..., DaemonProcess]
) -> None:
    quick_ws.logs_dir.mkdir(parents=True, exist_ok=True)
    old = quick_ws.logs_dir / "daemon-2020-01-02.log"
    old.write_text(
        "2020-01-02 10:00:00,123 INFO signet: signet daemon starting on http://127.0.0.1:3850\n"
        "2020-01-02 10:00:01,000 ERROR signet.daemon.errors: unhandled error on GET /x\n"
        "Traceback (most recent call last):\n"
        '  File "x.py", line 1, in <module>\n'
        "ValueError: boom\n"
        "\x00\x01 not a log line at all\n"
        '{"ts": 5, "torn json line\n',
        encoding="utf-8",
    )
    d = start_daemon(quick_ws)
    sweep_something(d)
    with d.client() as c:
        got = c.get("/api/logs", params={"since": "2020-01-01", "limit": 5000}).json()
        assert got["sources"] == ["files", "memory"]
        legacy = [e for e in got["entries"] if e["ts"].startswith("2020-01-02")]
        assert [e["level"] for e in legacy] == ["INFO", "ERROR"]
        assert "ValueError: boom" in legacy[1]["exc"] and legacy[1]["logger"] == "signet.daemon.errors"
        errors = c.get("/api/logs", params={"since": "2020-01-01", "level": "error"}).json()["entries"]
        assert [e["message"] for e in errors] == ["unhandled error on GET /x"]
        summary = c.get("/api/analytics/logs", params={"since": "2020-01-01T00:00:00Z"}).json()
        assert summary["latest_errors"][0]["message"] == "unhandled error on GET /x"
    d.stop()
    current = [p for p in log_files(quick_ws.logs_dir) if p != old]
    assert len(current) == 1
    lines = current[0].read_text(encoding="utf-8").splitlines()
    assert len(lines) >= 5
    for line in lines:
        entry = json.loads(line)
        assert {"ts", "level", "logger", "message"} <= entry.keys(), entry
        assert parse_since(entry["ts"]) == entry["ts"]  # ISO-8601 UTC, as written
    assert any(SWEEP_LINE in json.loads(line)["message"] for line in lines)
    assert any(json.loads(line)["message"] == "signet daemon stopped" for line in lines)


# -- files, rotation and the broker, in process (real files, real threads) --------------------


def _logger(name: str, handler: logging.Handler) -> logging.Logger:
    lg = logging.getLogger(name)
    lg.handlers[:] = [handler]
    lg.propagate = False
    lg.setLevel(logging.INFO)
    return lg


def test_rotation_bounds_the_disk_and_reading_spans_the_rotated_files(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    handler = WorkspaceLogHandler(logs, max_bytes=4000, files=3)
    lg = _logger("signet.test.rotation", handler)
    try:
        for i in range(2000):
            lg.info("record number %05d with some padding to fill the file", i)
    finally:
        handler.close()
    files = log_files(logs)
    assert 2 <= len(files) <= 3, files
    sizes = [p.stat().st_size for p in files]
    assert sum(sizes) <= 3 * 4000, sizes
    got = query_logs(None, logs, LogQuery(), 40)
    numbers = [int(e["message"].split()[2]) for e in got.entries]
    assert numbers == list(range(1960, 2000)) and got.more  # the newest, in order, across files

    # A new UTC day starts a new file, and old days count against the same bound.
    handler = WorkspaceLogHandler(logs, max_bytes=4000, files=3)
    lg = _logger("signet.test.rotation", handler)
    tomorrow = time.time() + 86400
    try:
        for i in range(3):
            record = lg.makeRecord(lg.name, logging.INFO, __file__, 0, "next day %d", (i,), None)
            record.created = tomorrow + i
            lg.handle(record)
    finally:
        handler.close()
    files = log_files(logs)
    assert len(files) <= 3 and files[-1].name == time.strftime("daemon-%Y-%m-%d.log", time.gmtime(tomorrow))
    assert [e["message"] for e in read_file(files[-1])] == ["next day 0", "next day 1", "next day 2"]


def test_entries_carry_extras_and_tracebacks_and_never_secrets(tmp_path: Path) -> None:
    handler = WorkspaceLogHandler(tmp_path, max_bytes=1_000_000, files=2)
    lg = _logger("signet.test.entries", handler)
    try:
        lg.info("calling %s", "https://api.example/v1?api_key=abc123secret&x=1", extra={"job": 7, "tags": ["a"]})
        lg.warning("header Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.payload.sig sent")
        try:
            raise RuntimeError("sk-abcdefghijklmnopqrstuvwx leaked into an error")
        except RuntimeError:
            lg.exception("it failed")
    finally:
        handler.close()
    entries = read_file(log_files(tmp_path)[-1])
    assert entries[0]["extra"] == {"job": 7, "tags": ["a"]}
    text = json.dumps(entries)
    for secret in ("abc123secret", "eyJhbGciOiJIUzI1NiJ9", "sk-abcdefghijklmnopqrstuvwx"):
        assert secret not in text
    assert "[redacted]" in entries[0]["message"] and "[redacted]" in entries[1]["message"]
    assert entries[2]["level"] == "ERROR" and "RuntimeError" in entries[2]["exc"]


def test_a_slow_subscriber_loses_records_and_is_told_while_logging_never_waits() -> None:
    broker = LogBroker(capacity=100, max_subscribers=2)
    lg = _logger("signet.test.broker", broker)

    async def scenario() -> tuple[int, int, float]:
        loop = asyncio.get_running_loop()
        sub, pending, gap = broker.subscribe(loop, LogQuery(), after=None)
        assert pending == [] and gap == 0
        other, _, _ = broker.subscribe(loop, LogQuery(min_level=logging.ERROR))
        with pytest.raises(TooManyStreams):  # max_subscribers=2: each costs a buffer and a connection
            broker.subscribe(loop, LogQuery())
        broker.unsubscribe(other)

        def write(n: int) -> None:
            for i in range(n):
                lg.info("thread %s record %d", threading.current_thread().name, i)

        started = time.monotonic()
        threads = [threading.Thread(target=write, args=(1500,)) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        elapsed = time.monotonic() - started  # nobody read meanwhile: logging did not wait
        delivered = dropped = 0
        while True:
            entries, lost, _ = await asyncio.wait_for(sub.next(), 5)
            delivered += len(entries)
            dropped += lost
            if delivered + dropped >= 6000:
                break
        broker.unsubscribe(sub)
        return delivered, dropped, elapsed

    delivered, dropped, elapsed = asyncio.run(scenario())
    assert delivered == 1000 and dropped == 5000, (delivered, dropped)
    assert elapsed < 20
    assert broker.subscribers == 0 and broker.evicted == 6000 - 100


def test_to_entry_is_made_once_per_record() -> None:
    record = logging.LogRecord("signet.x", logging.INFO, __file__, 1, "hello %s", ("world",), None)
    first = to_entry(record)
    first["message"] = "changed by a caller"
    assert to_entry(record)["message"] == "hello world"  # callers get copies


# -- the CLI ---------------------------------------------------------------------------------


def _cli_env(ws: Workspace, port: int) -> dict[str, str]:
    return {**os.environ, "SIGNET_WORKSPACE": str(ws.root), "SIGNET_PORT": str(port), "SIGNET_HOST": "127.0.0.1"}


class Follower:
    """``signet logs --follow`` as a real subprocess, its stdout read on a thread."""

    def __init__(self, ws: Workspace, port: int, *args: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "signet.cli.entry", "logs", "--follow", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=_cli_env(ws, port),
            preexec_fn=default_sigint,  # Ctrl-C as a shell delivers it, even from a run that ignores SIGINT
        )
        self.lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line.rstrip("\n"))

    def wait_line(self, text: str, timeout: float = 20) -> str:
        deadline = time.monotonic() + timeout
        seen = []
        while time.monotonic() < deadline:
            try:
                line = self.lines.get(timeout=max(deadline - time.monotonic(), 0.01))
            except queue.Empty:
                break
            seen.append(line)
            if text in line:
                return line
        raise AssertionError(f"`signet logs --follow` printed no {text!r} within {timeout}s: {seen}")

    def finish(self, timeout: float = 15) -> tuple[int, str]:
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise AssertionError("`signet logs --follow` did not exit") from None
        assert self.proc.stderr is not None
        return self.proc.returncode, self.proc.stderr.read()


@pytest.fixture
def followers() -> Iterator[list[Follower]]:
    started: list[Follower] = []
    yield started
    for f in started:
        if f.proc.poll() is None:
            f.proc.kill()
            f.proc.wait()


def test_cli_follow_prints_new_lines_and_exits_cleanly(
    quick_ws: Workspace, start_daemon: Callable[..., DaemonProcess], followers: list[Follower]
) -> None:
    d = start_daemon(quick_ws)
    interrupted = Follower(quick_ws, d.port, "-n", "50")
    followers.append(interrupted)
    interrupted.wait_line("signet daemon starting")  # the history came first: it follows from here on
    # (its stream starts after the last entry it printed, so nothing logged meanwhile is missed)
    as_json = Follower(quick_ws, d.port, "-n", "1", "--json", "--logger", "signet.memory")
    followers.append(as_json)
    sweep_something(d)
    line = interrupted.wait_line(SWEEP_LINE)
    assert " INFO signet.memory.retention: retention sweep:" in line
    entry = json.loads(as_json.wait_line(SWEEP_LINE))
    assert entry["logger"] == "signet.memory.retention"

    interrupted.proc.send_signal(signal.SIGINT)  # Ctrl-C
    code, err = interrupted.finish()
    assert code == 0 and err == "", err

    d.stop()  # the daemon goes away under a follower: one line, non-zero
    code, err = as_json.finish()
    assert code == 1 and len(err.strip().splitlines()) == 1 and "log stream ended" in err, err


def test_cli_reads_the_files_when_the_daemon_is_down(
    quick_ws: Workspace, start_daemon: Callable[..., DaemonProcess]
) -> None:
    d = start_daemon(quick_ws)
    sweep_something(d)
    port = d.port
    d.stop()
    env = _cli_env(quick_ws, port)
    run = [sys.executable, "-m", "signet.cli.entry", "logs"]
    r = subprocess.run([*run, "--grep", SWEEP_LINE], capture_output=True, text=True, env=env, timeout=60)
    assert r.returncode == 0, r.stderr
    said = r.stderr.strip().splitlines()
    assert len(said) == 1 and said[0].startswith("the daemon is not running: reading the log files in "), said
    assert len(r.stdout.splitlines()) == 1 and SWEEP_LINE in r.stdout
    r = subprocess.run([*run, "-n", "3", "--json"], capture_output=True, text=True, env=env, timeout=60)
    assert "signet daemon stopped" in [json.loads(line)["message"] for line in r.stdout.splitlines()]
    r = subprocess.run([*run, "--level", "loud"], capture_output=True, text=True, env=env, timeout=60)
    assert r.returncode == 1 and len(r.stderr.strip().splitlines()) == 1 and "unknown log level" in r.stderr
