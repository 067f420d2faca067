"""Harness integrations: one module per harness (Claude Code, Codex, OpenCode, OpenClaw,
Cursor, Windsurf), each a :class:`~signet.harnesses.base.Harness` registered as a plugin.

Harness modules use only the standard library: ``signet hook`` imports one of them on every
prompt to read the harness's JSON and write what the harness expects back.
"""

BUILTIN = {
    "claude-code": "signet.harnesses.claude_code",
    "codex": "signet.harnesses.codex",
    "opencode": "signet.harnesses.opencode",
    "openclaw": "signet.harnesses.openclaw",
    "cursor": "signet.harnesses.cursor",
    "windsurf": "signet.harnesses.windsurf",
}
"""Built-in harness modules by name; each exposes ``HARNESS``."""
