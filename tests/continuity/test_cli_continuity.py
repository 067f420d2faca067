"""``signet checkpoints`` and ``signet summaries`` in a subprocess against a real daemon whose
LLM is the fake server (so a session's summary file is really written), and the SDK's
``continuity.remove_summaries`` on a real summary. Bad input: exit 1 (2 for usage), one line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from signet.errors import NotFound
from signet.sdk import SignetClient
from signet.workspace import Workspace
from tests.conftest import DaemonProcess, free_port
from tests.continuity.conftest import wait_for

TURNS = [
    {"role": "user", "content": "The login test in acme is flaky, please fix it"},
    {"role": "assistant", "content": "Fixed the login test: the pytest fixture raced the server"},
    {"role": "user", "content": "Great, next we ship release 2.4"},
]


def cli(ws: Workspace, port: int, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "SIGNET_WORKSPACE": str(ws.root), "SIGNET_PORT": str(port), "COLUMNS": "200"}
    env.pop("SIGNET_TOKEN", None)
    return subprocess.run(
        [sys.executable, "-m", "signet.cli.entry", *args], capture_output=True, text=True, env=env, timeout=120
    )


def one_line_error(proc: subprocess.CompletedProcess[str], code: int = 1) -> str:
    assert proc.returncode == code, (proc.returncode, proc.stdout, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), proc.stderr
    return lines[0]


def summaries(ws: Workspace) -> list[Path]:
    return sorted((ws.root / "memory").glob("*--summary.md"))


def test_checkpoints_and_summaries_cli(
    continuity_ws: Callable[..., Workspace], start_daemon: Callable[..., DaemonProcess]
) -> None:
    ws = continuity_ws()
    d = start_daemon(ws)
    with SignetClient(d.url) as c:
        c.session_end("s1", harness="claude-code", project="acme", turns=TURNS)
        c.session_end("s2", harness="codex", project="other", turns=TURNS)
        wait_for(lambda: len(summaries(ws)) == 2, timeout=30, what="two summary files")

    # checkpoints: all, one project, one session; table and JSON
    every = json.loads(cli(ws, d.port, "checkpoints", "--json").stdout)
    assert {c["session_key"] for c in every["checkpoints"]} == {"claude-code:s1", "codex:s2"}
    acme = json.loads(cli(ws, d.port, "checkpoints", "--project", "acme", "--json").stdout)
    assert {c["session_key"] for c in acme["checkpoints"]} == {"claude-code:s1"}
    table = cli(ws, d.port, "checkpoints", "claude-code:s1")
    assert table.returncode == 0 and "claude-code:s1" in table.stdout and "session_end" in table.stdout
    assert "codex:s2" not in table.stdout
    full = cli(ws, d.port, "checkpoints", "codex:s2", "--full")
    assert full.returncode == 0 and "release 2.4" in full.stdout
    empty = cli(ws, d.port, "checkpoints", "--project", "nowhere")
    assert empty.returncode == 0 and "no checkpoints yet" in empty.stdout

    # summaries: listed from the files, newest first, then one removed through the daemon
    listed = json.loads(cli(ws, d.port, "summaries", "list", "--json").stdout)
    assert sorted(s["session_key"] for s in listed) == ["claude-code:s1", "codex:s2"]
    shown = cli(ws, d.port, "summaries", "list")
    assert shown.returncode == 0 and listed[0]["session_token"] in shown.stdout
    by_key = {s["session_key"]: s for s in listed}
    gone = cli(ws, d.port, "summaries", "rm", by_key["claude-code:s1"]["session_token"], "--reason", "privacy")
    assert gone.returncode == 0, gone.stderr
    assert f"removed {by_key['claude-code:s1']['path']}" in gone.stdout
    assert [p.name for p in summaries(ws)] == [Path(by_key["codex:s2"]["path"]).name]
    again = one_line_error(cli(ws, d.port, "summaries", "rm", by_key["claude-code:s1"]["session_token"]))
    assert "no summaries" in again

    # the SDK removes the other one
    with SignetClient(d.url) as c:
        out = c.continuity.remove_summaries(by_key["codex:s2"]["session_token"], reason="sdk")
        assert out.removed_paths == [by_key["codex:s2"]["path"]]
        assert out.session_token == by_key["codex:s2"]["session_token"]
        try:
            c.continuity.remove_summaries(by_key["codex:s2"]["session_token"])
            raise AssertionError("a removed session's summaries were removed twice")
        except NotFound:
            pass
    assert summaries(ws) == []
    assert json.loads(cli(ws, d.port, "summaries", "list", "--json").stdout) == []

    # bad input: one readable line, non-zero exit
    assert "no checkpoints for session" in one_line_error(cli(ws, d.port, "checkpoints", "claude-code:never"))
    assert "--limit" in one_line_error(cli(ws, d.port, "checkpoints", "--limit", "0"))
    assert "not both" in one_line_error(cli(ws, d.port, "checkpoints", "a:b", "--project", "p"))
    assert "not a session token" in one_line_error(cli(ws, d.port, "summaries", "rm", "../../etc/passwd"))
    assert "agent_id" in one_line_error(cli(ws, d.port, "summaries", "rm", "0123456789abcdef", "--agent", ""))
    one_line_error(cli(ws, d.port, "summaries", "rm"), code=2)
    one_line_error(cli(ws, d.port, "summaries", "list", "--limit", "0"))
    down = one_line_error(cli(ws, free_port(), "checkpoints"))
    assert "not running" in down or "another workspace" in down
