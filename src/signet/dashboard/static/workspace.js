// Workspace: the config editor (agent.yaml validated as you type, Ctrl/Cmd+S saves), identity,
// harnesses, scheduled tasks, skills, secrets (names only) and tokens (admin).
"use strict";
import { api, can, el, notice, fmtDate, streamEvents } from "./api.js";

const WIDE = new Set(["Config files", "Scheduled tasks"]);
const section = (title, ...body) => el("section", { class: WIDE.has(title) ? "card wide" : "card", "aria-label": title }, el("h3", {}, title), ...body);
const table = (head, rows) => el("table", {}, el("thead", {}, el("tr", {}, ...head.map((h) => el("th", {}, h)))), el("tbody", {}, ...rows.map((r) => el("tr", {}, ...r.map((c) => el("td", {}, c))))));
const soft = (p, title) => p.catch((e) => section(title, el("p", { class: "meta" }, e.status === 403 ? "Your token may not read this." : e.message)));

export async function render(main) {
  main.append(el("h2", {}, "Workspace"));
  if (!can("local")) { main.append(el("p", { class: "meta" }, "The workspace's files, tasks and secrets need an admin token.")); return null; }
  const grid = el("div", { class: "grid" });
  main.append(await editor(), grid);
  const parts = await Promise.all([
    soft(identity(), "Identity"), soft(harnesses(), "Harnesses"), soft(tasks(), "Scheduled tasks"),
    soft(skills(), "Skills"), soft(secrets(), "Secrets"), tokens(),
  ]);
  grid.append(...parts.filter(Boolean));
  return () => document.removeEventListener("keydown", onSave);
}

let onSave = () => {};

async function editor() {
  const out = await api("GET", "/api/config");
  const files = out.files.map((f) => f.name);
  const pick = el("select", { id: "cfg-file" }, ...files.map((n) => el("option", { value: n, selected: n === "agent.yaml" }, n)));
  const text = el("textarea", { id: "cfg-text", spellcheck: "false", "aria-describedby": "cfg-error cfg-state" });
  const error = el("p", { id: "cfg-error", class: "error", role: "alert" });
  const state = el("span", { id: "cfg-state", class: "meta", "aria-live": "polite" });
  const save = el("button", { type: "button", id: "cfg-save" }, "Save (Ctrl+S)");
  let timer = null, valid = true;
  const load = () => { const f = out.files.find((x) => x.name === pick.value); text.value = f ? f.content : ""; error.textContent = ""; text.removeAttribute("aria-invalid"); state.textContent = f ? `${f.size} bytes · saved ${fmtDate(f.updated_at)}` : ""; };
  async function check() {
    try {
      await api("POST", "/api/config", { file: pick.value, content: text.value, dry_run: true });
      valid = true; error.textContent = ""; text.removeAttribute("aria-invalid");
    } catch (e) {
      valid = false; error.textContent = e.message; text.setAttribute("aria-invalid", "true");
    }
    return valid;
  }
  async function doSave() {
    clearTimeout(timer);
    if (!(await check())) { state.textContent = "Not saved: fix the error first."; return; }
    try {
      const r = await api("POST", "/api/config", { file: pick.value, content: text.value });
      const f = out.files.find((x) => x.name === pick.value);
      if (f) f.content = text.value;
      state.textContent = `Saved ${r.saved} (${r.bytes} bytes)${r.restart_required ? " · restart the daemon to apply it" : ""}`;
    } catch (e) { error.textContent = e.message; }
  }
  text.addEventListener("input", () => { state.textContent = "edited · not saved"; clearTimeout(timer); timer = setTimeout(check, 400); });
  pick.addEventListener("change", load);
  save.addEventListener("click", doSave);
  document.removeEventListener("keydown", onSave);
  onSave = (ev) => { if ((ev.ctrlKey || ev.metaKey) && ev.key.toLowerCase() === "s" && document.getElementById("cfg-text")) { ev.preventDefault(); doSave(); } };
  document.addEventListener("keydown", onSave);
  load();
  return section("Config files", el("div", { class: "row" }, el("label", { for: "cfg-file" }, "File"), pick, save, state),
    el("label", { for: "cfg-text", class: "sr-only" }, "File content"), text, error);
}

async function identity() {
  const id = await api("GET", "/api/identity");
  return section("Identity", el("p", {}, el("b", {}, id.name), id.description ? ` — ${id.description}` : ""),
    table(["File", "Size", "Updated"], id.files.map((f) => [f.name, f.exists ? `${f.size} B` : "missing", fmtDate(f.updated_at)])));
}

async function harnesses() {
  const out = await api("GET", "/api/harnesses");
  const resync = el("button", { type: "button", onclick: async () => { try { const r = await api("POST", "/api/harnesses/regenerate", {}); notice(`Re-synced ${r.files ? r.files.length : 0} files`); } catch (e) { notice(e.message); } } }, "Re-sync identity files");
  return section("Harnesses", table(["Harness", "Installed", "Complete"], out.harnesses.map((h) => [h.display_name, h.installed ? fmtDate(h.installed_at) || "yes" : "no", h.complete ? "yes" : "no"])), resync);
}

