"""OpenCode: a plugin in ``~/.config/opencode/plugins/signet.js`` (global plugins load at
start-up), the MCP server under ``mcp.signet`` in ``~/.config/opencode/opencode.json``, and
``~/.config/opencode/AGENTS.md`` (OpenCode's global rules) generated from AGENTS.md.

OpenCode plugins are JavaScript modules, not commands: the plugin runs
``signet hook <event> --harness opencode`` with a small JSON body on stdin and reads plain
text back, so the daemon-down fallback and the formats stay in one place.

The plugin API it relies on (``@opencode-ai/plugin``'s ``Hooks`` and ``PluginInput``, and
where OpenCode triggers them, as read in anomalyco/opencode): each export of a plugin module
is called once with ``{client, project, directory, worktree, $}`` and returns hooks;
``chat.message(input: {sessionID, agent?, model?, messageID?}, output: {message, parts})``
runs when a user message arrives, before the model is called;
``experimental.chat.system.transform(input: {sessionID?, model}, output: {system: string[]})``
runs before *every* model call on a freshly built ``system`` array (``session/llm.ts``), so
what is not pushed on a call is not in that call's system prompt. The plugin therefore keeps
each session's session-start context and pushes it on every call, followed by the memories
recalled for the latest prompt. ``event`` receives ``{event}`` (``session.idle`` carries
``properties.sessionID``). The hook is spawned with ``node:child_process``, which both Bun
(OpenCode's runtime) and Node provide.
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
import {{ spawn }} from "node:child_process";

const SIGNET = {argv};

// `signet hook` never blocks (it answers at once when the daemon is down); the timer only
// guards against a hung process.
function signet(event, payload, timeoutMs) {{
  return new Promise((resolve) => {{
    let out = "";
    let done = false;
    const finish = (value) => {{ if (!done) {{ done = true; resolve(value); }} }};
    const proc = spawn(SIGNET[0], [...SIGNET.slice(1), "hook", event, "--harness", "opencode"], {{
      stdio: ["pipe", "pipe", "ignore"],
    }});
    const timer = setTimeout(() => {{ proc.kill(); finish(""); }}, timeoutMs);
    proc.stdout.on("data", (chunk) => {{ out += chunk; }});
    proc.on("error", () => {{ clearTimeout(timer); finish(""); }});
    proc.on("close", () => {{ clearTimeout(timer); finish(out.trim()); }});
    proc.stdin.on("error", () => {{}});
    proc.stdin.end(JSON.stringify(payload));
  }});
}}

function textOf(parts) {{
  return (parts || [])
    .filter((p) => p && p.type === "text" && !p.synthetic && typeof p.text === "string")
    .map((p) => p.text)
    .join("\\n");
}}

export const SignetMemory = async ({{ client, directory }}) => {{
  // Per session: the session-start context (identity, last handoff, memories), fetched once,
  // and the memories recalled for the latest prompt. OpenCode builds the system prompt anew
  // for every model call, so both are pushed on every call of every turn.
  const sessions = new Map();
  let lastSession = null;
  return {{
    "chat.message": async (input, output) => {{
      const sessionID = input.sessionID;
      lastSession = sessionID;
      let state = sessions.get(sessionID);
      if (!state) {{
        state = {{ start: null, prompt: "" }};
        sessions.set(sessionID, state);
      }}
      if (state.start === null) {{
        state.start = await signet("session-start", {{ session_id: sessionID, cwd: directory }}, 15000);
      }}
      state.prompt = await signet("user-prompt-submit", {{
        session_id: sessionID, cwd: directory, prompt: textOf(output && output.parts),
      }}, 8000);
    }},
    "experimental.chat.system.transform": async (input, output) => {{
      const sessionID = (input && input.sessionID) || lastSession;
      const state = sessionID ? sessions.get(sessionID) : undefined;
      if (!state || !output || !Array.isArray(output.system)) return;
      for (const text of [state.start, state.prompt]) {{
        if (text) output.system.push(text);
      }}
    }},
    "experimental.session.compacting": async (input, output) => {{
      const text = await signet("pre-compaction", {{ session_id: input && input.sessionID, cwd: directory }}, 10000);
      if (text && output && Array.isArray(output.context)) output.context.push(text);
    }},
    event: async ({{ event }}) => {{
      if (!event || event.type !== "session.idle") return;
      const sessionID = event.properties && event.properties.sessionID;
      if (!sessionID) return;
      let res;
      try {{
        res = await client.session.messages({{ path: {{ id: sessionID }} }});
      }} catch (err) {{
        return; // the server went away: the next idle event sends the whole session again
      }}
      const turns = ((res && res.data) || [])
        .map((m) => ({{
          role: m.info.role,
          content: textOf(m.parts),
          timestamp: m.info.time && m.info.time.created ? new Date(m.info.time.created).toISOString() : null,
        }}))
        .filter((t) => (t.role === "user" || t.role === "assistant") && t.content);
      await signet("session-end", {{ session_id: sessionID, cwd: directory, turns }}, 30000);
    }},
  }};
}};
"""


class OpenCode(Harness):
    name = NAME
    display_name = "OpenCode"
    skills_folder = (".config", "opencode", "skills")
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
