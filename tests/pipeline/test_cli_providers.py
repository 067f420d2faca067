"""The harness CLIs as LLM providers, against fake ``claude`` / ``codex`` / ``opencode``
executables on PATH printing the real CLIs' output formats (tests/pipeline/fake_cli.py)."""

from __future__ import annotations

import io
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from fastapi.testclient import TestClient

from signet.cli import hook
from signet.config import ExtractionSettings, parse_settings
from signet.errors import ConfigError
from signet.pipeline.llm.base import LlmError, LlmTimeout, LlmUnavailable, RecordingLlm
from signet.pipeline.llm.budget import Budget
from signet.pipeline.llm.cli import ClaudeCodeProvider, CliProvider, CodexProvider, OpenCodeProvider
from signet.runtime import Runtime
from signet.workspace import Workspace
from tests.pipeline.conftest import rows, wait_idle
from tests.pipeline.fake_cli import FakeCli

PROVIDERS: dict[str, tuple[type[CliProvider], str]] = {
    "claude-code": (ClaudeCodeProvider, "claude"),
    "codex": (CodexProvider, "codex"),
    "opencode": (OpenCodeProvider, "opencode"),
}
USAGE = {"claude-code": (1000, 50), "codex": (700, 40), "opencode": (600, 40)}
"""What each fake reports, as the provider must count it (claude: input + cache; opencode: output + reasoning)."""


@pytest.fixture
def bin_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "bin"
    folder.mkdir()
    monkeypatch.setenv("PATH", f"{folder}:/usr/bin:/bin")
    return folder


def llm(name: str, timeout: float = 10.0, **kw: Any) -> tuple[RecordingLlm, Budget]:
    cls, _ = PROVIDERS[name]
    settings = ExtractionSettings(provider=name, timeout=timeout, **kw)
    budget = Budget(name)
    return RecordingLlm(cls(settings), settings, budget=budget), budget


@pytest.mark.parametrize("name", sorted(PROVIDERS))
def test_real_output_formats_are_parsed_and_the_prompt_goes_in_on_stdin(bin_dir: Path, name: str) -> None:
    fake = FakeCli(bin_dir, PROVIDERS[name][1])
    fake.answer('{"facts": [{"content": "the answer", "type": "fact", "confidence": 0.9}], "entities": []}')
    rec, budget = llm(name)
    prompt = "Remember: the release train leaves on Thursdays"
    out = rec.complete(prompt, purpose="extraction")
    assert json.loads(out)["facts"][0]["content"] == "the answer"
    (run,) = fake.runs()
    assert prompt in run["stdin"] and not any("release train" in a for a in run["argv"])
    assert run["no_hooks"] == "1"  # the harness's own Signet hooks do nothing for this call
    assert Path(run["cwd"]).name.startswith("signet-llm-") and Path(run["cwd"]) != Path.cwd()
    expected = {
        "claude-code": ["-p", "--output-format", "json", "--max-turns", "1", "--no-session-persistence"],
        "codex": ["exec", "--json", "--skip-git-repo-check", "--ephemeral", "--sandbox", "read-only", "-"],
        "opencode": ["run", "--format", "json"],
    }[name]
    assert run["argv"] == expected
    # The reported usage is what the budget counts.
    assert budget.hour_calls == 1 and budget.hour_tokens == sum(USAGE[name])
    assert rec.summary()["outcomes"] == {"success": 1}


def test_model_and_system_prompt_are_arguments_not_shell_words(bin_dir: Path) -> None:
    fake = FakeCli(bin_dir, "claude")
    fake.answer("ok")
    rec, _ = llm("claude-code", model="haiku")
    assert rec.complete("hi", purpose="summary", system="Be brief.") == "ok"
    argv = fake.runs()[0]["argv"]
    assert argv[-4:] == ["--model", "haiku", "--system-prompt", "Be brief."]
    codex = FakeCli(bin_dir, "codex")
    rec, _ = llm("codex", model="gpt-5-mini")
    rec.complete("hi", purpose="summary", system="Be brief.")
    run = codex.runs()[0]
    assert run["argv"][-3:] == ["--model", "gpt-5-mini", "-"] and run["stdin"] == "Be brief.\n\nhi"


@pytest.mark.parametrize("name", sorted(PROVIDERS))
def test_hostile_prompt_is_never_a_flag_or_a_shell_word(bin_dir: Path, tmp_path: Path, name: str) -> None:
    fake = FakeCli(bin_dir, PROVIDERS[name][1])
    marker = tmp_path / "pwned"
    prompt = f"--help --dangerously-skip-permissions $(touch {marker}) `touch {marker}`; touch {marker} | cat"
    rec, _ = llm(name)
    rec.complete(prompt, purpose="extraction")
    run = fake.runs()[0]
    assert run["stdin"] == prompt and "--dangerously-skip-permissions" not in run["argv"]
    assert not marker.exists()


