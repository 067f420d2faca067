"""``signet hook`` in-process: argument handling, payload reading, offline answers."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from signet.cli import hook
from signet.hooks.budget import estimate_tokens
from signet.workspace import Workspace


@pytest.fixture(autouse=True)
def daemon_down(monkeypatch: pytest.MonkeyPatch, workspace: Workspace) -> None:
    monkeypatch.setenv("SIGNET_WORKSPACE", str(workspace.root))
    monkeypatch.setenv("SIGNET_HOST", "127.0.0.1")
    monkeypatch.setenv("SIGNET_PORT", "9")


def call(argv: list[str], stdin: str = "") -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = hook.run(argv, io.StringIO(stdin), out, err)
    return code, out.getvalue(), err.getvalue()


def test_usage_errors_never_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert hook.main(["no-such-event"]) == 1
    assert hook.main(["--help"]) == 0
    assert "session-start" in capsys.readouterr().out


def test_unknown_harness_gets_plain_text() -> None:
    code, out, err = call(["session-start", "--harness", "my-editor", "--budget", "300"], "{}")
    assert code == 0 and out.startswith("# Signet memory") and "not reachable" in err
    assert estimate_tokens(out.strip()) <= 300


def test_plain_text_stdin_is_the_prompt() -> None:
    harness = hook.load_harness("generic")
    assert (
        harness.parse("user-prompt-submit", hook.read_payload(io.StringIO("fix the build"))).body["prompt"]
        == "fix the build"
    )


def test_long_session_keeps_the_whole_transcript_on_disk(workspace: Workspace, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(hook, "MAX_BODY", 5_000)
    turns = [{"role": "user" if i % 2 == 0 else "assistant", "content": f"turn {i} " + "x" * 200} for i in range(60)]
    code, out, err = call(["session-end", "--harness", "opencode"], json.dumps({"session_id": "long", "turns": turns}))
    assert code == 0 and out == ""
    folder = workspace.root / "memory" / "opencode" / "transcripts"
    for name in ("long.full.jsonl", "long.jsonl"):  # the over-limit copy, and the daemon-down copy
        lines = (folder / name).read_text().splitlines()
        assert len(lines) == 60 and json.loads(lines[0])["content"].startswith("turn 0 ")
    assert "long session" in err and "not reachable" in err


def test_fit_turns_keeps_the_latest() -> None:
    turns = [{"role": "user", "content": str(i)} for i in range(10)]
    kept = hook.fit_turns(turns, 3 * (len(json.dumps(turns[0])) + 2))
    assert [t["content"] for t in kept] == ["7", "8", "9"]


def test_project_comes_from_flag_or_cwd(tmp_path: Path) -> None:
    harness = hook.load_harness("claude-code")
    req = harness.parse("session-start", {"cwd": str(tmp_path / "shop"), "session_id": "s"})
    assert req.body["cwd"].endswith("shop") and req.body["session_id"] == "s"
    claw = hook.load_harness("openclaw").parse("session-start", {"sessionKey": "agent:ops:main"})
    assert claw.body["agent_id"] == "ops" and "session_id" not in claw.body
    end = hook.load_harness("openclaw").parse("session-end", {"sessionKey": "agent:ops:main", "session_id": "u1"})
    assert end.body["session_id"] == "u1" and end.body["agent_id"] == "ops"
