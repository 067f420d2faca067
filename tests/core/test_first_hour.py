"""The first hour with Signet, through the real CLI, the real daemon on loopback and real
harness config files in a temporary HOME: the command agents are told to run runs, and every
failure is one readable line (or, for hooks, one notice per session that the model never sees).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from signet.models import RememberRequest
from signet.ops import diagnostics
from signet.runtime import Runtime
from signet.store.sqlite import Connection
from signet.workspace import Workspace
from tests.conftest import DaemonProcess, free_port, start_runtime, write_config
from tests.core.fake_embedder import FakeEmbeddingServer
from tests.harnesses.test_hook_e2e import Harness, hook_commands

VENV_SIGNET = Path(sys.executable).with_name("signet")


def signet(env: dict[str, str], *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "signet.cli.entry", *args], capture_output=True, text=True, env=env, timeout=timeout
    )


def one_line(text: str) -> str:
    """The single line a failure prints (the test fails when there are more, or none)."""
    lines = [line for line in text.splitlines() if line.strip()]
    assert len(lines) == 1, text
    return lines[0]


def home_env(home: Path, ws: Path, *, path: str = "/usr/bin:/bin", port: int = 1) -> dict[str, str]:
    """A user's environment: a temporary HOME, and no $XDG_BIN_HOME, so the launcher goes to
    the default ~/.local/bin."""
    env = {k: v for k, v in os.environ.items() if k != "XDG_BIN_HOME"}
    return {
        **env,
        "HOME": str(home),
        "SIGNET_WORKSPACE": str(ws),
        "PATH": path,
        "SIGNET_HOST": "127.0.0.1",
        "SIGNET_PORT": str(port),
    }


def memory_note(path: Path) -> str:
    """The line of a harness instruction file that tells the agent how to remember."""
    return next(line for line in path.read_text().splitlines() if "Save what matters with" in line)


# -- 2. the agent can run what it is told to run ------------------------------------------------


def test_setup_links_a_launcher_and_instructions_name_a_command_that_runs(tmp_path: Path) -> None:
    home, ws = tmp_path / "home", tmp_path / "ws"
    link = home / ".local" / "bin" / "signet"
    # ~/.local/bin is not on PATH: the link is made, the user is told, agents get the full path.
    env = home_env(home, ws)
    first = signet(
        env, "setup", "--non-interactive", "--embedding", "none", "--llm", "none", "--harness", "claude-code"
    )
    assert first.returncode == 0, first.stderr
    assert link.is_symlink() and link.resolve() == VENV_SIGNET.resolve()
    assert f"launcher: {link} -> {VENV_SIGNET}" in first.stdout
    assert f"note: {link.parent} is not on your PATH" in first.stderr
    note = memory_note(home / ".claude" / "CLAUDE.md")
    assert f'`{VENV_SIGNET} remember "..."`' in note
    assert f'`{VENV_SIGNET} remember "..."`' in (ws / "AGENTS.md").read_text()
    told = note.split("`")[1].replace('"..."', '"a fact"')  # run exactly what the agent reads
    ran = subprocess.run(["/bin/sh", "-c", told], capture_output=True, text=True, env=env, timeout=60)
    assert "daemon is not running" in ran.stderr  # it ran Signet (nothing listens on port 1)

    # With ~/.local/bin on PATH: idempotent, and the instructions say plain `signet`, which a shell finds.
    env = home_env(home, ws, path=f"{link.parent}:/usr/bin:/bin")
    again = signet(
        env, "setup", "--non-interactive", "--embedding", "none", "--llm", "none", "--harness", "claude-code"
    )
    assert again.returncode == 0 and f"launcher: {link} already runs {VENV_SIGNET}" in again.stdout, again.stderr
    assert "not on your PATH" not in again.stderr
    assert '`signet remember "..."`' in memory_note(home / ".claude" / "CLAUDE.md")
    ran = subprocess.run(["/bin/sh", "-c", "signet --help"], capture_output=True, text=True, env=env, timeout=60)
    assert ran.returncode == 0 and "remember" in ran.stdout, ran.stderr


def test_setup_never_replaces_another_signet_on_path(tmp_path: Path) -> None:
    home, ws = tmp_path / "home", tmp_path / "ws"
    link = home / ".local" / "bin" / "signet"
    link.parent.mkdir(parents=True)
    link.write_text("#!/bin/sh\necho another signet\n")
    link.chmod(0o755)
    env = home_env(home, ws, path=f"{link.parent}:/usr/bin:/bin")
    res = signet(env, "setup", "-y", "--embedding", "none", "--llm", "none", "--harness", "codex")
    assert res.returncode == 0, res.stderr
    assert link.read_text() == "#!/bin/sh\necho another signet\n"  # left as it was, and said so
    assert f"{link} is another program" in res.stderr and "remove it and run `signet setup` again" in res.stderr
    assert f'`{VENV_SIGNET} remember "..."`' in memory_note(home / ".codex" / "AGENTS.md")

    # A dangling link (an environment since deleted) is replaced, and that is said too.
    link.unlink()
    link.symlink_to(tmp_path / "old-venv" / "bin" / "signet")
    res = signet(env, "setup", "-y", "--embedding", "none", "--llm", "none")
    assert res.returncode == 0 and "replaced a broken link" in res.stdout, res.stderr
    assert link.resolve() == VENV_SIGNET.resolve()
    assert signet(env, "setup", "-y", "--no-launcher").returncode == 0


# -- 5. one readable line for every failure ---------------------------------------------------


class HtmlServer:
    """Another web server on a loopback port: answers every request with an HTML error page."""

    PAGE = b"<!DOCTYPE html><html><head><title>404 Not Found</title></head><body><h1>Not Found</h1></body></html>"

    def __init__(self) -> None:
        page = self.PAGE

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                self.send_response(404)
                self.send_header("content-type", "text/html")
                self.send_header("content-length", str(len(page)))
                self.end_headers()
                self.wfile.write(page)

            do_POST = do_GET

            def log_message(self, *args: Any) -> None:
                return

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = int(self.server.server_address[1])
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def html_server() -> Iterator[HtmlServer]:
    srv = HtmlServer()
    yield srv
    srv.close()


def test_a_port_held_by_another_web_server_is_one_line(tmp_path: Path, html_server: HtmlServer) -> None:
    env = home_env(tmp_path / "home", tmp_path / "ws", port=html_server.port)
    assert signet(env, "setup", "-y", "--embedding", "none", "--llm", "none", "--no-launcher").returncode == 0
    start = signet(env, "start", "--wait", "10")
    assert start.returncode == 1
    assert one_line(start.stderr) == (
        f"error: port {html_server.port} on 127.0.0.1 is taken by another program; use --port or SIGNET_PORT"
    )
    assert not (tmp_path / "ws" / ".daemon" / "daemon.json").exists()  # nothing left running
    for args in (("status",), ("remember", "a fact"), ("doctor",)):
        res = signet(env, *args)
        line = one_line(res.stderr)
        assert res.returncode == 1 and "<" not in line, line
        assert "not Signet (404 Not Found); is another program listening at this address?" in line


def test_hook_with_the_daemon_down_tells_the_user_once_per_session_and_never_the_model(
    tmp_path: Path, make_workspace: Callable[..., Workspace], start_daemon: Callable[..., DaemonProcess]
) -> None:
    ws = make_workspace(embedding="none")
    h = Harness(tmp_path, ws, "claude-code")  # installed by the real CLI into a temporary HOME
    h.port = free_port()  # nothing listens there yet
    cmds = hook_commands(h.home / ".claude" / "settings.json")
    prompt_cmd, timeout = cmds["UserPromptSubmit"]

    def prompt(session: str) -> subprocess.CompletedProcess[str]:
        payload = {"session_id": session, "cwd": str(h.project), "hook_event_name": "UserPromptSubmit", "prompt": "hi"}
        res, _ = h.run(prompt_cmd, payload, timeout)
        assert res.returncode == 0 and res.stdout == "", res  # nothing in the model's context
        return res

    assert "not reachable" in one_line(prompt("s1").stderr)
    assert prompt("s1").stderr == "" and prompt("s1").stderr == ""  # not before every prompt
    assert "not reachable" in prompt("s2").stderr  # another session is told once too
    start_cmd, start_timeout = cmds["SessionStart"]
    payload = {"session_id": "s3", "cwd": str(h.project), "hook_event_name": "SessionStart", "source": "startup"}
    res, _ = h.run(start_cmd, payload, start_timeout)
    context = json.loads(res.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "Tester" in context and "not reachable" not in context and "signet start" not in context
    assert "not reachable" in one_line(res.stderr)

    # The daemon answers, then goes away again: that new outage is worth one notice.
    d = start_daemon(ws, h.port)
    assert prompt("s1").stderr == ""
    d.stop()
    assert "not reachable" in prompt("s1").stderr
    assert prompt("s1").stderr == ""


@pytest.fixture
def quiet_daemon(make_workspace: Callable[..., Workspace], start_daemon: Callable[..., DaemonProcess]) -> DaemonProcess:
    """A real daemon without an embedder or an LLM (quick to start)."""
    return start_daemon(make_workspace(embedding="none"))


def cli_env(d: DaemonProcess) -> dict[str, str]:
    return {
        **os.environ,
        "SIGNET_WORKSPACE": str(d.workspace.root),
        "SIGNET_HOST": "127.0.0.1",
        "SIGNET_PORT": str(d.port),
        "COLUMNS": "400",  # rich wraps at 80 columns otherwise
    }


def test_forget_of_an_unknown_id_fails_and_forgets_nothing(quiet_daemon: DaemonProcess) -> None:
    env = cli_env(quiet_daemon)
    made = json.loads(signet(env, "remember", "the staging database is on port 5433", "--json").stdout)
    unknown = "0000dead-beef-4000-8000-000000000000"
    res = signet(env, "forget", unknown, "--reason", "typo", "--yes")
    assert res.returncode == 1
    assert one_line(res.stderr).startswith(f"error: no active memory has id '{unknown}'; nothing was forgotten")
    both = signet(env, "forget", made["id"], unknown, "--reason", "cleanup", "--yes")
    assert both.returncode == 1 and "nothing was forgotten" in both.stderr
    with quiet_daemon.client() as c:
        assert c.get(f"/api/memory/{made['id']}").json()["is_deleted"] is False
    ok = signet(env, "forget", made["id"], "--reason", "cleanup", "--yes")
    assert ok.returncode == 0 and "forgot 1 memories" in ok.stdout, ok.stderr
    twice = signet(env, "forget", made["id"], "--reason", "cleanup", "--yes")  # already forgotten
    assert twice.returncode == 1 and "no active memory has id" in twice.stderr
    none = signet(env, "forget", "--type", "decision", "--reason", "cleanup", "--yes")
    assert none.returncode == 0 and "nothing matches" in none.stdout  # a filter that matches nothing is fine


def test_ingest_refuses_a_binary_log(tmp_path: Path, quiet_daemon: DaemonProcess) -> None:
    env = cli_env(quiet_daemon)
    binary = tmp_path / "logs" / "core.log"
    binary.parent.mkdir()
    binary.write_bytes(b"\x7fELF\x02\x01\x01\x00" + bytes(range(256)) * 40)
    res = signet(env, "ingest", str(binary))
    assert res.returncode == 1
    assert f"failed {binary}: not a text file (it has NUL bytes)" in " ".join(res.stdout.split())
    (binary.parent / "chat.txt").write_text(
        "User: where do deploy keys live?\nAssistant: in the vault, path ops/keys.\n"
    )
    walked = signet(env, "ingest", str(binary.parent))  # in a directory: passed over, with a note
    assert walked.returncode == 0, walked.stdout + walked.stderr
    out = " ".join(walked.stdout.split())
    assert f"skipped {binary}: not a text file" in out and "stored 1 file(s) (2 turns)" in out
    with quiet_daemon.client() as c:
        found = c.post("/api/memory/recall", json={"query": "ELF", "limit": 50}).json()["results"]
    assert not any("ELF" in r["content"] for r in found)


def test_doctor_says_when_jobs_wait_for_an_llm(
    tmp_path: Path, make_workspace: Callable[..., Workspace], start_daemon: Callable[..., DaemonProcess]
) -> None:
    # provider: none (what setup writes when no Ollama answers): jobs wait; healthy, but said.
    d = start_daemon(make_workspace(embedding="none"))
    env = cli_env(d)
    assert signet(env, "remember", "we deploy on Thursdays").returncode == 0
    res = signet(env, "doctor")
    assert res.returncode == 0, res.stderr
    out = " ".join(res.stdout.split())
    assert out.startswith("healthy") and "1 jobs pending, none will run" in out
    assert "no LLM provider is configured (memory.pipelineV2.extraction.provider: none)" in out
    assert "set memory.pipelineV2.extraction.provider in agent.yaml to claude-code, codex or opencode" in out

    # A provider that is configured but not there: a fault, with the fix.
    dead = f"http://127.0.0.1:{free_port()}"
    ws = make_workspace(
        embedding="none",
        memory={"pipelineV2": {"maxAttempts": 100, "extraction": {"provider": "ollama", "endpoint": dead}}},
    )
    d = start_daemon(ws)
    env = cli_env(d)
    assert signet(env, "remember", "we deploy on Thursdays").returncode == 0
    report = json.loads(signet(env, "doctor", "--json").stdout)
    provider = " ".join(report["domains"]["provider"]["findings"])
    assert "LLM provider 'ollama' is unreachable" in provider and "1 jobs wait" in provider
    assert "memory.pipelineV2.extraction in agent.yaml" in provider
    assert report["domains"]["provider"]["status"] != "healthy"


# -- ordinary load is not "degraded"; real faults still are -----------------------------------


def _jobs(runtime: Runtime, pending: int, *, done_ago_s: float | None, leased: int = 0) -> None:
    now = datetime.now(UTC)
    old = (now - timedelta(hours=1)).isoformat()

    def write(conn: Connection) -> None:
        conn.execute("DELETE FROM memory_jobs")
        for i in range(pending):
            conn.execute(
                "INSERT INTO memory_jobs(id, job_type, status, created_at, updated_at) "
                "VALUES (?, 'extract', 'pending', ?, ?)",
                (f"p{i}", old, old),
            )
        for i in range(leased):
            conn.execute(
                "INSERT INTO memory_jobs(id, job_type, status, leased_at, created_at, updated_at) "
                "VALUES (?, 'extract', 'leased', ?, ?, ?)",
                (f"l{i}", now.isoformat(), old, old),
            )
        if done_ago_s is not None:
            at = (now - timedelta(seconds=done_ago_s)).isoformat()
            conn.execute(
                "INSERT INTO memory_jobs(id, job_type, status, completed_at, created_at, updated_at) "
                "VALUES ('c1', 'extract', 'completed', ?, ?, ?)",
                (at, old, at),
            )

    runtime.db.write(write)


def _queue(runtime: Runtime, waiting: str | None = None, *, fault: bool = False) -> diagnostics.Domain:
    lease_ms = runtime.settings.memory.pipeline.lease_timeout_ms
    now = datetime.now(UTC)
    return runtime.db.read(lambda conn: diagnostics.queue_domain(conn, lease_ms, now, waiting, fault=fault))


def test_a_queue_being_worked_is_load_and_a_stalled_one_is_a_fault(make_workspace: Callable[..., Workspace]) -> None:
    runtime = start_runtime(make_workspace(embedding="none"))
    try:
        _queue_cases(runtime)
    finally:
        runtime.stop()


def _queue_cases(runtime: Runtime) -> None:
    _jobs(runtime, 200, done_ago_s=20)  # a deep, hour-old backlog the pipeline is draining
    q = _queue(runtime)
    assert q.score == 1.0 and q.findings == [] and q.metrics["backlog"] == "draining"
    _jobs(runtime, 200, done_ago_s=None, leased=2)  # long jobs under way, none finished yet
    assert _queue(runtime).score == 1.0
    _jobs(runtime, 200, done_ago_s=3600)  # nothing finished for an hour, nothing under way
    q = _queue(runtime)
    assert q.status != "healthy" and q.metrics["backlog"] == "stalled"
    assert any("200 jobs pending and none done in 5 min" in f for f in q.findings)
    why = "waiting for a provider: memory.pipelineV2.extraction.provider is 'none'"
    q = _queue(runtime, why)  # waiting by choice: said, not scored
    assert q.score == 1.0 and q.findings == [f"200 jobs pending, none will run: {why}"]
    assert _queue(runtime, "waiting for a provider: unknown LLM provider 'olama'", fault=True).score < 1.0


def test_an_embedding_backlog_is_load_until_the_embedder_fails(make_workspace: Callable[..., Workspace]) -> None:
    with FakeEmbeddingServer() as fake:
        for timeout, expect_fault in ((30.0, False), (0.5, True)):
            ws = make_workspace(embedding="ollama")
            write_config(
                ws, embedding={"provider": "ollama", "base_url": fake.url, "timeout": timeout, "batch_size": 1}
            )
            fake.mode = "ok"
            rt = start_runtime(ws)
            try:
                fake.mode = "hang"  # every embedding now takes 3 s: a slow provider, or (timeout 0.5) a failing one
                for i in range(10):
                    rt.service.remember(RememberRequest(content=f"bulk import line {i} about invoices"))
                deadline = time.monotonic() + 20
                while expect_fault and rt.embeddings.last_batch_error is None and time.monotonic() < deadline:
                    time.sleep(0.1)
                report = diagnostics.diagnose(rt)
                index = report["domains"]["index"]
                assert index["metrics"]["coverage"] < 0.8
                if expect_fault:
                    assert index["status"] != "healthy", index
                    assert any("of memories have vectors" in f for f in index["findings"])
                else:
                    assert index["score"] == 1.0 and index["metrics"]["embedding_backlog"] >= 9, index
                    assert report["status"] == "healthy", report
            finally:
                fake.mode = "ok"
                rt.stop()
