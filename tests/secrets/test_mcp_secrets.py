"""The MCP tools ``secret_list`` and ``secret_exec`` with the official client, on both
transports (``signet mcp`` over stdio and the daemon's ``/mcp``), against a real daemon."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from mcp import Client

from signet.errors import InvalidRequest, NotFound
from signet.sdk import SignetClient
from tests.conftest import DaemonProcess, launch_daemon, write_config
from tests.mcp.conftest import quiet_workspace, run, stdio_params
from tests.secrets.conftest import VALUE, assert_hidden, cli


@pytest.fixture(scope="module")
def secrets_daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DaemonProcess]:
    ws = quiet_workspace(tmp_path_factory.mktemp("mcp-secrets") / "ws")
    write_config(ws, secrets={"exec": {"allow": ["sh"]}})
    assert cli(ws, "secret", "put", "TOKEN", input=VALUE).returncode == 0
    d = launch_daemon(ws)
    yield d
    d.stop()


@pytest.fixture(params=["stdio", "http"])
def target(request: pytest.FixtureRequest, secrets_daemon: DaemonProcess) -> Any:
    if request.param == "http":
        return f"{secrets_daemon.url}/mcp"
    return stdio_params(secrets_daemon.workspace, secrets_daemon.port)


def test_secret_tools(target: Any) -> None:
    async def scenario() -> None:
        async with Client(target) as c:
            tools = {t.name: t for t in (await c.list_tools()).tools}
            assert tools["secret_list"].annotations.read_only_hint is True  # type: ignore[union-attr]
            assert set(tools["secret_exec"].input_schema["required"]) == {"command", "secrets"}
            assert tools["secret_exec"].input_schema["properties"]["secrets"]["items"]["pattern"]

            listed = await c.call_tool("secret_list", {})
            assert not listed.is_error and listed.structured_content is not None
            assert [s["name"] for s in listed.structured_content["secrets"]] == ["TOKEN"]

            ran = await c.call_tool(
                "secret_exec", {"command": ["sh", "-c", "echo $TOKEN; echo $TOKEN | base64"], "secrets": ["TOKEN"]}
            )
            assert not ran.is_error and ran.structured_content is not None, ran.content
            assert ran.structured_content["status"] == "done"
            assert ran.structured_content["stdout"].count("[REDACTED:TOKEN]") == 2
            assert_hidden(str(ran.content) + str(ran.structured_content), "the MCP result")

            refused = await c.call_tool("secret_exec", {"command": ["python3", "-c", "1"], "secrets": ["TOKEN"]})
            text = refused.content[0].text  # type: ignore[union-attr]
            assert refused.is_error and "[command_not_allowed]" in text and "\n" not in text
            bad = await c.call_tool("secret_exec", {"command": ["sh"], "secrets": ["not a name"]})
            assert bad.is_error and "[invalid_request]" in bad.content[0].text  # type: ignore[union-attr]

    run(scenario())


def test_sdk_secret_calls(secrets_daemon: DaemonProcess) -> None:
    """The SDK methods the tools use, and ``secret_run`` to poll a queued run."""
    with SignetClient(secrets_daemon.url) as client:
        assert [s.name for s in client.secrets().secrets] == ["TOKEN"]
        queued = client.secret_exec(["sh", "-c", "sleep 0.2; echo $TOKEN"], secrets=["TOKEN"])
        assert queued.status in ("queued", "running")
        deadline = time.monotonic() + 30
        run = client.secret_run(queued.id)
        while run.status in ("queued", "running") and time.monotonic() < deadline:
            time.sleep(0.05)
            run = client.secret_run(queued.id)
        assert run.status == "done" and run.stdout == "[REDACTED:TOKEN]\n"
        with pytest.raises(NotFound):
            client.secret_run("no-such-run")
        with pytest.raises(InvalidRequest):
            client.secret_exec([], secrets=["TOKEN"])  # checked locally, with the API's model
