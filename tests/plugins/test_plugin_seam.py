"""The plugin seam is open: a package installed beside Signet (found through its ``signet``
entry point, as pip would install it) adds an embedder, an LLM provider, a harness and a
transcript adapter, and setup, the CLI and the daemon use them with no change to core code.

The package is tests/plugins/toy_plugin.py, put on ``sys.path`` with a ``.dist-info``
directory that declares the entry point; everything runs in real subprocesses.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
import yaml

from tests.conftest import free_port

HERE = Path(__file__).parent


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    site = tmp_path / "site"
    site.mkdir()
    shutil.copy(HERE / "toy_plugin.py", site / "toy_signet_plugin.py")
    info = site / "toy_signet_plugin-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: toy-signet-plugin\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[signet]\ntoy = toy_signet_plugin\n")
    home = tmp_path / "home"
    home.mkdir()
    return {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")]),
        "HOME": str(home),
        "SIGNET_WORKSPACE": str(tmp_path / "ws"),
        "SIGNET_HOST": "127.0.0.1",
        "SIGNET_PORT": str(free_port()),
    }


def signet(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "signet.cli.entry", *args], capture_output=True, text=True, env=env, timeout=120
    )


def test_a_plugin_adds_providers_a_harness_and_an_adapter(env: dict[str, str], tmp_path: Path) -> None:
    out = signet(env, "setup", "-y", "--embedding", "toy", "--llm", "toyllm", "--harness", "toyharness")
    assert out.returncode == 0, out.stderr
    cfg = yaml.safe_load((tmp_path / "ws" / "agent.yaml").read_text())
    assert cfg["embedding"] == {"provider": "toy", "model": "toy-hash-64"}  # the plugin's default model
    assert cfg["memory"]["pipelineV2"]["extraction"]["model"] == "toy-1"
    assert (tmp_path / "home" / ".toy" / "signet.md").read_text() == "# signet toy\n"  # the plugin's harness

    cfg["memory"]["pipelineV2"]["enabled"] = True
    (tmp_path / "ws" / "agent.yaml").write_text(yaml.safe_dump(cfg))
    started = signet(env, "start")
    assert started.returncode == 0, started.stderr + started.stdout
    try:
        url = f"http://127.0.0.1:{env['SIGNET_PORT']}"
        with httpx.Client(base_url=url, timeout=30) as c:
            for text in ("the deploy key lives in the team vault", "lunch is at noon on fridays"):
                assert c.post("/api/memory/remember", json={"content": text}).status_code == 200
            deadline = time.monotonic() + 60
            probe = c.get("/api/status")
            assert "embedding" in probe.json(), probe.text
            while (emb := c.get("/api/status").json()["embedding"])["pending"] or emb["state"] != "ready":
                assert time.monotonic() < deadline, emb
                time.sleep(0.1)
            assert (emb["provider"], emb["model"]) == ("toy", "toy-hash-64")
            res = c.post("/api/memory/recall", json={"query": "where is the deploy key", "limit": 1}).json()
            assert res["method"] == "hybrid" and res["results"][0]["content"].startswith("the deploy key")
            provider = c.get("/api/pipeline/status").json()["provider"]
            assert provider["name"] == "toyllm" and provider["healthy"] is True
        transcript = tmp_path / "chat.toy"
        transcript.write_text("user: which port does the billing service use?\nassistant: port 8443, behind nginx\n")
        ingested = signet(env, "ingest", str(transcript))  # detected by the plugin's adapter
        assert ingested.returncode == 0, ingested.stderr
        assert "stored 1 file(s) (2 turns)" in ingested.stdout, ingested.stdout
    finally:
        assert signet(env, "stop").returncode == 0


def test_an_unknown_provider_is_one_line_naming_the_installed_ones(env: dict[str, str], tmp_path: Path) -> None:
    out = signet(env, "setup", "-y", "--embedding", "nope", "--llm", "none")
    assert out.returncode != 0
    assert "unknown embedding provider 'nope'" in out.stderr and "toy" in out.stderr
    assert signet(env, "setup", "-y", "--embedding", "none", "--llm", "none").returncode == 0
    cfg_path = tmp_path / "ws" / "agent.yaml"
    cfg = yaml.safe_load(cfg_path.read_text())
    cfg["embedding"]["provider"] = "toyy"
    cfg_path.write_text(yaml.safe_dump(cfg))
    out = signet(env, "daemon")
    assert out.returncode != 0
    lines = [line for line in out.stderr.strip().splitlines() if line.strip()]
    assert len(lines) == 1, out.stderr
    assert "embedding.provider" in lines[0] and "unknown embedding provider 'toyy'" in lines[0]
    assert "installed: local, none, ollama, openai, toy" in lines[0]
