"""Codex: hooks in ``~/.codex/hooks.json``, the MCP server as ``[mcp_servers.signet]`` in
``~/.codex/config.toml``, and ``~/.codex/AGENTS.md`` generated from AGENTS.md.

Codex's hooks.json has Claude Code's shape (event -> matcher groups -> command handlers,
``timeout`` in seconds). Inputs carry ``session_id``, ``transcript_path``, ``cwd``,
``hook_event_name``, ``model``, plus ``source`` (SessionStart) and ``prompt``
(UserPromptSubmit). Codex has no session-end event: ``Stop`` fires after each turn, and
Signet's session-end is idempotent per session, so each Stop refreshes the stored transcript.

Codex runs a non-managed hook only after the user has reviewed and trusted it ("Non-managed
command hooks must be reviewed and trusted before they run"; trust is recorded against each
hook's current hash, and new or changed hooks are skipped until trusted: `/hooks` in the CLI,
developers.openai.com/codex/hooks). The hash is Codex's own and there is no supported way
for an installer to grant trust (openai/codex#21615), so Signet does not write it: the
install output names the one step (trust them in Codex). Project trust
(``[projects."<dir>"] trust_level``) only decides whether a project's own ``.codex/`` layer
loads; Signet's hooks are in the user layer, so it is not needed.

There is no per-project install: ``--project`` is accepted and said to be ignored.
"""

from __future__ import annotations

import json

from signet.harnesses.base import Harness, InstallContext, command_hooks_edit, context_json
from signet.harnesses.merge import BlockEdit, Edit, toml_validator

NAME = "codex"

HOOKS = {
    "SessionStart": ("session-start", 15, None),
    "UserPromptSubmit": ("user-prompt-submit", 8, None),
    "Stop": ("session-end", 30, None),
}
EVENT_NAMES = {"session-start": "SessionStart", "user-prompt-submit": "UserPromptSubmit"}
TRUST_STEP = (
    "Codex skips new hooks until you trust them: start `codex` and trust them when it asks, "
    "or open /hooks and trust the three `signet hook` entries (again after a reinstall that changed them)"
)
PROJECT_IGNORED = "--project is ignored: Codex gets Signet for every project from ~/.codex"

TOML_BEGIN = "# >>> signet (managed by `signet install codex`; removed by `signet uninstall codex`) >>>"
TOML_END = "# <<< signet <<<"
MD_BEGIN = "<!-- signet:begin -->"
MD_END = "<!-- signet:end -->"


class Codex(Harness):
    name = NAME
    display_name = "Codex"
    synced_identity = frozenset({"AGENTS.md"})
    transcript_adapter = "codex"
    skills_folder = (".codex", "skills")

    def render(self, event: str, context: str) -> str:
        if event in EVENT_NAMES:
            return context_json(EVENT_NAMES[event], context)
        return ""

    def hooks_edit(self, ctx: InstallContext) -> Edit:
        edit = command_hooks_edit(ctx.home / ".codex" / "hooks.json", ctx, NAME, HOOKS)
        # `signet install` prints each file with its description: the step Signet cannot do
        # itself goes there, so it is shown on every install until the user has done it.
        notes = [TRUST_STEP] + ([PROJECT_IGNORED] if ctx.project is not None else [])
        edit.description = f"{edit.description}; {'; '.join(notes)}"
        return edit

    def mcp_edit(self, ctx: InstallContext) -> Edit:
        args = json.dumps([*ctx.signet[1:], "mcp"])
        body = f"[mcp_servers.signet]\ncommand = {json.dumps(ctx.signet[0])}\nargs = {args}"
        return BlockEdit(
            ctx.home / ".codex" / "config.toml",
            "toml",
            "[mcp_servers.signet]",
            begin=TOML_BEGIN,
            end=TOML_END,
            body=body,
            validate=toml_validator,
        )

    def instruction_edits(self, ctx: InstallContext) -> list[Edit]:
        return [
            BlockEdit(
                ctx.home / ".codex" / "AGENTS.md",
                "markdown",
                "instructions from AGENTS.md",
                begin=MD_BEGIN,
                end=MD_END,
                body=ctx.instructions(),
            )
        ]

    def edits(self, ctx: InstallContext) -> list[Edit]:
        return [self.hooks_edit(ctx), self.mcp_edit(ctx), *self.instruction_edits(ctx)]


HARNESS = Codex()
