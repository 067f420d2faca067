"""agent.yaml refuses what it cannot read: unknown keys in Signet's sections are errors naming
the dotted key and the nearest valid one; unknown top-level keys stay (real files, the real CLI)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from fastapi.testclient import TestClient

from signet.config import load_settings, unknown_top_level_keys
from signet.errors import ConfigError
from signet.runtime import Runtime


def write(path: Path, data: dict[str, object]) -> Path:
    path.write_text(yaml.safe_dump(data))
    return path


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"auth": {"mdoe": "team"}}, "auth.mdoe: unknown key; did you mean auth.mode?"),
        (
            {"memory": {"pipelineV2": {"extraction": {"modle": "x"}}}},
            "memory.pipelineV2.extraction.modle: unknown key; did you mean memory.pipelineV2.extraction.model?",
        ),
        (
            {"agents": {"roster": [{"name": "a", "readpolicy": "shared"}]}},
            "agents.roster.0.readpolicy: unknown key; did you mean agents.roster.0.readPolicy?",
        ),
        ({"search": {"zzz": 1}}, "search.zzz: unknown key; valid keys here: alpha, dampening, default_limit"),
        ({"daemon": {"prot": 4000}}, "daemon.prot: unknown key; did you mean daemon.port?"),
    ],
)
def test_unknown_keys_in_owned_sections_are_errors(tmp_path: Path, data: dict[str, object], message: str) -> None:
    path = write(tmp_path / "agent.yaml", data)
    with pytest.raises(ConfigError) as err:
        load_settings(path)
    assert err.value.message.startswith(f"{path}: {message}"), err.value.message
    assert "\n" not in err.value.message


def test_unknown_top_level_keys_stay(tmp_path: Path) -> None:
    settings = load_settings(write(tmp_path / "agent.yaml", {"otherTool": {"x": 1}, "auth": {"mode": "team"}}))
    assert settings.auth.mode == "team" and unknown_top_level_keys(settings) == ["otherTool"]


def _signet(ws: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "SIGNET_WORKSPACE": str(ws), "SIGNET_PORT": "1", "SIGNET_HOST": "127.0.0.1"}
    return subprocess.run(
        [sys.executable, "-m", "signet.cli.entry", *args], capture_output=True, text=True, env=env, timeout=60
    )


def test_the_daemon_and_the_cli_refuse_a_typo_in_one_line(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    assert _signet(ws, "setup", "-y", "--embedding", "none", "--llm", "none").returncode == 0
    cfg = yaml.safe_load((ws / "agent.yaml").read_text())
    cfg["auth"] = {"mdoe": "team"}
    cfg["someOtherTool"] = {"keep": True}
    (ws / "agent.yaml").write_text(yaml.safe_dump(cfg))
    for args in (("daemon",), ("start",), ("doctor",)):
        r = _signet(ws, *args)
        lines = r.stderr.strip().splitlines()
        assert r.returncode != 0 and len(lines) == 1, (args, r.stderr)
        assert "auth.mdoe: unknown key; did you mean auth.mode?" in lines[0], (args, lines)
    assert not (ws / ".daemon" / "daemon.json").exists()


def test_doctor_lists_unknown_top_level_keys(tmp_path: Path) -> None:
    from tests.conftest import free_port

    ws, port = tmp_path / "ws", str(free_port())
    env = {**os.environ, "SIGNET_WORKSPACE": str(ws), "SIGNET_PORT": port, "SIGNET_HOST": "127.0.0.1"}

    def signet(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "signet.cli.entry", *args], capture_output=True, text=True, env=env, timeout=60
        )

    assert signet("setup", "-y", "--embedding", "none", "--llm", "none").returncode == 0
    cfg = yaml.safe_load((ws / "agent.yaml").read_text())
    cfg["someOtherTool"] = {"keep": True}
    cfg["atuh"] = {"mode": "team"}  # a misspelt section: allowed at the top level, but pointed at
    (ws / "agent.yaml").write_text(yaml.safe_dump(cfg))
    assert signet("start").returncode == 0
    try:
        r = signet("doctor")
        out = " ".join(r.stdout.split())  # rich wraps at the terminal's width
        assert "top-level keys Signet does not read" in out, r.stdout + r.stderr
        assert "atuh (did you mean auth?), someOtherTool" in out, r.stdout
        as_json = json.loads(signet("doctor", "--json").stdout)
        assert as_json["config"] == {
            "unknown_top_level_keys": ["atuh", "someOtherTool"],
            "did_you_mean": {"atuh": "auth"},
        }
    finally:
        signet("stop")


def test_the_specs_own_keys_still_load(tmp_path: Path) -> None:
    """An agent.yaml written by the spec's TypeScript Signet loads: the keys it writes in
    Signet's sections are translated (graphEnabled, *RetentionMs, batchLimit) or listed as
    read by nothing; a typo next to them is still an error."""
    spec = {
        "memory": {
            "database": "memory/memories.db",
            "vectors": "memory/vectors.db",
            "pipelineV2": {
                "enabled": True,
                "shadowMode": False,
                "graphEnabled": False,
                "autonomousEnabled": False,
                "autonomous": {"enabled": False, "frozen": True, "maintenanceMode": "observe"},
                "hints": {"enabled": False},
                "telemetry": {"memorySearchQaEnabled": False},
                "documentChunkSize": 2000,
                "documentChunkOverlap": 200,
                "graph": {"extractionWritesEnabled": True},
            },
        },
        "retention": {"tombstoneRetentionMs": 2 * 86_400_000, "historyRetentionMs": 43_200_000, "batchLimit": 50},
    }
    settings = load_settings(write(tmp_path / "agent.yaml", spec))
    assert settings.memory.pipeline.graph.enabled is False
    assert (settings.retention.tombstone_days, settings.retention.history_days) == (2, 0.5)
    assert settings.retention.batch_limit == 50 and settings.retention.dead_job_days == 30
    assert unknown_top_level_keys(settings) == []
    spec["memory"]["pipelineV2"]["shadowMdoe"] = True  # type: ignore[index]
    with pytest.raises(
        ConfigError, match=r"pipelineV2\.shadowMdoe: unknown key; did you mean memory\.pipelineV2\.shadowMode"
    ):
        load_settings(write(tmp_path / "agent.yaml", spec))
    with pytest.raises(ConfigError, match="tombstoneRetentionMs must be a number of milliseconds"):
        load_settings(write(tmp_path / "agent.yaml", {"retention": {"tombstoneRetentionMs": "30d"}}))


def test_saving_a_typo_through_the_api_is_refused(api: TestClient, runtime: Runtime) -> None:
    """The dashboard's config editor cannot write what the next start would refuse."""
    path = runtime.workspace.config_path
    before = path.read_bytes()
    resp = api.post("/api/config", json={"file": "agent.yaml", "content": "auth:\n  mdoe: team\n"})
    assert resp.status_code == 400 and resp.json()["code"] == "invalid_request", resp.text
    assert resp.json()["error"] == "agent.yaml: auth.mdoe: unknown key; did you mean auth.mode?"
    assert path.read_bytes() == before
    ok = api.post("/api/config", json={"file": "agent.yaml", "content": "auth:\n  mode: local\notherTool: 1\n"})
    assert ok.status_code == 200, ok.text


def test_a_client_does_not_guess_the_address_past_a_broken_config(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    assert _signet(ws, "setup", "-y", "--embedding", "none", "--llm", "none").returncode == 0
    cfg = yaml.safe_load((ws / "agent.yaml").read_text())
    cfg["daemon"] = {"port": 4999, "prot": 1}
    (ws / "agent.yaml").write_text(yaml.safe_dump(cfg))
    env = {k: v for k, v in os.environ.items() if k not in ("SIGNET_HOST", "SIGNET_PORT")}
    env["SIGNET_WORKSPACE"] = str(ws)
    r = subprocess.run(
        [sys.executable, "-m", "signet.cli.entry", "remember", "x"], capture_output=True, text=True, env=env, timeout=60
    )
    lines = r.stderr.strip().splitlines()
    assert r.returncode != 0 and len(lines) == 1, r.stderr
    assert "daemon.prot: unknown key" in lines[0] and "SIGNET_PORT" in lines[0], lines
