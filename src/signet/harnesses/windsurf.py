"""Windsurf: a Signet block in the global rules file
``~/.codeium/windsurf/memories/global_rules.md`` (or ``.windsurf/rules/signet.md`` in a
project with ``--project``), generated from AGENTS.md, and the MCP server under
``mcpServers.signet`` in ``~/.codeium/windsurf/mcp_config.json``.

Windsurf caps the global rules file (6,000 characters); the generated block is cut to fit.
"""

from __future__ import annotations

from signet.harnesses.base import Harness, InstallContext, mcp_server_edit, stdio_server
from signet.harnesses.merge import BlockEdit, Edit, OwnedFile

NAME = "windsurf"
MD_BEGIN = "<!-- signet:begin -->"
MD_END = "<!-- signet:end -->"
MARKER = "signet: managed by `signet install windsurf`"
GLOBAL_RULES_LIMIT = 6000
BLOCK_LIMIT = 4500
"""Room left for the user's own global rules."""

PROJECT_RULE = """---
trigger: always_on
---
<!-- {marker} -->

{body}
"""


class Windsurf(Harness):
    name = NAME
    display_name = "Windsurf"

    def edits(self, ctx: InstallContext) -> list[Edit]:
        config = ctx.home / ".codeium" / "windsurf" / "mcp_config.json"
        mcp = mcp_server_edit(config, ("mcpServers", "signet"), stdio_server(ctx), "MCP server 'signet'")
        return [*self.instruction_edits(ctx), mcp]

    def instruction_edits(self, ctx: InstallContext) -> list[Edit]:
        if ctx.project is not None:
            content = PROJECT_RULE.format(marker=MARKER, body=ctx.instructions(limit=BLOCK_LIMIT))
            return [
                OwnedFile(
                    ctx.project / ".windsurf" / "rules" / "signet.md",
                    "owned",
                    "always-on rule for this workspace",
                    content=content,
                    marker=MARKER,
                )
            ]
        return [
            BlockEdit(
                ctx.home / ".codeium" / "windsurf" / "memories" / "global_rules.md",
                "markdown",
                "global rules block for every workspace; `--project DIR` writes one workspace's rule",
                begin=MD_BEGIN,
                end=MD_END,
                body=ctx.instructions(limit=BLOCK_LIMIT),
            )
        ]


HARNESS = Windsurf()
