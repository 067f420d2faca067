// Documents and connectors: what was ingested (status, chunks, errors), add a document (URL,
// pasted text, or a local path for a local caller), connectors with their last sync and error,
// and a sync button. The list refreshes itself while any document is still being ingested.
"use strict";
import { api, can, el, notice, fmtDate } from "./api.js";

const PAGE = 25;
const BUSY = new Set(["queued", "extracting", "chunking", "embedding", "indexing"]);
const STATUSES = ["queued", "extracting", "chunking", "embedding", "indexing", "done", "failed", "deleted"];
const badge = (s) => el("span", { class: `badge ${s === "done" || s === "idle" ? "ok" : s === "failed" || s === "error" ? "bad" : "warn"}` }, s);

export async function render(main) {
  if (!can("documents") && !can("connectors")) {
    main.append(el("h2", {}, "Documents"), el("p", { class: "meta" }, "Your token may not read documents or connectors."));
    return null;
  }
  let offset = 0;
  let timer = null;
  const docsBox = el("section", { class: "card", "aria-labelledby": "docs-title" });
  const chunksBox = el("section", { id: "doc-chunks", class: "card", "aria-label": "Chunks", hidden: true });
  const connBox = el("section", { class: "card", "aria-labelledby": "conn-title" });
  main.append(el("h2", {}, "Documents and connectors"));
  if (can("documents")) main.append(addForm(), docsBox, chunksBox);
  if (can("connectors")) main.append(connBox);

  function addForm() {
    const local = can("local");
    const kind = el("select", { id: "doc-kind", name: "kind" },
      el("option", { value: "url" }, "a URL"), el("option", { value: "content" }, "pasted text"), local ? el("option", { value: "path" }, "a file on this machine") : "");
    const out = el("p", { id: "doc-add-out", class: "error", role: "status" });
    const form = el("form", { id: "doc-add", class: "card stack", "aria-labelledby": "doc-add-title" },
      el("h3", { id: "doc-add-title" }, "Add a document"),
      el("div", { class: "row" },
        el("div", { class: "field" }, el("label", { for: "doc-kind" }, "Source"), kind),
        el("div", { class: "field", "data-for": "url" }, el("label", { for: "doc-url" }, "URL"), el("input", { id: "doc-url", name: "url", type: "url", size: 40, placeholder: "a web address" })),
        el("div", { class: "field", "data-for": "path", hidden: true }, el("label", { for: "doc-path" }, "Path"), el("input", { id: "doc-path", name: "path", size: 40 })),
        el("div", { class: "field" }, el("label", { for: "doc-title" }, "Title"), el("input", { id: "doc-title", name: "title", size: 24 })),
        el("div", { class: "field" }, el("label", { for: "doc-project" }, "Project"), el("input", { id: "doc-project", name: "project", size: 10 }))),
      el("div", { class: "field", "data-for": "content", hidden: true }, el("label", { for: "doc-content" }, "Text (markdown, text or HTML)"), el("textarea", { id: "doc-content", name: "content", rows: 5 })),
      el("button", { type: "submit" }, "Add document"), out);
    const show = () => { for (const f of form.querySelectorAll("[data-for]")) f.hidden = f.dataset.for !== kind.value; };
    kind.addEventListener("change", show);
    form.addEventListener("submit", async (ev) => {
      ev.preventDefault();
      out.textContent = "";
      const v = (n) => form.elements[n].value.trim();
      const body = { [kind.value]: kind.value === "content" ? form.elements.content.value : v(kind.value) };
      if (v("title")) body.title = v("title");
      if (v("project")) body.project = v("project");
      try {
        const r = await api("POST", "/api/documents", body);
        notice(`Queued “${r.document.title || r.document.source_url || r.document.id}”${r.created ? "" : " (again: its chunks will be replaced)"}`);
        for (const n of ["url", "path", "content", "title"]) form.elements[n].value = "";
        offset = 0;
        await loadDocs();
      } catch (e) { out.textContent = e.message; }
    });
    return form;
  }

  async function showChunks(d) {
    const out = await api("GET", `/api/documents/${encodeURIComponent(d.id)}/chunks`);
    chunksBox.hidden = false;
    chunksBox.replaceChildren(el("h3", {}, `Chunks of ${out.title || d.source_url || d.id} (${out.count})`),
      el("ol", { class: "results compact" }, ...out.chunks.map((c) => el("li", {},
        el("div", { class: "body" },
          c.heading_path.length ? el("div", { class: "meta" }, c.heading_path.join(" › ")) : "",
          el("a", { href: `#/memory/${encodeURIComponent(c.memory_id)}`, class: "content" }, c.content.length > 300 ? `${c.content.slice(0, 300)}…` : c.content),
          c.deleted ? el("span", { class: "tag bad" }, "forgotten") : "")))));
    chunksBox.focus();
  }

  async function remove(d) {
    if (!confirm(`Delete “${d.title || d.source_url}” and the chunk memories only it holds? This cannot be undone.`)) return;
    const r = await api("DELETE", `/api/documents/${encodeURIComponent(d.id)}`);
    notice(`Deleted the document and ${r.memories_deleted ?? 0} chunk memories`);
    chunksBox.hidden = true;
    await loadDocs();
  }

  async function loadDocs() {
    if (!can("documents")) return;
    const status = docsBox.querySelector("#doc-status")?.value || "";
    const p = new URLSearchParams({ limit: PAGE, offset });
    if (status) p.set("status", status);
    const out = await api("GET", `/api/documents?${p}`);
    const filter = el("select", { id: "doc-status", onchange: () => { offset = 0; loadDocs().catch((e) => notice(e.message)); } },
      el("option", { value: "" }, "any"), ...STATUSES.map((s) => el("option", { value: s }, s)));
    filter.value = status;
    const rows = out.items.map((d) => el("tr", { "data-id": d.id },
      el("td", {}, el("div", {}, d.title || "(untitled)"), el("div", { class: "meta mono" }, d.source_url || d.source_type)),
      el("td", {}, badge(d.status), d.error ? el("div", { class: "error doc-error" }, d.error) : ""),
      el("td", { class: "num" }, String(d.chunk_count)),
      el("td", {}, d.project || ""),
      el("td", {}, fmtDate(d.completed_at || d.updated_at)),
      el("td", {},
        el("button", { type: "button", disabled: !d.chunk_count, "aria-label": `Chunks of ${d.title || d.source_url || d.id}`, onclick: () => showChunks(d).catch((e) => notice(e.message)) }, "Chunks"),
        el("button", { type: "button", class: "danger", "aria-label": `Delete ${d.title || d.source_url || d.id}`, onclick: () => remove(d).catch((e) => notice(e.message)) }, "Delete"))));
    docsBox.replaceChildren(
      el("h3", { id: "docs-title" }, "Documents"),
      el("div", { class: "row" }, el("label", { for: "doc-status" }, "Status"), filter,
        el("span", { id: "docs-meta", class: "meta", "aria-live": "polite" }, `${out.total} documents${out.total ? ` · showing ${offset + 1}–${offset + out.items.length}` : ""}`)),
      out.items.length
        ? el("table", { id: "docs" }, el("thead", {}, el("tr", {}, ...["document", "status", "chunks", "project", "updated", ""].map((h) => el("th", {}, h)))), el("tbody", {}, ...rows))
        : el("p", { class: "meta" }, "No documents yet: add one above, or register a folder as a connector."),
      el("div", { class: "pager" },
        el("button", { type: "button", disabled: offset === 0, onclick: () => { offset = Math.max(0, offset - PAGE); loadDocs().catch((e) => notice(e.message)); } }, "← Newer"),
        el("button", { type: "button", disabled: offset + PAGE >= out.total, onclick: () => { offset += PAGE; loadDocs().catch((e) => notice(e.message)); } }, "Older →")));
    clearTimeout(timer);
    if (out.items.some((d) => BUSY.has(d.status))) timer = setTimeout(() => loadDocs().catch((e) => notice(e.message)), 1500);
  }

  async function sync(c, full) {
    const out = connBox.querySelector("#conn-out");
    out.textContent = `Syncing ${c.name}…`;
    try {
      const r = await api("POST", `/api/connectors/${encodeURIComponent(c.id)}/sync${full ? "/full" : ""}`);
      out.textContent = `${c.name}: ${r.scanned} scanned, ${r.queued} queued, ${r.unchanged} unchanged, ${r.deleted} removed, ${r.skipped} skipped (${r.took_ms.toFixed(0)} ms)`;
      await Promise.all([loadConnectors(), loadDocs()]);
      connBox.querySelector("#conn-out").textContent = out.textContent;
    } catch (e) {
      await loadConnectors();
      connBox.querySelector("#conn-out").textContent = `${c.name}: ${e.message}`;
    }
  }

  async function loadConnectors() {
    if (!can("connectors")) return;
    const out = await api("GET", "/api/connectors");
    const rows = out.items.map((c) => el("tr", { "data-id": c.id },
      el("td", {}, el("div", {}, c.name), el("div", { class: "meta mono" }, `${c.provider}${c.config.root ? ": " + c.config.root : ""}`)),
      el("td", {}, badge(c.status), c.last_error ? el("div", { class: "error conn-error" }, c.last_error, el("span", { class: "meta" }, ` (${fmtDate(c.last_error_at)})`)) : ""),
      el("td", { class: "num" }, String(c.documents)),
      el("td", {}, c.last_sync_at ? fmtDate(c.last_sync_at) : "never"),
      el("td", {},
        el("button", { type: "button", "aria-label": `Sync ${c.name}`, onclick: () => sync(c, false) }, "Sync"),
        el("button", { type: "button", "aria-label": `Full sync of ${c.name}`, onclick: () => sync(c, true) }, "Full sync"))));
    connBox.replaceChildren(
      el("h3", { id: "conn-title" }, "Connectors"),
      out.items.length
        ? el("table", { id: "connectors" }, el("thead", {}, el("tr", {}, ...["connector", "status", "documents", "last sync", ""].map((h) => el("th", {}, h)))), el("tbody", {}, ...rows))
        : el("p", { class: "meta" }, "No connectors. Register a folder with signet connector add PATH (or POST /api/connectors)."),
      el("p", { id: "conn-out", class: "meta", role: "status" }),
      can("local") ? connectorForm() : "");
  }

  function connectorForm() {
    const form = el("form", { id: "conn-add", class: "row", "aria-label": "Register a folder" },
      el("div", { class: "field" }, el("label", { for: "conn-root" }, "Folder to register"), el("input", { id: "conn-root", required: true, size: 36 })),
      el("div", { class: "field" }, el("label", { for: "conn-name" }, "Name"), el("input", { id: "conn-name", size: 14 })),
      el("button", { type: "submit" }, "Add connector"));
    form.addEventListener("submit", async (ev) => {
      ev.preventDefault();
      const name = form.querySelector("#conn-name").value.trim();
      try {
        await api("POST", "/api/connectors", { provider: "filesystem", config: { root: form.querySelector("#conn-root").value.trim() }, ...(name ? { name } : {}) });
        await loadConnectors();
      } catch (e) { connBox.querySelector("#conn-out").textContent = e.message; }
    });
    return form;
  }

  await Promise.all([loadDocs(), loadConnectors()]);
  return () => clearTimeout(timer);
}
