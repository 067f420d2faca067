"""The clients against a real team-mode daemon: the SDK and the CLI send SIGNET_TOKEN and
map 401/403/429 to their typed errors; project-scoped writes land in the token's project."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable

import pytest

from signet.errors import Forbidden, RateLimited, Unauthorized
from signet.sdk import SignetClient
from signet.workspace import Workspace
from tests.auth.conftest import configure, token_for
from tests.conftest import DaemonProcess


def test_sdk_and_cli_in_team_mode(
    make_workspace: Callable[..., Workspace], start_daemon: Callable[..., DaemonProcess]
) -> None:
    ws = configure(
        make_workspace(embedding="none", memory={"pipelineV2": {"enabled": False}}),
        "team",
        rateLimits={"windowSeconds": 600, "operations": {"remember": 3}},
    )
    d = start_daemon(ws)
    writer = token_for(ws, "agent", sub="writer", project="web")
    with SignetClient(d.url, token=writer) as c:
        got = c.remember("the web project uses htmx")
        assert c.get(got.id).project == "web"  # filled in from the token's scope
        with pytest.raises(Forbidden):
            c.remember("into another project", project="api")
        c.remember("second")
        c.remember("third")
        with pytest.raises(RateLimited) as info:
            c.remember("fourth")
        assert 1 <= info.value.retry_after <= 600
    with SignetClient(d.url, token="") as anon, pytest.raises(Unauthorized):
        anon.list()
    with SignetClient(d.url, token=token_for(ws, "readonly", sub="r")) as ro:
        assert sorted(m.content for m in ro.list().items) == ["second", "the web project uses htmx", "third"]
        with pytest.raises(Forbidden):
            ro.remember("nope")
    env = {**os.environ, "SIGNET_WORKSPACE": str(ws.root), "SIGNET_PORT": str(d.port)}
    cli = [sys.executable, "-m", "signet.cli.entry", "recall", "htmx", "--json"]
    denied = subprocess.run(cli, capture_output=True, text=True, timeout=60, env={**env, "SIGNET_TOKEN": ""})
    assert denied.returncode == 1 and "authentication required" in denied.stderr
    ok = subprocess.run(cli, capture_output=True, text=True, timeout=60, env={**env, "SIGNET_TOKEN": writer})
    assert ok.returncode == 0 and "htmx" in ok.stdout, ok.stderr
