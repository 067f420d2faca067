"""Claude Code: hooks in ``~/.claude/settings.json``, the MCP server in ``~/.claude.json``,
and ``~/.claude/CLAUDE.md`` generated from AGENTS.md.

Hook input (stdin JSON): ``session_id``, ``transcript_path``, ``cwd``, ``hook_event_name``,
plus ``source`` (SessionStart: startup/resume/clear/compact), ``prompt`` (UserPromptSubmit),
``reason`` (SessionEnd), ``trigger``/``custom_instructions`` (PreCompact). Context goes back
as ``{"hookSpecificOutput": {"hookEventName": ..., "additionalContext": ...}}``. Timeouts
are in seconds. Sources: docs/harnesses.md.
"""

from __future__ import annotations

from pathlib import Path

from signet.harnesses.base import (
    Harness,
    HookInput,
    InstallContext,
    command_hooks_edit,
    context_json,
    mcp_server_edit,
    stdio_server,
)
from signet.harnesses.merge import BlockEdit, Edit
from signet.ingest.base import jsonl_records, text_of

NAME = "claude-code"

# Claude Code event -> (Signet event, timeout in seconds, matcher).
HOOKS = {
    "SessionStart": ("session-start", 15, None),
    "UserPromptSubmit": ("user-prompt-submit", 8, None),
    "SessionEnd": ("session-end", 30, None),
    "PreCompact": ("pre-compaction", 10, None),
}
EVENT_NAMES = {"session-start": "SessionStart", "user-prompt-submit": "UserPromptSubmit"}

MD_BEGIN = "<!-- signet:begin -->"
MD_END = "<!-- signet:end -->"


class ClaudeCode(Harness):
    name = NAME
    display_name = "Claude Code"
    synced_identity = frozenset({"AGENTS.md"})
    transcript_adapter = "claude-code"
    skills_folder = (".claude", "skills")

    def render(self, event: str, context: str) -> str:
        if event in EVENT_NAMES:
            return context_json(EVENT_NAMES[event], context)
        if event == "pre-compaction":
            return context  # shown in the transcript; PreCompact cannot add model context
        return ""

    def compaction_summary(self, hook: HookInput) -> str | None:
        """After ``/compact`` Claude Code starts the session again (``source: compact``); the
        summary is the transcript's last message marked ``isCompactSummary``."""
        if hook.body.get("source") != "compact" or not hook.transcript_path:
            return None
        path = Path(hook.transcript_path).expanduser()
        if not path.is_file():
            return None
        summary = None
        for _, rec in jsonl_records(path):
            if rec.get("isCompactSummary") and isinstance(rec.get("message"), dict):
                summary = text_of(rec["message"].get("content"), ("text",)) or summary
        return summary

    def settings_edit(self, ctx: InstallContext) -> Edit:
        return command_hooks_edit(ctx.home / ".claude" / "settings.json", ctx, NAME, HOOKS)

    def mcp_edit(self, ctx: InstallContext) -> Edit:
        server = {"type": "stdio", **stdio_server(ctx)}
        return mcp_server_edit(
            ctx.home / ".claude.json", ("mcpServers", "signet"), server, "MCP server 'signet' (user scope)"
        )

    def instruction_edits(self, ctx: InstallContext) -> list[Edit]:
        return [
            BlockEdit(
                ctx.home / ".claude" / "CLAUDE.md",
                "markdown",
                "instructions from AGENTS.md",
                begin=MD_BEGIN,
                end=MD_END,
                body=ctx.instructions(),
            )
        ]

    def edits(self, ctx: InstallContext) -> list[Edit]:
        return [self.settings_edit(ctx), self.mcp_edit(ctx), *self.instruction_edits(ctx)]


HARNESS = ClaudeCode()
