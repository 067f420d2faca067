"""Cursor: an always-applied rule ``signet.mdc`` (in ``~/.cursor/rules/``, or in the
project's ``.cursor/rules/`` with ``--project``) generated from AGENTS.md, and the MCP
server under ``mcpServers.signet`` in ``~/.cursor/mcp.json``.

Cursor has no session hooks Signet uses: memories reach it through the MCP tools.
"""

from __future__ import annotations

from signet.harnesses.base import Harness, InstallContext, mcp_server_edit, stdio_server
from signet.harnesses.merge import Edit, OwnedFile

NAME = "cursor"
MARKER = "signet: managed by `signet install cursor`"

RULE = """---
description: Signet memory and agent identity (generated from AGENTS.md)
alwaysApply: true
---
<!-- {marker} -->

{body}
"""


class Cursor(Harness):
    name = NAME
    display_name = "Cursor"

    def edits(self, ctx: InstallContext) -> list[Edit]:
        mcp = mcp_server_edit(
            ctx.home / ".cursor" / "mcp.json", ("mcpServers", "signet"), stdio_server(ctx), "MCP server 'signet'"
        )
        return [*self.instruction_edits(ctx), mcp]

    def instruction_edits(self, ctx: InstallContext) -> list[Edit]:
        base = ctx.project if ctx.project is not None else ctx.home
        content = RULE.format(marker=MARKER, body=ctx.instructions())
        scope = (
            "always-applied rule for this project"
            if ctx.project is not None
            else "always-applied rule for every project, user level; `--project DIR` writes one project's rule"
        )
        return [
            OwnedFile(
                base / ".cursor" / "rules" / "signet.mdc",
                "owned",
                scope,
                content=content,
                marker=MARKER,
            )
        ]


HARNESS = Cursor()
