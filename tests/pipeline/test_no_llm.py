"""The honest no-LLM mode, against a real daemon: with no provider jobs wait (never dead) and
status says why and how to set one; setting one with `signet config set` drains them, no restart."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from signet.config import load_settings
from signet.workspace import Workspace
from tests.conftest import DaemonProcess
from tests.pipeline.fake_llm import FakeLLM

N = 1000


def cli(d: DaemonProcess, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "signet.cli.entry", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={
            **os.environ,
            "SIGNET_WORKSPACE": str(d.workspace.root),
            "SIGNET_PORT": str(d.port),
            "COLUMNS": "400",
        },
        check=False,
    )


def wait_for(c: httpx.Client, done: Callable[[dict[str, Any]], bool], timeout: float) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        st: dict[str, Any] = c.get("/api/pipeline/status").json()
        if done(st):
            return st
        if time.monotonic() > deadline:
            raise AssertionError(f"not reached in {timeout}s: {st['queue']['by_status']} {st['reason']}")
        time.sleep(0.2)


def test_the_default_without_agent_yaml_is_no_provider(tmp_path: Path) -> None:
    settings = load_settings(tmp_path / "missing" / "agent.yaml")
    assert settings.memory.pipeline.extraction.provider == "none"
    assert settings.memory.pipeline.extraction.model is None  # each provider's own default


def test_a_thousand_remembers_without_a_provider_wait_then_drain_when_one_is_set(
    make_workspace: Callable[..., Workspace],
    start_daemon: Callable[..., DaemonProcess],
    fake_llm: FakeLLM,
) -> None:
    ws = make_workspace(embedding="none", memory={"pipelineV2": {"pollIntervalMs": 100, "workers": 2}})
    d = start_daemon(ws)
    with d.client() as c:
        for i in range(N):
            r = c.post("/api/memory/remember", json={"content": f"note {i}: the deploy window is slot {i}"})
            assert r.status_code == 200, r.text
        st = wait_for(c, lambda s: s["queue"]["by_status"]["waiting_for_provider"] == N, 60)
        assert st["queue"]["dead"] == 0 and st["queue"]["by_status"]["pending"] == 0
        assert st["state"] == "waiting" and st["waiting_for"] == "waiting_for_provider"
        assert "no LLM provider is configured" in st["reason"] and "claude-code" in st["reason"]
        assert st["worker"]["failed"] == 0 and st["provider"]["calls"]["calls"] == 0  # nothing was even tried
        status = c.get("/api/status").json()
        llm = status["llm"]
        assert llm["provider"] == "none" and llm["state"] == "waiting" and llm["waiting_jobs"] == N
        assert llm["dead_jobs"] == 0 and "memory.pipelineV2.extraction.provider" in llm["reason"]
        diag = c.get("/api/diagnostics").json()
        queue_findings = " ".join(diag["domains"]["queue"]["findings"])
        assert f"{N} jobs pending, none will run" in queue_findings and "no LLM provider" in queue_findings

    out = cli(d, "status")
    assert out.returncode == 0, out.stderr
    assert f"none waiting, {N} jobs waiting_for_provider" in out.stdout
    assert "no LLM provider is configured" in out.stdout

    # Set a provider while the daemon runs: its identity watcher reloads agent.yaml.
    for key, value in (
        ("memory.pipelineV2.extraction.endpoint", fake_llm.url),
        ("memory.pipelineV2.extraction.timeout", "10"),
        ("memory.pipelineV2.extraction.provider", "ollama"),
    ):
        out = cli(d, "config", "set", key, value)
        assert out.returncode == 0, out.stderr
        assert "applies this change by itself" in out.stdout
    with d.client() as c:
        st = wait_for(c, lambda s: s["queue"]["by_status"]["completed"] == N, 300)
        assert st["queue"]["dead"] == 0 and st["queue"]["waiting"] == 0
        assert st["state"] == "running" and st["provider"]["name"] == "ollama" and st["provider"]["reloads"] >= 1
        jobs = c.get("/api/pipeline/jobs", params={"status": "completed", "limit": 200}).json()["items"]
        assert {j["attempts"] for j in jobs} == {1}  # waiting never spent an attempt
    assert fake_llm.calls("extract") == N
    out = cli(d, "pipeline", "status")
    assert out.returncode == 0 and "pipeline: running" in out.stdout and "provider: ollama qwen3:4b" in out.stdout


@pytest.mark.parametrize("bad", ["provider: [", "memory: {pipelineV2: {extraction: {provider: nosuch}}}"])
def test_a_broken_agent_yaml_keeps_the_running_provider(
    make_workspace: Callable[..., Workspace], open_app: Callable[..., Any], bad: str
) -> None:
    ws = make_workspace(embedding="none")
    rt, api = open_app(ws)
    ws.config_path.write_text(bad)
    assert rt.reload_config() is False
    st = api.get("/api/pipeline/status").json()
    assert st["provider"]["name"] == "none" and st["provider"]["reloads"] == 0
