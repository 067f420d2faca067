"""Play the harness: run the exact command an installer wrote, feed it the JSON the harness
sends (the documented input shapes), and check what comes back - daemon up and down."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from signet.workspace import Workspace
from tests.conftest import DaemonProcess

pytestmark = pytest.mark.slow


class Harness:
    """A temp HOME with a harness installed through the real CLI."""

    def __init__(self, tmp: Path, ws: Workspace, name: str) -> None:
        self.home = tmp / "home"
        self.project = tmp / "projects" / "webshop"
        self.project.mkdir(parents=True)
        self.ws = ws
        self.port = 9  # discard port: nothing listens until a daemon is attached
        res = subprocess.run(
            [sys.executable, "-m", "signet.cli.entry", "install", name],
            env=self.env(),
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert res.returncode == 0, res.stderr

    def env(self) -> dict[str, str]:
        return {
            **os.environ,
            "HOME": str(self.home),
            "SIGNET_WORKSPACE": str(self.ws.root),
            "SIGNET_HOST": "127.0.0.1",
            "SIGNET_PORT": str(self.port),
        }

    def run(
        self, command: str, payload: dict[str, Any] | str, timeout: float
    ) -> tuple[subprocess.CompletedProcess[str], float]:
        data = payload if isinstance(payload, str) else json.dumps(payload)
        started = time.monotonic()
        res = subprocess.run(
            command,
            shell=True,
            input=data,
            capture_output=True,
            text=True,
            env=self.env(),
            cwd=self.project,
            timeout=timeout,
        )
        return res, time.monotonic() - started


def hook_commands(settings_path: Path) -> dict[str, tuple[str, float]]:
    hooks = json.loads(settings_path.read_text())["hooks"]
    out = {}
    for event, groups in hooks.items():
        for g in groups:
            for h in g["hooks"]:
                if "signet" in h["command"]:
                    out[event] = (h["command"], float(h["timeout"]))
    return out


def claude_transcript(path: Path, session: str, cwd: Path) -> None:
    """A Claude Code session file: user/assistant events with text, tool use, tool results, thinking."""
    base = {
        "sessionId": session,
        "cwd": str(cwd),
        "version": "2.0.0",
        "gitBranch": "main",
        "isSidechain": False,
        "userType": "external",
    }
    lines = [
        {"type": "summary", "summary": "Checkout bug", "leafUuid": "u0"},
        {
            **base,
            "type": "user",
            "uuid": "u1",
            "parentUuid": None,
            "timestamp": "2025-06-01T09:00:00.000Z",
            "message": {"role": "user", "content": "The checkout total ignores the discount code. Fix it."},
        },
        {
            **base,
            "type": "assistant",
            "uuid": "a1",
            "parentUuid": "u1",
            "timestamp": "2025-06-01T09:00:05.000Z",
            "message": {
                "role": "assistant",
                "model": "claude",
                "content": [
                    {"type": "thinking", "thinking": "secret chain of thought"},
                    {"type": "text", "text": "Looking at cart/total.py."},
                    {"type": "tool_use", "id": "t1", "name": "Read", "input": {"file_path": "cart/total.py"}},
                ],
            },
        },
        {
            **base,
            "type": "user",
            "uuid": "u2",
            "parentUuid": "a1",
            "timestamp": "2025-06-01T09:00:06.000Z",
            "message": {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "def total(): RAW TOOL OUTPUT"}],
            },
        },
        {
            **base,
            "type": "assistant",
            "uuid": "a2",
            "parentUuid": "u2",
            "timestamp": "2025-06-01T09:01:00.000Z",
            "message": {
                "role": "assistant",
                "content": [{"type": "text", "text": "Fixed: apply_discount now runs before tax in cart/total.py."}],
            },
        },
        {
            **base,
            "type": "user",
            "uuid": "u3",
            "parentUuid": "a2",
            "timestamp": "2025-06-01T09:02:00.000Z",
            "isMeta": True,
            "message": {"role": "user", "content": "<local-command-stdout>meta</local-command-stdout>"},
        },
    ]
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n")


def remember(d: DaemonProcess, content: str, **kw: Any) -> None:
    r = httpx.post(f"{d.url}/api/memory/remember", json={"content": content, **kw}, timeout=30)
    assert r.status_code == 200, r.text


@pytest.fixture
def quick_ws(make_workspace: Callable[..., Workspace]) -> Workspace:
    """Keyword-only recall: the daemon starts in a second (semantics are tested in test_hooks_api)."""
    return make_workspace(embedding="none")


@pytest.mark.sqlite_only("reads the stored transcript turns from the workspace's SQLite file")
def test_claude_code_hooks_daemon_up_then_down(
    tmp_path: Path, quick_ws: Workspace, start_daemon: Callable[..., DaemonProcess]
) -> None:
    h = Harness(tmp_path, quick_ws, "claude-code")
    cmds = hook_commands(h.home / ".claude" / "settings.json")
    assert set(cmds) == {"SessionStart", "UserPromptSubmit", "SessionEnd", "PreCompact"}
    d = start_daemon(quick_ws)
    h.port = d.port
    remember(d, "The deploy script lives in tools/deploy.sh and needs the prod AWS profile.", project="webshop")
    common = {
        "session_id": "sess-1",
        "transcript_path": str(tmp_path / "t.jsonl"),
        "cwd": str(h.project),
        "permission_mode": "default",
    }

    cmd, timeout = cmds["SessionStart"]
    res, took = h.run(
        cmd, {**common, "hook_event_name": "SessionStart", "source": "startup", "model": "claude-sonnet-4-5"}, timeout
    )
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)["hookSpecificOutput"]
    assert out["hookEventName"] == "SessionStart"
    ctx = out["additionalContext"]
    assert "# Signet memory" in ctx and "Tester" in ctx and "tools/deploy.sh" in ctx
    assert "(AGENTS.md)" not in ctx, "CLAUDE.md already carries AGENTS.md"
    assert took < timeout

    cmd, timeout = cmds["UserPromptSubmit"]
    res, _ = h.run(
        cmd, {**common, "hook_event_name": "UserPromptSubmit", "prompt": "Where does the deploy script live?"}, timeout
    )
    assert res.returncode == 0, res.stderr
    # Already injected at session start: not again in the same session.
    assert res.stdout.strip() == ""
    res, _ = h.run(
        cmd,
        {
            **common,
            "session_id": "sess-x",
            "hook_event_name": "UserPromptSubmit",
            "prompt": "Where does the deploy script live?",
        },
        timeout,
    )
    out = json.loads(res.stdout)["hookSpecificOutput"]
    assert out["hookEventName"] == "UserPromptSubmit" and "tools/deploy.sh" in out["additionalContext"]
    res, _ = h.run(
        cmd, {**common, "hook_event_name": "UserPromptSubmit", "prompt": "Write a limerick about penguins"}, timeout
    )
    assert res.returncode == 0 and res.stdout.strip() == ""

    transcript = tmp_path / "t.jsonl"
    claude_transcript(transcript, "sess-1", h.project)
    cmd, timeout = cmds["SessionEnd"]
    res, _ = h.run(cmd, {**common, "hook_event_name": "SessionEnd", "reason": "prompt_input_exit"}, timeout)
    assert res.returncode == 0 and res.stdout == "", res.stderr
    kept = quick_ws.root / "memory" / "claude-code" / "transcripts" / "sess-1.jsonl"
    turns = [json.loads(line) for line in kept.read_text().splitlines()]
    assert [t["role"] for t in turns] == ["user", "assistant"]
    text = json.dumps(turns)
    assert "discount code" in text and "apply_discount" in text
    assert "RAW TOOL OUTPUT" not in text and "chain of thought" not in text and "meta" not in text
    assert turns[0]["timestamp"].startswith("2025-06-01T09:00:00")

    res, _ = h.run(
        cmds["SessionStart"][0],
        {**common, "session_id": "sess-2", "hook_event_name": "SessionStart", "source": "startup"},
        cmds["SessionStart"][1],
    )
    ctx = json.loads(res.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "## Last session" in ctx and "apply_discount" in ctx

    cmd, timeout = cmds["PreCompact"]
    res, _ = h.run(
        cmd, {**common, "hook_event_name": "PreCompact", "trigger": "manual", "custom_instructions": ""}, timeout
    )
    assert res.returncode == 0 and "decisions" in res.stdout

    # The daemon goes away: every hook still answers at once, exit 0.
    d.stop()
    cmd, timeout = cmds["SessionStart"]
    res, took = h.run(
        cmd, {**common, "session_id": "sess-3", "hook_event_name": "SessionStart", "source": "startup"}, timeout
    )
    assert res.returncode == 0 and took < 5
    ctx = json.loads(res.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "Tester" in ctx and "## About the user (USER.md)" in ctx
    assert "not reachable" not in ctx and "not reachable" in res.stderr  # told to the user, not the model
    res, took = h.run(
        cmds["UserPromptSubmit"][0],
        {**common, "hook_event_name": "UserPromptSubmit", "prompt": "Where does the deploy script live?"},
        timeout,
    )
    assert res.returncode == 0 and res.stdout == "" and took < 5
    res, took = h.run(
        cmds["SessionEnd"][0],
        {**common, "session_id": "sess-3", "hook_event_name": "SessionEnd", "reason": "other"},
        timeout,
    )
    assert res.returncode == 0 and took < 5
    assert (quick_ws.root / "memory" / "claude-code" / "transcripts" / "sess-3.jsonl").is_file()
    # Garbage on stdin never breaks the harness either.
    res, _ = h.run(cmds["SessionStart"][0], "{not json", timeout)
    assert res.returncode == 0
    # The session that ended while the daemon was down is stored when it comes back.
    start_daemon(quick_ws)
    from signet.store.database import connect

    conn = connect(quick_ws.database_path(), readonly=True)
    try:
        rows = conn.execute(
            "SELECT role, content FROM transcript_turns WHERE session_key = 'claude-code:sess-3' ORDER BY turn_index"
        ).fetchall()
        jobs = conn.execute(
            "SELECT COUNT(*) FROM memory_jobs WHERE json_extract(payload, '$.session_key') = 'claude-code:sess-3'"
        ).fetchone()[0]
    finally:
        conn.close()
    assert [r[0] for r in rows] == ["user", "assistant"] and "apply_discount" in rows[1][1]
    assert jobs == 1


def codex_rollout(path: Path, session: str, cwd: Path) -> None:
    lines = [
        {
            "timestamp": "2025-07-02T08:00:00.000Z",
            "type": "session_meta",
            "payload": {
                "id": session,
                "timestamp": "2025-07-02T08:00:00.000Z",
                "cwd": str(cwd),
                "originator": "codex_cli_rs",
                "cli_version": "0.50.0",
                "instructions": None,
            },
        },
        {
            "timestamp": "2025-07-02T08:00:00.100Z",
            "type": "response_item",
            "payload": {
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": "<environment_context>cwd</environment_context>"}],
            },
        },
        {
            "timestamp": "2025-07-02T08:00:01.000Z",
            "type": "response_item",
            "payload": {
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": "Rename the Invoice model to Bill."}],
            },
        },
        {
            "timestamp": "2025-07-02T08:00:01.000Z",
            "type": "event_msg",
            "payload": {"type": "user_message", "message": "Rename the Invoice model to Bill.", "kind": "plain"},
        },
        {"timestamp": "2025-07-02T08:00:02.000Z", "type": "turn_context", "payload": {"model": "gpt-5-codex"}},
        {
            "timestamp": "2025-07-02T08:00:03.000Z",
            "type": "response_item",
            "payload": {"type": "reasoning", "summary": [{"type": "summary_text", "text": "thinking"}]},
        },
        {
            "timestamp": "2025-07-02T08:00:04.000Z",
            "type": "response_item",
            "payload": {
                "type": "function_call",
                "name": "shell",
                "arguments": '{"command":["rg","Invoice"]}',
                "call_id": "c1",
            },
        },
        {
            "timestamp": "2025-07-02T08:00:05.000Z",
            "type": "response_item",
            "payload": {"type": "function_call_output", "call_id": "c1", "output": "TOOL OUTPUT"},
        },
        {
            "timestamp": "2025-07-02T08:00:09.000Z",
            "type": "response_item",
            "payload": {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": "Renamed Invoice to Bill in 4 files."}],
            },
        },
    ]
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n")


def test_codex_hooks_json_commands(
    tmp_path: Path, quick_ws: Workspace, start_daemon: Callable[..., DaemonProcess]
) -> None:
    h = Harness(tmp_path, quick_ws, "codex")
    cmds = hook_commands(h.home / ".codex" / "hooks.json")
    assert set(cmds) == {"SessionStart", "UserPromptSubmit", "Stop"}
    d = start_daemon(quick_ws)
    h.port = d.port
    remember(d, "Bill is the new name of the Invoice model.")
    rollout = tmp_path / "rollout-2025-07-02T08-00-00-abc.jsonl"
    codex_rollout(rollout, "abc", h.project)
    common = {"session_id": "abc", "transcript_path": str(rollout), "cwd": str(h.project), "model": "gpt-5-codex"}
    res, _ = h.run(
        cmds["SessionStart"][0],
        {**common, "hook_event_name": "SessionStart", "source": "startup"},
        cmds["SessionStart"][1],
    )
    out = json.loads(res.stdout)["hookSpecificOutput"]
    assert out["hookEventName"] == "SessionStart" and "Invoice model" in out["additionalContext"]
    res, _ = h.run(
        cmds["UserPromptSubmit"][0],
        {
            **common,
            "session_id": "other",
            "turn_id": "t1",
            "hook_event_name": "UserPromptSubmit",
            "prompt": "what is the invoice model called now?",
        },
        cmds["UserPromptSubmit"][1],
    )
    assert "Bill" in json.loads(res.stdout)["hookSpecificOutput"]["additionalContext"]
    for _ in range(2):  # Stop fires after every turn: idempotent
        res, _ = h.run(
            cmds["Stop"][0],
            {
                **common,
                "turn_id": "t1",
                "hook_event_name": "Stop",
                "stop_hook_active": False,
                "last_assistant_message": "Renamed",
            },
            cmds["Stop"][1],
        )
        assert res.returncode == 0 and res.stdout == "", res.stderr
    kept = quick_ws.root / "memory" / "codex" / "transcripts" / "abc.jsonl"
    turns = [json.loads(line) for line in kept.read_text().splitlines()]
    assert [(t["role"], t["content"]) for t in turns] == [
        ("user", "Rename the Invoice model to Bill."),
        ("assistant", "Renamed Invoice to Bill in 4 files."),
    ]
    d.stop()
    res, took = h.run(
        cmds["SessionStart"][0],
        {**common, "hook_event_name": "SessionStart", "source": "resume"},
        cmds["SessionStart"][1],
    )
    assert res.returncode == 0 and took < 5
    assert "# Signet memory" in json.loads(res.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "not reachable" in res.stderr


def test_opencode_and_openclaw_commands(
    tmp_path: Path, quick_ws: Workspace, start_daemon: Callable[..., DaemonProcess]
) -> None:
    h = Harness(tmp_path, quick_ws, "opencode")
    plugin = (h.home / ".config/opencode/plugins/signet.js").read_text()
    argv = json.loads(plugin.split("const SIGNET = ", 1)[1].split(";", 1)[0])
    d = start_daemon(quick_ws)
    h.port = d.port
    remember(d, "Staging runs on port 8443 behind the VPN.")
    base = " ".join(shlex.quote(a) for a in argv)
    res, _ = h.run(f"{base} hook session-start --harness opencode", {"session_id": "oc1", "cwd": str(h.project)}, 15)
    assert res.stdout.startswith("# Signet memory") and "8443" in res.stdout  # plain text for the plugin
    res, _ = h.run(
        f"{base} hook session-end --harness opencode",
        {
            "session_id": "oc1",
            "cwd": str(h.project),
            "turns": [
                {"role": "user", "content": "open the staging dashboard", "timestamp": "2025-08-01T10:00:00.000Z"},
                {"role": "assistant", "content": "It is at https://staging:8443", "timestamp": None},
            ],
        },
        30,
    )
    assert res.returncode == 0, res.stderr
    assert (quick_ws.root / "memory" / "opencode" / "transcripts" / "oc1.jsonl").is_file()

    node = shutil.which("node")
    if node is None:
        return
    claw = Harness(tmp_path / "claw", quick_ws, "openclaw")
    claw.port = d.port
    handler = claw.home / ".openclaw/hooks/signet-memory/handler.js"
    session_file = tmp_path / "claw-session.jsonl"
    session_file.write_text(
        "\n".join(
            json.dumps(x)
            for x in [
                {"type": "session", "version": 3, "id": "cs1", "timestamp": "2025-09-01T12:00:00.000Z", "cwd": "/w"},
                {
                    "type": "message",
                    "id": "m1",
                    "parentId": None,
                    "timestamp": "2025-09-01T12:00:01.000Z",
                    "message": {"role": "user", "content": [{"type": "text", "text": "book the dentist for Friday"}]},
                },
                {
                    "type": "message",
                    "id": "m2",
                    "parentId": "m1",
                    "timestamp": "2025-09-01T12:00:05.000Z",
                    "message": {
                        "role": "assistant",
                        "content": [
                            {"type": "thinking", "thinking": "hmm"},
                            {"type": "text", "text": "Booked for Friday 9:00."},
                        ],
                    },
                },
            ]
        )
        + "\n"
    )
    script = tmp_path / "drive.mjs"
    script.write_text(f"""
