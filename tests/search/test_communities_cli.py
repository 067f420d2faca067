"""``signet knowledge communities [--refresh]`` and the SDK's community methods against a real
daemon (a subprocess, the real CLI)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable

import pytest

from signet.errors import NotFound
from signet.sdk import SignetClient
from signet.workspace import Workspace
from tests.conftest import DaemonProcess
from tests.search.test_communities import DEFAULT_TEXTS, FERRIES, PAYMENTS

pytestmark = pytest.mark.slow


def cli(d: DaemonProcess, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "SIGNET_WORKSPACE": str(d.workspace.root), "SIGNET_PORT": str(d.port)}
    return subprocess.run(
        [sys.executable, "-m", "signet.cli.entry", "knowledge", "communities", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )


def test_cli_and_sdk(make_workspace: Callable[..., Workspace], start_daemon: Callable[..., DaemonProcess]) -> None:
    d = start_daemon(make_workspace("none"))
    with d.client() as c:
        for text in DEFAULT_TEXTS:
            assert c.post("/api/memory/remember", json={"content": text}).status_code == 200

    before = cli(d)
    assert before.returncode == 0, before.stderr
    assert before.stdout.strip() == (
        "no communities for agent default yet: `signet knowledge communities --refresh` computes them"
    )
    refreshed = cli(d, "--refresh", "--members", "2")
    assert refreshed.returncode == 0, refreshed.stderr
    assert refreshed.stderr.startswith("computed 2 communities of 6 of 6 entities (6 edges) in ")
    lines = refreshed.stdout.splitlines()
    assert lines[0].startswith("2 communities of agent default, computed ")
    assert len(lines) == 3 and all("     3  strong" in line and line.endswith("(+1)") for line in lines[1:])
    as_json = json.loads(cli(d, "--json").stdout)
    assert {frozenset(m["name"] for m in x["members"]) for x in as_json["communities"]} == {
        frozenset(PAYMENTS),
        frozenset(FERRIES),
    }
    bad = cli(d, "--limit", "0")
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1

    with SignetClient(d.url) as sdk:
        listed = sdk.knowledge_communities(members=1)
        assert listed.total == 2 and all(len(x.members) == 1 for x in listed.communities)
        one = sdk.knowledge_community(listed.communities[0].id, limit=2)
        assert one.members_total == 3 and len(one.members) == 2 and one.agent_id == "default"
        again = sdk.refresh_communities()
        assert listed.computed_at is not None and again.computed_at > listed.computed_at
        assert again.communities == 2
        with pytest.raises(NotFound, match="no community"):
            sdk.knowledge_community("nope")
