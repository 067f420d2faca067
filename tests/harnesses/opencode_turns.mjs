// Plays OpenCode for the installed Signet plugin: loads the plugin file the way OpenCode's
// plugin loader does, then runs a session's turns the way OpenCode's session loop calls
// plugin hooks, and prints every system prompt the model would have received (JSON).
//
// What is mirrored, from anomalyco/opencode (packages/opencode/src/plugin, session/prompt.ts,
// session/llm.ts) and @opencode-ai/plugin's Hooks type:
// - every export of the module is a plugin; each is called once with
//   { client, project, directory, worktree, $ } and returns its hooks;
// - a hook is triggered for each plugin in turn, awaited: trigger(name, input, output);
// - a user message triggers "chat.message" ({ sessionID, agent, model, messageID },
//   { message, parts }) before the model runs;
// - every model call (a turn with a tool call makes two) builds a fresh system array and
//   triggers "experimental.chat.system.transform" ({ sessionID, model }, { system });
// - when the session goes idle, "event" gets { event: { type: "session.idle",
//   properties: { sessionID } } }, and the plugin reads the messages through
//   client.session.messages({ path: { id } }) -> { data: [{ info, parts }] }.
//
// Usage: node opencode_turns.mjs PLUGIN_FILE DIRECTORY SESSION_ID PROMPTS_JSON
import { pathToFileURL } from "node:url";

const [pluginFile, directory, sessionID, promptsJson] = process.argv.slice(2);
const prompts = JSON.parse(promptsJson);
const model = { providerID: "anthropic", modelID: "claude-sonnet-4" };
const messages = [];
let clock = Date.parse("2025-10-01T09:00:00.000Z");

const client = {
  session: {
    messages: async ({ path }) => ({ data: messages.filter((m) => m.info.sessionID === path.id) }),
  },
};

const mod = await import(pathToFileURL(pluginFile).href);
const hooks = [];
for (const init of Object.values(mod)) {
  hooks.push(await init({ client, project: { id: "p1", worktree: directory }, directory, worktree: directory, $: null }));
}

async function trigger(name, input, output) {
  for (const h of hooks) {
    const fn = h[name];
    if (fn) await fn(input, output);
  }
  return output;
}

function message(role, text, n) {
  const id = `msg_${role}_${n}`;
  clock += 1000;
  return {
    info: { id, sessionID, role, time: { created: clock } },
    parts: [{ id: `prt_${n}`, sessionID, messageID: id, type: "text", text }],
  };
}

const turns = [];
for (const [n, prompt] of prompts.entries()) {
  const user = message("user", prompt, n);
  await trigger(
    "chat.message",
    { sessionID, agent: "build", model, messageID: user.info.id },
    { message: user.info, parts: user.parts },
  );
  messages.push(user);
  const systems = [];
  for (let step = 0; step < 2; step++) {
    const out = await trigger("experimental.chat.system.transform", { sessionID, model }, {
      system: ["You are opencode, an interactive CLI coding agent."],
    });
    systems.push(out.system);
  }
  messages.push(message("assistant", `Answer ${n + 1}.`, n));
  await trigger("event", { event: { type: "session.idle", properties: { sessionID } } });
  turns.push({ prompt, systems });
}
console.log(JSON.stringify({ turns }));