@pytest.mark.parametrize("name", sorted(PROVIDERS))
def test_garbage_output_is_a_clear_error(bin_dir: Path, name: str) -> None:
    FakeCli(bin_dir, PROVIDERS[name][1]).mode("garbage")
    rec, _ = llm(name)
    with pytest.raises(LlmError, match=rf"^{name}: .*(JSON|json).*Welcome") as err:
        rec.complete("x", purpose="extraction")
    assert not isinstance(err.value, LlmUnavailable)  # a bad answer counts as a failed attempt
    assert rec.summary()["outcomes"] == {"failure": 1}


@pytest.mark.parametrize("name", sorted(PROVIDERS))
def test_nonzero_exit_names_the_status_and_what_it_said(bin_dir: Path, name: str) -> None:
    FakeCli(bin_dir, PROVIDERS[name][1]).mode("exit")
    rec, _ = llm(name)
    with pytest.raises(LlmError, match=rf"{name} exited with status 3: Error: not logged in"):
        rec.complete("x", purpose="extraction")


@pytest.mark.parametrize(
    ("name", "said"),
    [
        ("claude-code", "Credit balance is too low"),
        ("codex", "turn.failed: stream disconnected"),
        ("opencode", "no API key for provider"),
    ],
)
def test_an_error_result_is_a_failure(bin_dir: Path, name: str, said: str) -> None:
    FakeCli(bin_dir, PROVIDERS[name][1]).mode("error")
    rec, _ = llm(name)
    with pytest.raises(LlmError, match=said):
        rec.complete("x", purpose="extraction")


def _gone(pid: int) -> bool:
    status = Path(f"/proc/{pid}/status")
    try:
        state = next(x for x in status.read_text().splitlines() if x.startswith("State:"))
    except (FileNotFoundError, ProcessLookupError):
        return True
    return "Z" in state.split()[1]  # killed, not yet reaped