async function tasks() {
  const out = await api("GET", "/api/tasks");
  if (!out.tasks.length) return section("Scheduled tasks", el("p", { class: "meta" }, "None (signet task add)."));
  const live = el("pre", { id: "task-output", class: "output", tabindex: 0, "aria-live": "polite", "aria-label": "Task output", hidden: true });
  const runs = el("div", { id: "task-runs" });
  const rows = out.tasks.map((t) => [
    t.name, t.schedule, fmtDate(t.next_run_at) || "—", t.running ? "running" : t.enabled ? "enabled" : "disabled",
    el("span", { class: "row" },
      el("button", { type: "button", "aria-label": `Run ${t.name} now`, onclick: () => runNow(t, live, runs) }, "Run now"),
      el("button", { type: "button", "aria-label": `Run history of ${t.name}`, onclick: () => history(t, runs) }, "History")),
  ]);
  return section("Scheduled tasks", table(["Name", "Schedule", "Next run", "State", ""], rows), live, runs);
}

/** Start a run and show its output as it comes (the task's event stream, opened first). */
async function runNow(task, live, runs) {
  const ctrl = new AbortController();
  live.hidden = false;
  live.textContent = `$ ${task.command.join(" ")}\n`;
  let started = false;
  const stream = streamEvents(`/api/tasks/${encodeURIComponent(task.id)}/stream?heartbeat=5`, ctrl.signal, (event, data) => {
    const d = JSON.parse(data);
    if (event === "output") live.textContent += d.text;
    else if (event === "done") { live.textContent += `\n[${d.status}, exit ${d.exit_code}]`; ctrl.abort(); history(task, runs); }
    else if (event === "end") ctrl.abort();
  }).catch((e) => { if (e.name !== "AbortError") live.textContent += `\n[stream stopped: ${e.message}]`; });
  await new Promise((res) => setTimeout(res, 150)); // the stream subscribes before the run starts
  try { await api("POST", `/api/tasks/${encodeURIComponent(task.id)}/run`); started = true; } catch (e) { live.textContent += `\n${e.message}`; ctrl.abort(); }
  if (started) await stream;
}

async function history(task, box) {
  try {
    const out = await api("GET", `/api/tasks/${encodeURIComponent(task.id)}/runs?limit=5`);
    box.replaceChildren(el("h4", {}, `${task.name}: last runs (${out.total})`),
      table(["Started", "Trigger", "Status", "Exit"], out.items.map((r) => [fmtDate(r.started_at) || "—", r.trigger, r.status, r.exit_code === null ? "—" : String(r.exit_code)])));
  } catch (e) { notice(e.message); }
}

async function skills() {
  const out = await api("GET", "/api/skills");
  if (!out.skills.length) return section("Skills", el("p", { class: "meta" }, "None installed."));
  return section("Skills", table(["Name", "Description", "Used"], out.skills.map((s) => [s.name, s.description, `${s.use_count}×`])));
}

async function secrets() {
  if (!can("admin")) return null;
  const out = await api("GET", "/api/secrets");
  const name = el("input", { id: "secret-name", required: true, size: 14, pattern: "[A-Za-z_][A-Za-z0-9_]*" });
  const value = el("input", { id: "secret-value", type: "password", required: true, autocomplete: "off", size: 14 });
  const form = el("form", { class: "row", "aria-label": "Store a secret" },
    el("label", { for: "secret-name" }, "Name"), name, el("label", { for: "secret-value" }, "Value"), value, el("button", { type: "submit" }, "Store"));
  const box = section("Secrets", el("p", { class: "meta" }, "Names only: values never leave the daemon."),
    out.secrets.length ? table(["Name", "Updated", ""], out.secrets.map((s) => [s.name, fmtDate(s.updated_at),
      el("button", { type: "button", class: "danger", "aria-label": `Delete secret ${s.name}`, onclick: async () => {
        if (!confirm(`Delete the secret ${s.name}? Tasks that use it will fail.`)) return;
        try { await api("DELETE", `/api/secrets/${encodeURIComponent(s.name)}`); box.replaceWith(await secrets()); } catch (e) { notice(e.message); }
      } }, "Delete")])) : el("p", { class: "meta" }, "None stored."), form);
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    try {
      await api("POST", "/api/secrets", { name: name.value.trim(), value: value.value });
      value.value = "";
      box.replaceWith(await secrets());
    } catch (e) { notice(e.message); }
  });
  return box;
}

function tokens() {
  if (!can("admin")) return null;
  return section("Tokens", el("p", {}, "Issue, revoke and review tokens on the ", el("a", { href: "#/agents" }, "Agents page"), "."));
}
