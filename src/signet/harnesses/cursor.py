"""Cursor: an always-applied rule ``signet.mdc`` (in ``~/.cursor/rules/``, or in the
project's ``.cursor/rules/`` with ``--project``) generated from AGENTS.md, and the MCP
server under ``mcpServers.signet`` in ``~/.cursor/mcp.json``.

Cursor has no session hooks Signet uses: memories reach it through the MCP tools.
"""

from __future__ import annotations

from signet.harnesses.base import Harness, InstallContext, del_key, set_key
from signet.harnesses.merge import Edit, JsonEdit, JsonObj, OwnedFile

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
        server = {"command": ctx.signet[0], "args": [*ctx.signet[1:], "mcp"]}

        def add(obj: JsonObj) -> None:
            set_key(obj, ("mcpServers", "signet"), server)

        def strip(obj: JsonObj) -> None:
            del_key(obj, ("mcpServers", "signet"))

        return [
            *self.instruction_edits(ctx),
            JsonEdit(ctx.home / ".cursor" / "mcp.json", "json", "MCP server 'signet'", add=add, strip=strip),
        ]

    def instruction_edits(self, ctx: InstallContext) -> list[Edit]:
        base = ctx.project if ctx.project is not None else ctx.home
        content = RULE.format(marker=MARKER, body=ctx.instructions())
        return [OwnedFile(base / ".cursor" / "rules" / "signet.mdc", "owned", "always-applied rule",
                          content=content, marker=MARKER)]


HARNESS = Cursor()
