// Memory browser: hybrid search with every recall filter, or the newest memories; bulk actions.
"use strict";
import { api, can, el, notice, fmtDate, TYPES } from "./api.js";

const PAGE = 25;

function field(id, label, input) {
  return el("div", { class: "field" }, el("label", { for: id }, label), input);
}

function readForm(form) {
  const v = (n) => form.elements[n].value.trim();
  const f = {};
  if (v("type")) f.type = v("type");
  if (v("project")) f.project = v("project");
  if (v("who")) f.who = v("who");
  const tags = v("tags").split(",").map((t) => t.trim()).filter(Boolean);
  if (tags.length) f.tags = tags;
  if (form.elements.pinned.checked) f.pinned = true;
  if (v("since")) f.since = `${v("since")}T00:00:00Z`;
  if (v("until")) f.until = `${v("until")}T23:59:59Z`;
  if (v("importance_min")) f.importance_min = Number(v("importance_min"));
  return f;
}

export async function render(main, arg) {
  const params = new URLSearchParams(arg.startsWith("?") ? arg.slice(1) : "");
  let offset = 0;
  let counting = 0; // the latest count asked for (an older answer is dropped)
  let items = [];
  const selected = new Set();
  const form = el("form", { id: "search", role: "search", "aria-label": "Search memories" },
    field("q", "Search", el("input", { id: "q", name: "q", type: "search", value: params.get("q") || "", placeholder: "keywords and meaning — press / to focus", autocomplete: "off" })),
    field("f-type", "Type", el("select", { id: "f-type", name: "type" }, el("option", { value: "" }, "any"), ...TYPES.map((t) => el("option", { value: t }, t)))),
    field("f-project", "Project", el("input", { id: "f-project", name: "project", size: 10 })),
    field("f-who", "Who", el("input", { id: "f-who", name: "who", size: 10 })),
    field("f-tags", "Tags", el("input", { id: "f-tags", name: "tags", size: 10, placeholder: "a, b" })),
    field("f-since", "Since", el("input", { id: "f-since", name: "since", type: "date" })),
    field("f-until", "Until", el("input", { id: "f-until", name: "until", type: "date" })),
    field("f-imp", "Min importance", el("input", { id: "f-imp", name: "importance_min", type: "number", min: 0, max: 1, step: 0.1, size: 4 })),
    el("div", { class: "field check" }, el("input", { id: "f-pinned", name: "pinned", type: "checkbox" }), el("label", { for: "f-pinned" }, "Pinned only")),
    el("div", { class: "field check" }, el("input", { id: "f-deleted", name: "include_deleted", type: "checkbox" }), el("label", { for: "f-deleted", title: "the newest list only (search skips them)" }, "Include forgotten")),
    el("button", { type: "submit" }, "Search"));
  const meta = el("p", { id: "list-meta", class: "meta", "aria-live": "polite" });
  const list = el("ul", { id: "results", class: "results" });
  const bulk = el("div", { id: "bulk", class: "bulk", hidden: true });
  const pager = el("div", { class: "pager" });
  main.append(el("h2", {}, "Memories"), form, bulk, meta, list, pager);

  function renderBulk() {
    bulk.hidden = selected.size === 0 || !(can("forget") || can("modify"));
    bulk.replaceChildren(el("span", {}, `${selected.size} selected`),
      can("modify") ? el("input", { id: "bulk-tag", "aria-label": "Tag to add to the selected memories", placeholder: "tag to add" }) : "",
      can("modify") ? el("button", { type: "button", onclick: bulkTag }, "Add tag") : "",
      can("modify") ? el("input", { id: "bulk-project", "aria-label": "Project to move the selected memories to", placeholder: "move to project" }) : "",
      can("modify") ? el("button", { type: "button", onclick: bulkMove }, "Move") : "",
      can("forget") ? el("button", { type: "button", class: "danger", onclick: bulkForget }, "Forget selected…") : "");
  }

  async function bulkPatch(patch, reason) {
    const patches = [...selected].map((id) => ({ id, ...patch(items.find((m) => m.id === id)) }));
    const out = await api("POST", "/api/memory/modify", { patches, reason });
    notice(`${out.results.filter((r) => r.status === "updated").length} of ${patches.length} updated`);
    selected.clear();
    await load();
  }
  function bulkTag() {
    const tag = document.getElementById("bulk-tag").value.trim();
    if (tag) bulkPatch((m) => ({ tags: [...new Set([...(m.tags || []), tag])] }), `dashboard: tagged '${tag}'`).catch((e) => notice(e.message));
  }
  function bulkMove() {
    const project = document.getElementById("bulk-project").value.trim();
    if (project) bulkPatch(() => ({ project }), `dashboard: moved to project '${project}'`).catch((e) => notice(e.message));
  }
  async function bulkForget() {
    try {
      const ids = [...selected];
      const preview = await api("POST", "/api/memory/forget", { mode: "preview", ids });
      const reason = prompt(`Forget ${preview.count} memories (recoverable)? Give a reason:`, "dashboard: bulk forget");
      if (!reason) return;
      const out = await api("POST", "/api/memory/forget", { mode: "execute", ids, reason, confirm_token: preview.confirm_token });
      notice(`${out.deleted.length} forgotten (recover them from each memory's page)`);
      selected.clear();
      await load();
    } catch (e) { notice(e.message); }
  }

  function row(m, scored) {
    const box = (can("forget") || can("modify"))
      ? el("input", { type: "checkbox", "aria-label": `Select ${m.content.slice(0, 40)}`, checked: selected.has(m.id), onchange: (ev) => { if (ev.target.checked) selected.add(m.id); else selected.delete(m.id); renderBulk(); } })
      : "";
    return el("li", {},
      box,
      el("div", { class: "body" },
        scored ? el("span", { class: "score", title: `keyword ${m.fts_score ?? "–"} · vector ${m.vector_score ?? "–"}` }, `${m.score.toFixed(3)} · ${m.source}`) : "",
        el("a", { href: `#/memory/${encodeURIComponent(m.id)}`, class: "content" }, m.content),
        el("div", { class: "meta" }, `${m.type} · ${fmtDate(m.created_at)}${m.project ? " · " + m.project : ""}${m.who ? " · " + m.who : ""} `,
          ...(m.tags || []).map((t) => el("span", { class: "tag" }, t)), m.pinned ? el("span", { class: "tag pin" }, "pinned") : "", m.is_deleted ? el("span", { class: "tag bad" }, "forgotten") : "")));
  }

  async function load() {
    renderBulk();
    if (params.get("selection") === "map") {
      // Points selected on the embedding map: fetched one by one (at most 200).
      const ids = JSON.parse(sessionStorage.getItem("signet.mapSelection") || "[]").slice(0, 200);
      const got = await Promise.all(ids.map((id) => api("GET", `/api/memory/${encodeURIComponent(id)}`).catch(() => null)));
      items = got.filter(Boolean);
      meta.textContent = `${items.length} memories selected on the map · `;
      meta.append(el("a", { href: "#/memories" }, "show all"));
      list.replaceChildren(...items.map((m) => row(m, false)));
      pager.replaceChildren();
      return;
    }
    const q = form.elements.q.value.trim();
    const f = readForm(form);
    pager.replaceChildren();
    if (q) {
      const out = await api("POST", "/api/memory/recall", { query: q, limit: 50, track_access: false, ...f });
      if (!out.vector_search.available) notice(`Keyword results only: ${out.vector_search.reason}`);
      meta.textContent = `${out.count} results · ${out.method} · ${out.took_ms.toFixed(1)} ms`;
      items = out.results;
      list.replaceChildren(...items.map((m) => row(m, true)));
    } else {
      // The page first (one row more says whether there is an older page), the count after it:
      // counting every match is the one cost that grows with the store, so it never delays the rows.
      const p = new URLSearchParams({ limit: PAGE + 1, offset, count: "false" });
      if (form.elements.include_deleted.checked) p.set("include_deleted", "true");
      for (const [k, v] of Object.entries(f)) (Array.isArray(v) ? v.forEach((x) => p.append("tag", x)) : p.set(k, v));
      const out = await api("GET", `/api/memories?${p}`);
      const more = out.items.length > PAGE;
      items = out.items.slice(0, PAGE);
      const shown = `showing ${items.length ? offset + 1 : 0}–${offset + items.length}`;
      meta.textContent = `${shown} · counting…`;
      list.replaceChildren(...items.map((m) => row(m, false)));
      pager.append(
        el("button", { type: "button", disabled: offset === 0, onclick: () => { offset = Math.max(0, offset - PAGE); load().catch((e) => notice(e.message)); } }, "← Newer"),
        el("button", { type: "button", disabled: !more, onclick: () => { offset += PAGE; load().catch((e) => notice(e.message)); } }, "Older →"));
      const asked = ++counting;
      p.set("limit", "1"); p.set("offset", "0"); p.set("count", "true");
      api("GET", `/api/memories?${p}`)
        .then((c) => { if (asked === counting) meta.textContent = `${c.total} memories · ${shown}`; })
        .catch((e) => { if (asked === counting) meta.textContent = `${shown} · count failed: ${e.message}`; });
    }
    if (!items.length) list.append(el("li", { class: "meta" }, "No memories match."));
  }

  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    offset = 0;
    params.delete("selection");
    const q = form.elements.q.value.trim();
    history.replaceState(null, "", q ? `#/memories/?q=${encodeURIComponent(q)}` : "#/memories");
    notice("");
    load().catch((e) => notice(e.message));
  });
  await load();
}
