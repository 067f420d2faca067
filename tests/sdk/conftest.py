"""One real daemon for the SDK tests (embedding provider ``none``; short tombstone window so
recovery can expire within a test; a low confirm threshold so batch forgets need a token)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from signet.workspace import Workspace, setup_workspace
from tests.conftest import DaemonProcess, launch_daemon, write_config

TOMBSTONE_SECONDS = 3.0


@pytest.fixture(scope="module")
def sdk_daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DaemonProcess]:
    ws = Workspace(tmp_path_factory.mktemp("sdk") / "ws")
    setup_workspace(ws, agent_name="test-agent", user_name="Tester", embedding_provider="none")
    write_config(
        ws,
        memory={"pipelineV2": {"enabled": False}, "forget_confirm_threshold": 2},
        retention={"tombstone_days": TOMBSTONE_SECONDS / 86400},
    )
    d = launch_daemon(ws)
    yield d
    d.stop()