import handler from {json.dumps(handler.as_uri())};
const boot = {{ type: "agent", action: "bootstrap", sessionKey: "agent:main:main",
               context: {{ workspaceDir: {json.dumps(str(h.project))}, bootstrapFiles: [] }} }};
await handler(boot);
await handler({{ type: "command", action: "new", sessionKey: "agent:main:main",
                 context: {{ workspaceDir: "/w", previousSessionEntry: {{ sessionId: "cs1",
                                                                        sessionFile: {json.dumps(str(session_file))} }} }} }});
console.log(JSON.stringify(boot.context.bootstrapFiles));
""")
    res = subprocess.run([node, str(script)], capture_output=True, text=True, env=claw.env(), timeout=60)
    assert res.returncode == 0, res.stderr
    files = json.loads(res.stdout)
    assert files[0]["name"] == "SIGNET.md" and "8443" in files[0]["content"]
    kept = quick_ws.root / "memory" / "openclaw" / "transcripts" / "cs1.jsonl"
    assert [json.loads(x)["content"] for x in kept.read_text().splitlines()] == [
        "book the dentist for Friday",
        "Booked for Friday 9:00.",
    ]


def test_claude_code_compaction_summary_is_saved(
    tmp_path: Path, quick_ws: Workspace, start_daemon: Callable[..., DaemonProcess]
) -> None:
    h = Harness(tmp_path, quick_ws, "claude-code")
    cmds = hook_commands(h.home / ".claude" / "settings.json")
    d = start_daemon(quick_ws)
    h.port = d.port
    transcript = tmp_path / "t.jsonl"
    claude_transcript(transcript, "sess-c", h.project)
    with transcript.open("a") as fh:
        fh.write(
            json.dumps(
                {
                    "type": "user",
                    "sessionId": "sess-c",
                    "parentUuid": None,
                    "isCompactSummary": True,
                    "timestamp": "2025-06-01T10:00:00.000Z",
                    "message": {
                        "role": "user",
                        "content": "This session is being continued. Summary: the flaky "
                        "checkout test was caused by a timezone bug.",
                    },
                }
            )
            + "\n"
        )
    common = {"session_id": "sess-c", "transcript_path": str(transcript), "cwd": str(h.project)}
    res, _ = h.run(
        cmds["SessionStart"][0],
        {**common, "hook_event_name": "SessionStart", "source": "compact"},
        cmds["SessionStart"][1],
    )
    assert res.returncode == 0 and "hookSpecificOutput" in res.stdout, res.stderr
    found = httpx.post(f"{d.url}/api/hooks/recall", json={"query": "flaky checkout timezone"}, timeout=30).json()
    assert found["results"] and "timezone bug" in found["results"][0]["content"]
    assert "compaction" in found["results"][0]["tags"]


def test_hook_answers_within_its_timeout_when_the_daemon_hangs(tmp_path: Path, quick_ws: Workspace) -> None:
    import socket

    h = Harness(tmp_path, quick_ws, "claude-code")
    cmds = hook_commands(h.home / ".claude" / "settings.json")
    with socket.socket() as srv:  # accepts connections (backlog) and never answers
        srv.bind(("127.0.0.1", 0))
        srv.listen(16)
        h.port = srv.getsockname()[1]
        cmd, timeout = cmds["UserPromptSubmit"]
        res, took = h.run(
            cmd,
            {"session_id": "h", "cwd": str(h.project), "hook_event_name": "UserPromptSubmit", "prompt": "anything"},
            timeout,
        )
    assert res.returncode == 0 and res.stdout == ""
    assert took < timeout, f"took {took:.1f}s, the harness gives {timeout}s"
    assert "not reachable" in res.stderr
