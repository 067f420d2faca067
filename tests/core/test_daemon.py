"""The real daemon (uvicorn subprocess) and the real CLI."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import httpx

from signet.workspace import Workspace
from tests.conftest import DaemonProcess, free_port


def cli(ws: Workspace, port: int, *args: str, input: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "SIGNET_WORKSPACE": str(ws.root), "SIGNET_PORT": str(port), "SIGNET_HOST": "127.0.0.1"}
    return subprocess.run(
        [sys.executable, "-m", "signet.cli.entry", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        input=input,
    )


def test_health_answers_while_the_model_loads(workspace: Workspace, start_daemon: Callable[..., DaemonProcess]) -> None:
    """How soon /health answers is a figure of `signet bench latency` (start -> /health), not a
    timed test; here only a start that waits for something it should not (the model, which
    loads in the background) is caught, with room for a loaded CI machine."""
    started = time.monotonic()
    d = start_daemon(workspace)
    elapsed = time.monotonic() - started
    assert elapsed < 30.0, elapsed  # includes interpreter start-up
    with d.client() as c:
        h = c.get("/health").json()
        assert h == {"status": "ok"}  # public: nothing more (pid, version, uptime are in /api/status)
        assert c.get("/api/status").json()["pid"] == d.proc.pid
        st = c.get("/api/status").json()
        assert st["embedding"]["state"] in ("loading", "ready")
        # keyword search works while the model loads
        c.post("/api/memory/remember", json={"content": "kubernetes namespaces per team"})
        assert c.post("/api/memory/recall", json={"query": "kubernetes"}).json()["results"]
    assert (workspace.pid_path.read_text().strip()) == str(d.proc.pid)


def test_data_survives_restart(workspace: Workspace, start_daemon: Callable[..., DaemonProcess]) -> None:
    d = start_daemon(workspace)
    d.wait_embedder()
    with d.client() as c:
        mid = c.post("/api/memory/remember", json={"content": "The deploy key lives in the team vault"}).json()["id"]
        c.patch(f"/api/memory/{mid}", json={"importance": 0.4, "reason": "tuning"})
    d.wait_embedder()
    d.stop()
    assert not workspace.pid_path.exists()
    d2 = start_daemon(workspace)
    d2.wait_embedder()
    with d2.client() as c:
        m = c.get(f"/api/memory/{mid}").json()
        assert m["version"] == 2 and m["importance"] == 0.4
        res = c.post("/api/memory/recall", json={"query": "where is the secret for deployment stored"}).json()
        assert res["results"][0]["id"] == mid and res["method"] == "hybrid"
        assert [e["event"] for e in c.get(f"/api/memory/{mid}/history").json()["events"]] == ["created", "modified"]
    log = workspace.log_path()
    assert log.exists() and "signet daemon starting" in log.read_text()


def test_cli_end_to_end(workspace: Workspace, daemon: DaemonProcess) -> None:
    daemon.wait_embedder()
    r = cli(workspace, daemon.port, "remember", "critical: [ops]: rotate the TLS certificates every 60 days")
    assert r.returncode == 0 and r.stdout.startswith("remembered "), r.stderr
    r = cli(workspace, daemon.port, "remember", "rotate the TLS certificates every 60 days")
    assert "already remembered" in r.stdout
    r = cli(workspace, daemon.port, "recall", "when do certs expire", "--json")
    assert r.returncode == 0, r.stderr
    import json

    data = json.loads(r.stdout)
    assert data["results"][0]["content"] == "rotate the TLS certificates every 60 days"
    r = cli(workspace, daemon.port, "recall", "certificates")
    assert r.returncode == 0 and "rotate the TLS" in r.stdout
    r = cli(workspace, daemon.port, "status")
    assert r.returncode == 0 and "1 active" in r.stdout and "vector search" in r.stdout
    r = cli(workspace, daemon.port, "forget", "--tags", "ops")
    assert r.returncode == 1 and "--reason" in r.stderr
    r = cli(workspace, daemon.port, "forget", "--tags", "ops", "--reason", "expired", "--yes")
    assert r.returncode == 0 and "forgot 1" in r.stdout
    r = cli(workspace, daemon.port, "recall", "x", "--limit", "0")
    assert r.returncode != 0


def test_cli_when_daemon_is_down(workspace: Workspace) -> None:
    port = free_port()
    for args in (["recall", "anything"], ["remember", "x"], ["status"]):
        r = cli(workspace, port, *args)
        assert r.returncode == 1
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1 and "not running" in lines[0] and "signet start" in lines[0], r.stderr


def test_start_stop_background(tmp_path: Path) -> None:
    ws = Workspace(tmp_path / "bg")
    port = free_port()
    assert cli(ws, port, "setup", "--non-interactive").returncode == 0
    r = cli(ws, port, "start")
    try:
        assert r.returncode == 0 and "started" in r.stdout, r.stderr
        pid = int(ws.pid_path.read_text())
        assert httpx.get(f"http://127.0.0.1:{port}/api/status").json()["pid"] == pid
        assert "already running" in cli(ws, port, "start").stdout
        assert cli(ws, port, "logs", "-n", "5").returncode == 0
    finally:
        r = cli(ws, port, "stop")
    assert r.returncode == 0 and "stopped" in r.stdout
    assert not ws.pid_path.exists()
    assert "not running" in cli(ws, port, "stop").stdout


def test_setup_chooses_the_extraction_llm(tmp_path: Path) -> None:
    """Nothing answers on 127.0.0.1:11434 here: ``auto`` writes ``none`` so jobs wait, not die."""
    from signet.config import load_settings

    auto = Workspace(tmp_path / "auto")
    r = cli(auto, free_port(), "setup", "--non-interactive")
    assert r.returncode == 0 and "extraction LLM: none" in r.stdout, r.stderr
    assert load_settings(auto.config_path).memory.pipeline.extraction.provider == "none"
    chosen = Workspace(tmp_path / "openai")
    assert cli(chosen, free_port(), "setup", "-y", "--llm", "openai").returncode == 0
    assert load_settings(chosen.config_path).memory.pipeline.extraction.provider == "openai"
    bad = cli(Workspace(tmp_path / "bad"), free_port(), "setup", "-y", "--llm", "gpt9")
    assert bad.returncode != 0 and "--llm" in bad.stderr


def test_invalid_config_names_the_key(tmp_path: Path) -> None:
    ws = Workspace(tmp_path / "bad")
    ws.root.mkdir()
    ws.config_path.write_text("search:\n  alpha: 3\n")
    r = cli(ws, free_port(), "daemon")
    assert r.returncode != 0 and "search.alpha" in r.stderr
