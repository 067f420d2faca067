"""The OpenCode plugin the installer writes, run in node the way OpenCode calls it, against a
real daemon: the session's memory is in the system prompt of every model call of every turn,
not only the first (OpenCode rebuilds the system prompt for each call)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from signet.workspace import Workspace
from tests.conftest import DaemonProcess

pytestmark = pytest.mark.slow

DRIVER = Path(__file__).with_name("opencode_turns.mjs")
NODE = shutil.which("node")


@pytest.mark.skipif(NODE is None, reason="node is not installed (CI installs it in .ci/run)")
def test_context_reaches_every_turns_system_prompt(
    tmp_path: Path, make_workspace: Callable[..., Workspace], start_daemon: Callable[..., DaemonProcess]
) -> None:
    assert NODE is not None
    # Keyword recall (the daemon is up in a second); one memory at session start, so the
    # other one can only arrive through the prompt's own recall.
    ws = make_workspace(embedding="none", hooks={"session_memories": 1})
    home, project = tmp_path / "home", tmp_path / "projects" / "webshop"
    project.mkdir(parents=True)
    d = start_daemon(ws)
    env = {
        **os.environ,
        "HOME": str(home),
        "SIGNET_WORKSPACE": str(ws.root),
        "SIGNET_HOST": "127.0.0.1",
        "SIGNET_PORT": str(d.port),
    }
    res = subprocess.run(
        [sys.executable, "-m", "signet.cli.entry", "install", "opencode"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert res.returncode == 0, res.stderr
    plugin = home / ".config/opencode/plugins/signet.js"
    for content in ("The invoice PDFs are rendered by weasyprint.", "Staging runs on port 8443 behind the VPN."):
        r = httpx.post(f"{d.url}/api/memory/remember", json={"content": content}, timeout=30)
        assert r.status_code == 200, r.text

    prompts = ["hello, where were we?", "fix the invoice PDFs rendering with weasyprint", "thanks, commit it"]
    run = subprocess.run(
        [NODE, str(DRIVER), str(plugin), str(project), "ses_oc3", json.dumps(prompts)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    turns = json.loads(run.stdout)["turns"]
    assert [t["prompt"] for t in turns] == prompts

    first_start = turns[0]["systems"][0][1]
    assert first_start.startswith("# Signet memory") and "8443" in first_start
    assert "weasyprint" not in first_start
    for n, turn in enumerate(turns, 1):
        for call, system in enumerate(turn["systems"], 1):
            # OpenCode's own prompt first, untouched; then the session's context, on every call.
            assert system[0] == "You are opencode, an interactive CLI coding agent.", (n, call, system)
            assert system[1] == first_start, f"turn {n}, call {call}: session context missing: {system}"
    # The prompt about invoices recalls that memory for that turn only.
    assert any("weasyprint" in s for s in turns[1]["systems"][0][2:]), turns[1]["systems"][0]
    assert not any("weasyprint" in s for s in turns[2]["systems"][0][2:]), turns[2]["systems"][0]

    # Each idle event handed the session so far to Signet: after the third, all six turns.
    kept = ws.root / "memory" / "opencode" / "transcripts" / "ses_oc3.jsonl"
    lines = [json.loads(x) for x in kept.read_text().splitlines()]
    assert [x["content"] for x in lines] == [prompts[0], "Answer 1.", prompts[1], "Answer 2.", prompts[2], "Answer 3."]
