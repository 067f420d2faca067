"""OpenCode: a plugin in ``~/.config/opencode/plugins/signet.js`` (global plugins load at
start-up), the MCP server under ``mcp.signet`` in ``~/.config/opencode/opencode.json``, and
``~/.config/opencode/AGENTS.md`` (OpenCode's global rules) generated from AGENTS.md.

OpenCode plugins are JavaScript modules, not commands: the plugin runs
``signet hook <event> --harness opencode`` with a small JSON body on stdin and reads plain
text back, so the daemon-down fallback and the formats stay in one place.
"""

from __future__ import annotations

import json

from signet.harnesses.base import Harness, InstallContext, mcp_server_edit
from signet.harnesses.merge import BlockEdit, Edit, OwnedFile

NAME = "opencode"
MD_BEGIN = "<!-- signet:begin -->"
MD_END = "<!-- signet:end -->"
PLUGIN_MARKER = "signet: managed by `signet install opencode`"

PLUGIN = """// {marker} (removed by `signet uninstall opencode`).
// Runs the Signet hook command and feeds its answer to OpenCode. Do not edit: reinstall instead.
const SIGNET = {argv};

async function signet(event, payload) {{
  try {{
    const proc = Bun.spawn([...SIGNET, "hook", event, "--harness", "opencode"], {{
      stdin: new Blob([JSON.stringify(payload)]),
      stdout: "pipe",
      stderr: "ignore",
    }});
    const out = await new Response(proc.stdout).text();
    await proc.exited;
    return out.trim();
  }} catch (err) {{
    return "";
  }}
}}

function textOf(parts) {{
  return (parts || [])
    .filter((p) => p && p.type === "text" && !p.synthetic && typeof p.text === "string")
    .map((p) => p.text)
    .join("\\n");
}}

export const SignetMemory = async ({{ client, directory }}) => {{
  const started = new Set();
  const context = new Map();
  let lastSession = null;
  return {{
    "chat.message": async (input, output) => {{
      const sessionID = input.sessionID;
      lastSession = sessionID;
      const parts = [];
      if (!started.has(sessionID)) {{
        started.add(sessionID);
        parts.push(await signet("session-start", {{ session_id: sessionID, cwd: directory }}));
      }}
      parts.push(await signet("user-prompt-submit", {{
        session_id: sessionID, cwd: directory, prompt: textOf(output.parts),
      }}));
      context.set(sessionID, parts.filter(Boolean).join("\\n\\n"));
    }},
    "experimental.chat.system.transform": async (input, output) => {{
      const sessionID = (input && input.sessionID) || lastSession;
      const text = sessionID ? context.get(sessionID) : "";
      if (text && output && Array.isArray(output.system)) output.system.push(text);
    }},
    "experimental.session.compacting": async (input, output) => {{
      const text = await signet("pre-compaction", {{ session_id: input && input.sessionID, cwd: directory }});
      if (text && output && Array.isArray(output.context)) output.context.push(text);
    }},
    event: async ({{ event }}) => {{
      if (event.type !== "session.idle") return;
      const sessionID = event.properties && event.properties.sessionID;
      if (!sessionID) return;
      const res = await client.session.messages({{ path: {{ id: sessionID }} }});
      const turns = (res.data || [])
        .map((m) => ({{
          role: m.info.role,
          content: textOf(m.parts),
          timestamp: m.info.time && m.info.time.created ? new Date(m.info.time.created).toISOString() : null,
        }}))
        .filter((t) => (t.role === "user" || t.role === "assistant") && t.content);
      await signet("session-end", {{ session_id: sessionID, cwd: directory, turns }});
    }},
  }};
}};
"""


class OpenCode(Harness):
    name = NAME
    display_name = "OpenCode"
    synced_identity = frozenset({"AGENTS.md"})

    def edits(self, ctx: InstallContext) -> list[Edit]:
        base = ctx.home / ".config" / "opencode"
        server = {"type": "local", "command": [*ctx.signet, "mcp"], "enabled": True}
        plugin = PLUGIN.format(marker=PLUGIN_MARKER, argv=json.dumps(ctx.signet))
        return [
            OwnedFile(
                base / "plugins" / "signet.js",
                "owned",
                "plugin (session start, prompts, compaction, session end)",
                content=plugin,
                marker=PLUGIN_MARKER,
            ),
            mcp_server_edit(base / "opencode.json", ("mcp", "signet"), server, "MCP server 'signet'"),
            *self.instruction_edits(ctx),
        ]

    def instruction_edits(self, ctx: InstallContext) -> list[Edit]:
        return [
            BlockEdit(
                ctx.home / ".config" / "opencode" / "AGENTS.md",
                "markdown",
                "instructions from AGENTS.md",
                begin=MD_BEGIN,
                end=MD_END,
                body=ctx.instructions(),
            )
        ]


HARNESS = OpenCode()
