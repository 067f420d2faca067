"""The lifecycle on the other surfaces, against one real daemon: the MCP ``memory_forget``
tool's ``persist`` and the ``signet`` commands (forget --persist, remember, unretire, split,
signals)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import pytest
from mcp import Client

from signet.workspace import Workspace
from tests.conftest import DaemonProcess
from tests.lifecycle.paraphrases import FACTS
from tests.mcp.conftest import run


def cli(d: DaemonProcess, *args: str, ok: bool = True) -> str:
    env = {
        **os.environ,
        "SIGNET_WORKSPACE": str(d.workspace.root),
        "SIGNET_PORT": str(d.port),
        "SIGNET_HOST": "127.0.0.1",
        "COLUMNS": "200",
    }
    res = subprocess.run(
        [sys.executable, "-m", "signet.cli.entry", *args], capture_output=True, text=True, env=env, timeout=120
    )
    assert (res.returncode == 0) == ok, res.stdout + res.stderr
    return res.stdout + res.stderr


@pytest.mark.slow
def test_mcp_and_cli_surfaces(
    make_workspace: Callable[..., Workspace], start_daemon: Callable[..., DaemonProcess]
) -> None:
    d = start_daemon(make_workspace(memory={"reinforce": {"enabled": True, "threshold": 0.75}}))
    d.wait_embedder()

    async def forget_over_mcp() -> dict[str, Any]:
        async with Client(f"{d.url}/mcp") as c:
            stored = await c.call_tool("memory_store", {"content": "The VPN config lives in ~/vpn/office.ovpn"})
            assert stored.structured_content is not None
            mid = str(stored.structured_content["id"])
            r = await c.call_tool("memory_forget", {"id": mid, "reason": "wrong path", "persist": True})
            assert not r.is_error and r.structured_content is not None, r.content
            out: dict[str, Any] = {"id": mid, **r.structured_content}
            return out

    gone = run(forget_over_mcp())
    assert gone["retired"] == [gone["id"]]
    said = cli(d, "remember", "The VPN config lives in ~/vpn/office.ovpn")
    assert said.startswith("not stored: this text was retired") and gone["id"] in said
    assert f"unretired {gone['id']}" in cli(d, "unretire", gone["id"][:8], "--reason", "right after all")
    assert cli(d, "remember", "The VPN config lives in ~/vpn/office.ovpn").startswith("remembered ")

    first = cli(d, "remember", FACTS[2][0], "--type", "fact").split()[1]
    again = cli(d, "remember", FACTS[2][1], "--type", "fact")
    assert again.startswith(f"reinforced {first}") and "1 confirmations" in again
    with d.client() as api:
        events = api.get(f"/api/memory/{first}/history").json()["events"]
    event = next(e["id"] for e in events if e["event"] == "reinforced")
    split = cli(d, "split", first[:8], event, "--reason", "another fact")
    assert split.startswith("split ") and f"out of {first}" in split and "0 confirmations left" in split
    assert "already" in cli(d, "split", first, event, "--reason", "twice", ok=False)

    target = cli(d, "remember", "critical: the release freeze starts Thursday 18:00").split()[1]
    listed = cli(d, "signals", "ci-bot", "--ack")
    assert target[:8] in listed and "acknowledged up to" in listed
    assert "no new signals" in cli(d, "signals", "ci-bot")
    forgot = cli(d, "forget", target, "--reason", "cancelled", "--persist", "--yes")
    assert "1 retired for good" in forgot
