"""``signet mcp``: the MCP server over stdio, for harness configs (Claude Code, Codex, Cursor…)."""

from __future__ import annotations

from typing import Annotated

import typer

from signet.address import base_url
from signet.cli.app import app


@app.command("mcp")
def mcp_command(
    url: Annotated[
        str | None,
        typer.Option("--url", help="Daemon URL (default: SIGNET_HOST/SIGNET_PORT, agent.yaml, http://127.0.0.1:3850)."),
    ] = None,
    token: Annotated[
        str | None, typer.Option("--token", envvar="SIGNET_TOKEN", help="Bearer token for a daemon in team mode.")
    ] = None,
    start_daemon: Annotated[
        bool,
        typer.Option("--start-daemon", envvar="SIGNET_MCP_START_DAEMON", help="Start the daemon if it is not running."),
    ] = False,
    timeout: Annotated[float, typer.Option(help="Seconds to wait for each daemon call.", min=0.1)] = 30.0,
    agent: Annotated[
        str | None,
        typer.Option(
            "--agent",
            envvar="SIGNET_AGENT",
            help="Act as this agent: memories are stored under it and reads follow its roster read policy "
            "(sent as X-Signet-Agent; when the daemon authenticates a token, the token's scope decides).",
        ),
    ] = None,
) -> None:
    """Run the MCP server over stdio; its tools call the running daemon (start it with `signet start`)."""
    from signet.mcp.stdio import serve_stdio
    from signet.workspace import Workspace

    serve_stdio(
        url or base_url(),
        token=token,
        start_daemon=start_daemon,
        workspace_root=Workspace.from_env().root,
        timeout=timeout,
        agent=_agent_name(agent),
    )


def _agent_name(agent: str | None) -> str | None:
    """The agent name, checked by the roster's own rule so a typo fails at start, not per call.

    An empty value (``SIGNET_AGENT=``) means no agent, like leaving the option out.
    """
    if not agent:
        return None
    from pydantic import ValidationError

    from signet.config import AgentEntry

    try:
        return AgentEntry(name=agent).name
    except ValidationError:
        raise typer.BadParameter(
            "an agent name is 1-200 letters, digits, '_', '.' or '-'", param_hint="--agent"
        ) from None
