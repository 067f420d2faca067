// Signet dashboard: plain JS against the daemon's own HTTP API (no build step, nothing remote).
"use strict";
const $ = (s) => document.querySelector(s);
const TYPES = ["fact", "preference", "decision", "procedural", "semantic", "rule", "learning", "issue", "episodic"];
const PAGE = 25;
let offset = 0, mode = "list", selected = null, configFile = null;

async function api(method, path, body) {
  const opts = { method, headers: { "X-Signet-Actor": "dashboard" } };
  if (body !== undefined) { opts.headers["content-type"] = "application/json"; opts.body = JSON.stringify(body); }
  const r = await fetch(path, opts);
  let data = null;
  try { data = await r.json(); } catch (_) { data = { error: `HTTP ${r.status}` }; }
  if (!r.ok) throw new Error(data.error || `HTTP ${r.status}`);
  return data;
}

function el(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === "class") e.className = v; else if (k.startsWith("on")) e.addEventListener(k.slice(2), v); else e.setAttribute(k, v);
  }
  for (const c of children) e.append(c instanceof Node ? c : document.createTextNode(c ?? ""));
  return e;
}

function notice(text) { const n = $("#notice"); n.textContent = text || ""; n.hidden = !text; }

function filters() {
  const f = {};
  if ($("#f-type").value) f.type = $("#f-type").value;
  if ($("#f-project").value.trim()) f.project = $("#f-project").value.trim();
  if ($("#f-who").value.trim()) f.who = $("#f-who").value.trim();
  const tags = $("#f-tags").value.split(",").map((t) => t.trim()).filter(Boolean);
  if (tags.length) f.tags = tags;
  if ($("#f-pinned").checked) f.pinned = true;
  return f;
}

function renderItems(items, withScore) {
  const ul = $("#results");
  ul.replaceChildren();
  for (const m of items) {
    const li = el("li", { onclick: () => showDetail(m.id, li) },
      withScore ? el("span", { class: "score" }, `${m.score.toFixed(3)} · ${m.source}`) : "",
      el("div", {}, m.content),
      el("div", { class: "meta" }, `${m.type} · ${(m.created_at || "").slice(0, 10)}${m.project ? " · " + m.project : ""}${m.who ? " · " + m.who : ""} `,
        ...(m.tags || []).map((t) => el("span", { class: "tag" }, t)), m.pinned ? el("span", { class: "tag" }, "pinned") : ""));
    ul.append(li);
  }
  if (!items.length) ul.append(el("li", { class: "meta" }, "No memories match."));
}

async function load() {
  notice("");
  try {
    const q = $("#q").value.trim();
    if (q) {
      mode = "search";
      const out = await api("POST", "/api/memory/recall", { query: q, limit: 50, ...filters() });
      if (!out.vector_search.available) notice(`Keyword results only: ${out.vector_search.reason}`);
      $("#list-meta").textContent = `${out.count} results · ${out.method} · ${out.took_ms.toFixed(1)} ms`;
      renderItems(out.results, true);
    } else {
      mode = "list";
      const f = filters();
      const params = new URLSearchParams({ limit: PAGE, offset });
      for (const [k, v] of Object.entries(f)) (Array.isArray(v) ? v.map((x) => params.append("tag", x)) : params.set(k, v));
      const out = await api("GET", `/api/memories?${params}`);
      $("#list-meta").textContent = `${out.total} memories · showing ${out.total ? offset + 1 : 0}–${offset + out.items.length}`;
      renderItems(out.items, false);
      $("#prev").disabled = offset === 0;
      $("#next").disabled = offset + PAGE >= out.total;
    }
  } catch (e) { notice(e.message); }
}

async function showDetail(id, li) {
  document.querySelectorAll(".results li.sel").forEach((x) => x.classList.remove("sel"));
  if (li) li.classList.add("sel");
  selected = id;
  const d = $("#detail");
  try {
    const [m, h, sim] = await Promise.all([
      api("GET", `/api/memory/${encodeURIComponent(id)}`),
      api("GET", `/api/memory/${encodeURIComponent(id)}/history`),
      api("GET", `/memory/similar?id=${encodeURIComponent(id)}&limit=5`).catch(() => ({ results: [] })),
    ]);
    const actions = el("div", { class: "actions" });
    if (m.is_deleted) actions.append(el("button", { onclick: () => mutate("recover", m) }, "Recover"));
    else {
      actions.append(el("button", { onclick: () => mutate("edit", m) }, "Edit"));
      actions.append(el("button", { onclick: () => mutate("forget", m) }, "Forget"));
    }
    d.replaceChildren(
      el("div", {}, m.content),
      el("div", { class: "meta" }, `id ${m.id} · v${m.version} · ${m.type} · importance ${m.importance} (now ${m.effective_importance.toFixed(2)}) · accessed ${m.access_count}×${m.is_deleted ? " · DELETED" : ""}`),
      actions,
      el("h3", {}, "History"),
      el("ul", { class: "results" }, ...h.events.map((e) => el("li", {}, el("div", { class: "meta" }, `${e.created_at.slice(0, 19)} · ${e.event} by ${e.changed_by || "?"}${e.reason ? " — " + e.reason : ""}`),
        e.new_content && e.old_content && e.new_content !== e.old_content ? el("div", {}, `${e.old_content} → ${e.new_content}`) : ""))),
      el("h3", {}, "Similar"),
      el("ul", { class: "results" }, ...sim.results.map((r) => el("li", { onclick: () => showDetail(r.id) }, el("span", { class: "score" }, r.score.toFixed(3)), r.content))),
    );
  } catch (e) { d.replaceChildren(el("p", { class: "meta" }, e.message)); }
}