def test_timeout_kills_the_whole_process_group(bin_dir: Path) -> None:
    fake = FakeCli(bin_dir, "claude")
    fake.mode("slow")
    rec, budget = llm("claude-code", timeout=1.5)
    started = time.monotonic()
    with pytest.raises(LlmTimeout, match=r"did not answer within 1.5s"):
        rec.complete("x", purpose="extraction")
    assert time.monotonic() - started < 10
    pid = fake.child_pid()
    assert pid is not None
    deadline = time.monotonic() + 5
    while not _gone(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _gone(pid), "the CLI's child outlived the timeout"
    assert rec.summary()["outcomes"] == {"timeout": 1} and budget.in_flight == 0


def test_a_missing_cli_is_unavailable_not_a_failure(bin_dir: Path) -> None:
    rec, _ = llm("codex")
    ok, why = rec.provider.health()
    assert not ok and why is not None and "`codex` was not found on the daemon's PATH" in why
    with pytest.raises(LlmUnavailable, match=r"memory\.pipelineV2\.extraction\.command"):
        rec.complete("x", purpose="extraction")


def test_command_names_the_executable(bin_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    elsewhere = tmp_path / "opt"
    fake = FakeCli(elsewhere, "claude")
    fake.answer("from elsewhere")
    rec, _ = llm("claude-code", command=str(elsewhere / "claude"))
    assert rec.provider.health() == (True, None)
    assert rec.complete("x", purpose="summary") == "from elsewhere"


def test_signet_hook_is_a_no_op_inside_signets_own_llm_call(monkeypatch: pytest.MonkeyPatch) -> None:
    """The harness runs its hooks for `claude -p` too: they must not record the call as a session."""
    monkeypatch.setenv("SIGNET_LLM_CALL", "1")
    monkeypatch.setenv("SIGNET_PORT", "1")  # were it to call the daemon, it would fail and say so
    monkeypatch.setenv("SIGNET_HOST", "127.0.0.1")
    out, err = io.StringIO(), io.StringIO()
    payload = json.dumps({"session_id": "s1", "transcript_path": "/nonexistent", "hook_event_name": "SessionEnd"})
    code = hook.run(["session-end", "--harness", "claude-code"], io.StringIO(payload), out, err)
    assert (code, out.getvalue(), err.getvalue()) == (0, "", "")


def test_pipeline_extracts_through_the_claude_cli(
    bin_dir: Path,
    make_workspace: Callable[..., Workspace],
    open_app: Callable[[Workspace], tuple[Runtime, TestClient]],
) -> None:
    fake = FakeCli(bin_dir, "claude")
    fact = {"content": "The billing team deploys on Kubernetes", "type": "decision", "confidence": 0.95}
    fake.answer(json.dumps({"facts": [fact], "entities": []}))
    ws = make_workspace(
        embedding="none",
        memory={"pipelineV2": {"pollIntervalMs": 50, "extraction": {"provider": "claude-code", "timeout": 20}}},
    )
    rt, api = open_app(ws)
    r = api.post("/api/memory/remember", json={"content": "We decided: billing runs on Kubernetes from now on"})
    assert r.status_code == 200, r.text
    assert wait_idle(rt, timeout=60) == {"completed": 1}
    written = rows(rt, "SELECT content FROM memories WHERE source_type = 'pipeline'")
    assert [w[0] for w in written] == [fact["content"]]
    assert "billing runs on Kubernetes" in fake.runs()[0]["stdin"]
    st = api.get("/api/pipeline/status").json()
    assert st["state"] == "running" and st["provider"]["name"] == "claude-code"
    assert st["provider"]["command"] == "claude" and st["provider"]["healthy"] is True
    usage = rows(rt, "SELECT calls, tokens FROM llm_usage WHERE provider = 'claude-code'")
    # two calls: extraction, then the knowledge builder (a fact was found; the fake CLI's answer
    # holds an empty "entities" list, so it builds nothing)
    assert [tuple(u) for u in usage] == [(2, 2100)]
    assert "You build a knowledge graph" in fake.runs()[1]["stdin"]


def test_a_cli_that_vanishes_mid_way_parks_the_job_and_it_drains_when_back(
    bin_dir: Path,
    make_workspace: Callable[..., Workspace],
    open_app: Callable[[Workspace], tuple[Runtime, TestClient]],
) -> None:
    """The probe said the CLI was there, then it was uninstalled: the leased job's call cannot be
    made, so the job waits (its attempt given back) instead of failing, and runs once it is back."""
    fake = FakeCli(bin_dir, "codex")
    ws = make_workspace(
        embedding="none",
        memory={"pipelineV2": {"pollIntervalMs": 50, "extraction": {"provider": "codex", "timeout": 20}}},
    )
    rt, api = open_app(ws)
    assert api.get("/api/pipeline/status").json()["provider"]["healthy"] is True  # probed: cached for 15 s
    fake.path.unlink()
    r = api.post("/api/memory/remember", json={"content": "The staging cluster moves to Frankfurt in May"})
    mid = r.json()["id"]
    deadline = time.monotonic() + 20
    while (job := rows(rt, "SELECT * FROM memory_jobs WHERE memory_id = ?", mid)[0])[
        "status"
    ] != "waiting_for_provider":
        assert time.monotonic() < deadline, dict(job)
        time.sleep(0.05)
    assert (job["attempts"], job["max_attempts"]) == (1, 4) and "not found on the daemon's PATH" in job["error"]
    st = api.get("/api/pipeline/status").json()
    assert st["waiting_for"] == "waiting_for_provider" and "`codex` was not found" in st["reason"]
    assert st["queue"]["dead"] == 0 and st["worker"]["failed"] == 0
    FakeCli(bin_dir, "codex")  # installed again
    deadline = time.monotonic() + 40
    while rows(rt, "SELECT status FROM memory_jobs WHERE memory_id = ?", mid)[0][0] != "completed":
        assert time.monotonic() < deadline, "the job did not run once the CLI was back"
        time.sleep(0.1)
    assert len(fake.runs()) == 1


@pytest.mark.parametrize(
    ("extraction", "message"),
    [
        ({"provider": "claude-code", "command": "/bin/sh"}, "must be the 'claude' executable"),
        ({"provider": "codex", "command": "codex; rm -rf ~"}, "must be the 'codex' executable"),
        ({"provider": "claude-code", "command": "/tmp/evil/claude-wrapper"}, "must be the 'claude' executable"),
        ({"provider": "ollama", "command": "claude"}, "only for the harness CLI providers"),
    ],
)
def test_command_can_only_name_the_providers_own_cli(extraction: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        parse_settings({"memory": {"pipelineV2": {"extraction": extraction}}})
    ok = parse_settings({"memory": {"pipelineV2": {"extraction": {"provider": "codex", "command": "/opt/x/codex"}}}})
    assert ok.memory.pipeline.extraction.command == "/opt/x/codex"


def test_the_config_api_cannot_make_the_daemon_run_another_program(
    make_workspace: Callable[..., Workspace], open_app: Callable[[Workspace], tuple[Runtime, TestClient]]
) -> None:
    ws = make_workspace(embedding="none")
    rt, api = open_app(ws)
    before = ws.config_path.read_text()
    data = yaml.safe_load(before)
    data["memory"]["pipelineV2"]["extraction"] = {"provider": "claude-code", "command": "/usr/bin/env"}
    r = api.post("/api/config", json={"file": "agent.yaml", "content": yaml.safe_dump(data)})
    assert r.status_code == 400 and "must be the 'claude' executable" in r.json()["error"]
    assert ws.config_path.read_text() == before
    assert rt.reload_config() is False and rt.pipeline.provider.name == "none"
