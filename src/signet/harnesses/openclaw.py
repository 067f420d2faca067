"""OpenClaw: a managed hook in ``~/.openclaw/hooks/signet-memory/`` (``HOOK.md`` +
``handler.js``), enabled under ``hooks.internal.entries`` in ``~/.openclaw/openclaw.json``,
and a Signet block in the default agent workspace's ``AGENTS.md``.

``openclaw.json`` is JSON5 ("OpenClaw reads an optional JSON5 config from
~/.openclaw/openclaw.json", docs.openclaw.ai/gateway/configuration): comments, trailing
commas and unquoted keys are read with the ``json5`` package and kept when Signet's entry is
added (:mod:`signet.harnesses.jsontext`).

The hook listens to ``agent:bootstrap`` (pushes Signet's session context as a virtual
bootstrap file) and ``command:new`` / ``command:reset`` (the session ends: its transcript is
saved). OpenClaw session keys look like ``agent:{id}:{rest}``; the agent id is taken from them.
"""

from __future__ import annotations

import json

from signet.harnesses.base import Harness, HookInput, InstallContext, del_key, set_key
from signet.harnesses.merge import BlockEdit, Edit, JsonEdit, JsonObj, OwnedFile

NAME = "openclaw"
HOOK_NAME = "signet-memory"
MARKER = "signet: managed by `signet install openclaw`"
MD_BEGIN = "<!-- signet:begin -->"
MD_END = "<!-- signet:end -->"

HOOK_MD = """---
name: {hook}
description: "Signet memory: context at session start; the transcript is kept on /new and /reset"
metadata: {{"openclaw":{{"emoji":"🧠","events":["agent:bootstrap","command:new","command:reset"]}}}}
---

# {hook}

<!-- {marker} (removed by `signet uninstall openclaw`) -->

Adds Signet's session context (identity, last handoff, relevant memories) as a virtual
bootstrap file, and hands the session transcript to Signet when a session is reset.
"""

HANDLER = """// {marker} (removed by `signet uninstall openclaw`).
import {{ spawn }} from "node:child_process";

const SIGNET = {argv};

function signet(event, payload, timeoutMs) {{
  return new Promise((resolve) => {{
    let out = "";
    let done = false;
    const finish = (value) => {{ if (!done) {{ done = true; resolve(value); }} }};
    const proc = spawn(SIGNET[0], [...SIGNET.slice(1), "hook", event, "--harness", "openclaw"], {{
      stdio: ["pipe", "pipe", "ignore"],
    }});
    const timer = setTimeout(() => {{ proc.kill(); finish(""); }}, timeoutMs);
    proc.stdout.on("data", (chunk) => {{ out += chunk; }});
    proc.on("error", () => {{ clearTimeout(timer); finish(""); }});
    proc.on("close", () => {{ clearTimeout(timer); finish(out.trim()); }});
    proc.stdin.end(JSON.stringify(payload));
  }});
}}

const handler = async (event) => {{
  const ctx = event.context || {{}};
  if (event.type === "agent" && event.action === "bootstrap") {{
    const entry = ctx.sessionEntry || {{}};
    const text = await signet("session-start", {{
      sessionKey: event.sessionKey, session_id: entry.sessionId, cwd: ctx.workspaceDir,
    }}, 15000);
    if (text && Array.isArray(ctx.bootstrapFiles)) {{
      ctx.bootstrapFiles.push({{ name: "SIGNET.md", path: "SIGNET.md", content: text, virtual: true }});
    }}
  }} else if (event.type === "command" && (event.action === "new" || event.action === "reset")) {{
    const entry = ctx.previousSessionEntry || ctx.sessionEntry || {{}};
    await signet("session-end", {{
      sessionKey: event.sessionKey, session_id: entry.sessionId, cwd: ctx.workspaceDir,
      sessionFile: entry.sessionFile,
    }}, 30000);
  }}
}};

export default handler;
"""


class OpenClaw(Harness):
    name = NAME
    display_name = "OpenClaw"
    synced_identity = frozenset({"AGENTS.md"})
    transcript_adapter = "openclaw"

    def parse(self, event: str, payload: JsonObj) -> HookInput:
        req = super().parse(event, payload)
        key = payload.get("sessionKey")
        if isinstance(key, str) and key.startswith("agent:") and key.count(":") >= 2:
            req.body.setdefault("agent_id", key.split(":", 2)[1])
        if not (payload.get("session_id") or payload.get("sessionId")):
            # A session key names a chat, not one session (/new keeps it): without a session
            # id, session end falls back to the transcript file's name.
            req.body.pop("session_id", None)
        return req

    def edits(self, ctx: InstallContext) -> list[Edit]:
        hook_dir = ctx.home / ".openclaw" / "hooks" / HOOK_NAME

        def add(obj: JsonObj) -> None:
            set_key(obj, ("hooks", "internal", "enabled"), True)
            set_key(obj, ("hooks", "internal", "entries", HOOK_NAME), {"enabled": True})

        def strip(obj: JsonObj) -> None:
            del_key(obj, ("hooks", "internal", "entries", HOOK_NAME))

        return [
            OwnedFile(
                hook_dir / "HOOK.md",
                "owned",
                "hook metadata",
                content=HOOK_MD.format(hook=HOOK_NAME, marker=MARKER),
                marker=MARKER,
            ),
            OwnedFile(
                hook_dir / "handler.js",
                "owned",
                "hook handler (agent:bootstrap, command:new/reset)",
                content=HANDLER.format(marker=MARKER, argv=json.dumps(ctx.signet)),
                marker=MARKER,
            ),
            JsonEdit(
                ctx.home / ".openclaw" / "openclaw.json",
                "json5",
                f"hooks.internal.entries.{HOOK_NAME}",
                add=add,
                strip=strip,
                json5=True,
            ),
            *self.instruction_edits(ctx),
        ]

    def instruction_edits(self, ctx: InstallContext) -> list[Edit]:
        return [
            BlockEdit(
                ctx.home / ".openclaw" / "workspace" / "AGENTS.md",
                "markdown",
                "instructions from AGENTS.md",
                begin=MD_BEGIN,
                end=MD_END,
                body=ctx.instructions(),
            )
        ]


HARNESS = OpenClaw()