async function mutate(action, m) {
  try {
    if (action === "forget") {
      const reason = prompt("Why forget this memory? (it stays recoverable for the retention window)");
      if (!reason) return;
      await api("DELETE", `/api/memory/${encodeURIComponent(m.id)}?reason=${encodeURIComponent(reason)}&if_version=${m.version}`);
    } else if (action === "recover") {
      const reason = prompt("Why recover it?", "restored from the dashboard");
      if (!reason) return;
      await api("POST", `/api/memory/${encodeURIComponent(m.id)}/recover`, { reason, if_version: m.version });
    } else if (action === "edit") {
      const content = prompt("New content", m.content);
      if (content === null || content === m.content) return;
      const reason = prompt("Reason for the change");
      if (!reason) return;
      await api("PATCH", `/api/memory/${encodeURIComponent(m.id)}`, { content, reason, if_version: m.version });
    }
    await load();
    await showDetail(m.id);
  } catch (e) { notice(e.message); }
}

async function loadStatus() {
  try {
    const s = await api("GET", "/api/status");
    $("#status-json").textContent = JSON.stringify(s, null, 2);
    const pill = $("#health");
    pill.textContent = `${s.memories.active} memories · vectors ${s.vector_search.available ? "on" : "OFF"}`;
    pill.className = "pill " + (s.vector_search.available ? "ok" : "warn");
  } catch (e) { $("#health").textContent = "daemon unreachable"; $("#health").className = "pill bad"; }
}

async function loadHarnesses() {
  try {
    const out = await api("GET", "/api/harnesses");
    const rows = out.harnesses.map((h) => el("tr", {}, el("td", {}, h.display_name), el("td", {}, h.installed ? "installed" : "—"),
      el("td", { class: "meta" }, h.files.map((f) => `${f.path}${f.exists ? "" : " (missing)"}`).join(", "))));
    $("#harnesses").replaceChildren(el("table", {}, el("tr", {}, el("th", {}, "harness"), el("th", {}, "state"), el("th", {}, "files")), ...rows));
  } catch (e) { $("#harnesses").textContent = e.message; }
}

async function loadConfig() {
  try {
    const out = await api("GET", "/api/config");
    $("#config-files").replaceChildren(...out.files.map((f) => el("li", { onclick: () => {
      configFile = f.name; $("#config-name").textContent = f.name; $("#config-text").value = f.content; $("#config-save").disabled = false; $("#config-msg").textContent = "";
    } }, f.name, el("div", { class: "meta" }, `${f.size} bytes · ${f.updated_at}`))));
  } catch (e) { $("#config-files").textContent = e.message; }
}

async function saveConfig() {
  if (!configFile) return;
  try {
    const r = await api("POST", "/api/config", { file: configFile, content: $("#config-text").value });
    $("#config-msg").textContent = `saved ${r.bytes} bytes${r.restart_required ? " — restart the daemon to apply" : ""}`;
  } catch (e) { $("#config-msg").textContent = e.message; }
}

for (const t of TYPES) $("#f-type").append(el("option", { value: t }, t));
document.querySelectorAll("nav button").forEach((b) => b.addEventListener("click", () => {
  document.querySelectorAll("nav button, .tab").forEach((x) => x.classList.remove("active"));
  b.classList.add("active");
  $(`#tab-${b.dataset.tab}`).classList.add("active");
  ({ status: loadStatus, harnesses: loadHarnesses, config: loadConfig, memories: load })[b.dataset.tab]();
}));
$("#search").addEventListener("submit", (e) => { e.preventDefault(); offset = 0; load(); });
$("#remember").addEventListener("submit", async (e) => {
  e.preventDefault();
  const content = $("#new-content").value.trim();
  if (!content) return;
  try { const r = await api("POST", "/api/memory/remember", { content, who: "dashboard" }); $("#new-content").value = ""; await load(); showDetail(r.id); }
  catch (err) { notice(err.message); }
});
$("#prev").addEventListener("click", () => { offset = Math.max(0, offset - PAGE); load(); });
$("#next").addEventListener("click", () => { offset += PAGE; load(); });
$("#config-save").addEventListener("click", saveConfig);
document.addEventListener("keydown", (e) => { if ((e.ctrlKey || e.metaKey) && e.key === "s" && configFile) { e.preventDefault(); saveConfig(); } });
loadStatus(); load(); setInterval(loadStatus, 10000);
