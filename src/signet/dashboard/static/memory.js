// One memory: its fields, edit (with a reason), pin, tags, importance, history with diffs,
// similar memories, forget (preview + confirm) and recover.
"use strict";
import { api, can, el, notice, fmtDate, TYPES } from "./api.js";

/** Word-level diff (longest common subsequence): [op, text] with op in "=", "-", "+". */
export function diffWords(a, b) {
  const x = (a || "").split(/(\s+)/), y = (b || "").split(/(\s+)/);
  if (x.length * y.length > 4e6) return [["-", a], ["+", b]];
  const n = x.length, m = y.length;
  const t = Array.from({ length: n + 1 }, () => new Uint32Array(m + 1));
  for (let i = n - 1; i >= 0; i--) for (let j = m - 1; j >= 0; j--) t[i][j] = x[i] === y[j] ? t[i + 1][j + 1] + 1 : Math.max(t[i + 1][j], t[i][j + 1]);
  const out = [];
  const push = (op, s) => { if (out.length && out[out.length - 1][0] === op) out[out.length - 1][1] += s; else out.push([op, s]); };
  let i = 0, j = 0;
  while (i < n && j < m) {
    if (x[i] === y[j]) { push("=", x[i]); i++; j++; } else if (t[i + 1][j] >= t[i][j + 1]) push("-", x[i++]); else push("+", y[j++]);
  }
  while (i < n) push("-", x[i++]);
  while (j < m) push("+", y[j++]);
  return out;
}

/** A history event's metadata in words: the version step, changed fields, the values before. */
function describe(meta) {
  const parts = [];
  if (meta.fromVersion && meta.toVersion) parts.push(`v${meta.fromVersion} → v${meta.toVersion}`);
  if (Array.isArray(meta.fields) && meta.fields.length) parts.push(`changed ${meta.fields.join(", ")}`);
  if (meta.previous && typeof meta.previous === "object") {
    const was = Object.entries(meta.previous).filter(([k]) => k !== "content").map(([k, v]) => `${k} ${Array.isArray(v) ? v.join(", ") || "none" : v}`);
    if (was.length) parts.push(`was ${was.join(", ")}`);
  }
  if (meta.hard) parts.push("hard delete");
  const rest = Object.entries(meta).filter(([k]) => !["fromVersion", "toVersion", "fields", "previous", "hard"].includes(k) && meta[k] !== null);
  for (const [k, v] of rest) parts.push(`${k}: ${typeof v === "object" ? JSON.stringify(v) : v}`);
  return parts.length ? el("div", { class: "meta" }, parts.join(" · ")) : "";
}

function diffView(a, b) {
  return el("p", { class: "diff" }, ...diffWords(a, b).map(([op, s]) => (op === "=" ? s : el(op === "+" ? "ins" : "del", {}, s))));
}

export async function render(main, id) {
  const m = await api("GET", `/api/memory/${encodeURIComponent(id)}`);
  const title = el("h2", {}, "Memory ", el("code", {}, m.id.slice(0, 8)), m.is_deleted ? el("span", { class: "tag bad" }, "forgotten") : "", m.pinned ? el("span", { class: "tag pin" }, "pinned") : "");
  const facts = el("dl", { class: "facts" }, ...[
    ["Type", m.type], ["Importance", `${m.importance} (effective ${m.effective_importance.toFixed(2)})`], ["Tags", (m.tags || []).join(", ") || "—"],
    ["Project", m.project || "—"], ["Who", m.who || "—"], ["Why", m.why || "—"], ["Source", `${m.source_type || "—"}${m.source_id ? " · " + m.source_id : ""}`],
    ["Created", fmtDate(m.created_at)], ["Updated", `${fmtDate(m.updated_at)} by ${m.updated_by || "—"}`], ["Accessed", `${m.access_count}× · last ${fmtDate(m.last_accessed) || "never"}`],
    ["Version", String(m.version)],
  ].flatMap(([k, v]) => [el("dt", {}, k), el("dd", {}, v)]));
  const content = el("blockquote", { id: "memory-content", class: "content" }, m.content);
  const left = el("div", { class: "col" }, content, facts);
  const right = el("div", { class: "col" });
  main.append(el("p", {}, el("a", { href: "#/memories" }, "← Memories")), title, el("div", { class: "split" }, left, right));

  if (can("modify") && !m.is_deleted) {
    const form = el("form", { id: "edit", class: "stack", "aria-label": "Edit this memory" },
      el("h3", {}, "Edit"),
      el("label", { for: "e-content" }, "Content"), el("textarea", { id: "e-content", name: "content", rows: 4 }, m.content),
      el("div", { class: "row" },
        el("div", { class: "field" }, el("label", { for: "e-type" }, "Type"), el("select", { id: "e-type", name: "type" }, ...TYPES.map((t) => el("option", { value: t, selected: t === m.type }, t)))),
        el("div", { class: "field" }, el("label", { for: "e-importance" }, "Importance"), el("input", { id: "e-importance", name: "importance", type: "number", min: 0, max: 1, step: 0.05, value: String(m.importance) })),
        el("div", { class: "field" }, el("label", { for: "e-tags" }, "Tags"), el("input", { id: "e-tags", name: "tags", value: (m.tags || []).join(", ") })),
        el("div", { class: "field check" }, el("input", { id: "e-pinned", name: "pinned", type: "checkbox", checked: m.pinned }), el("label", { for: "e-pinned" }, "Pinned"))),
      el("label", { for: "e-reason" }, "Reason (kept in the history)"), el("input", { id: "e-reason", name: "reason", required: true }),
      el("button", { type: "submit" }, "Save changes"));
    form.addEventListener("submit", async (ev) => {
      ev.preventDefault();
      const f = form.elements;
      const body = { reason: f.reason.value.trim(), if_version: m.version };
      if (f.content.value.trim() !== m.content) body.content = f.content.value.trim();
      if (f.type.value !== m.type) body.type = f.type.value;
      if (Number(f.importance.value) !== m.importance) body.importance = Number(f.importance.value);
      const tags = f.tags.value.split(",").map((t) => t.trim()).filter(Boolean);
      if (tags.join(",") !== (m.tags || []).join(",")) body.tags = tags;
      if (f.pinned.checked !== m.pinned) body.pinned = f.pinned.checked;
      try {
        const out = await api("PATCH", `/api/memory/${encodeURIComponent(m.id)}`, body);
        if (out.status !== "updated" && out.status !== "unchanged") throw new Error(`${out.status}${out.error ? ": " + out.error : ""}`);
        main.replaceChildren();
        await render(main, id);
        notice(out.status === "updated" ? `Saved as version ${out.new_version}` : "Nothing changed");
      } catch (e) { notice(e.message); }
    });
    right.append(form);
  }

  const actions = el("div", { class: "actions" });
  if (can("forget") && !m.is_deleted) actions.append(el("button", { type: "button", class: "danger", onclick: () => forget(m, main, id) }, "Forget…"));
  if (can("recover") && m.is_deleted) actions.append(el("button", { type: "button", onclick: () => recover(m, main, id) }, "Recover"));
  right.append(actions);

  const hist = el("ol", { id: "history", class: "history" });
  right.append(el("h3", {}, "History"), hist);
  const h = await api("GET", `/api/memory/${encodeURIComponent(m.id)}/history`);
  for (const ev of [...h.events].reverse()) {
    hist.append(el("li", {},
      el("div", { class: "meta" }, `${fmtDate(ev.created_at)} · ${ev.event} · ${ev.changed_by || "—"}${ev.reason ? " — " + ev.reason : ""}`),
      ev.old_content !== null && ev.new_content !== null && ev.old_content !== ev.new_content ? diffView(ev.old_content, ev.new_content) : "",
      ev.metadata ? describe(ev.metadata) : ""));
  }

  const sim = el("ul", { id: "similar", class: "results compact" });
  left.append(el("h3", {}, "Similar memories"), sim);
  api("GET", `/memory/similar?id=${encodeURIComponent(m.id)}&limit=6`).then((out) => {
    const rows = out.results.filter((r) => r.id !== m.id);
    sim.replaceChildren(...rows.map((r) => el("li", {}, el("span", { class: "score" }, r.score.toFixed(3)), el("a", { href: `#/memory/${encodeURIComponent(r.id)}` }, r.content))));
    if (!rows.length) sim.append(el("li", { class: "meta" }, out.vector_search && !out.vector_search.available ? `No vectors: ${out.vector_search.reason}` : "None found."));
  }).catch((e) => sim.replaceChildren(el("li", { class: "meta" }, e.message)));
}

async function forget(m, main, id) {
  try {
    const preview = await api("POST", "/api/memory/forget", { mode: "preview", ids: [m.id] });
    const dialog = el("dialog", { id: "forget-dialog", "aria-labelledby": "forget-title" });
    const reason = el("input", { id: "forget-reason", value: "dashboard: forgotten by hand", required: true });
    dialog.append(el("form", { method: "dialog", class: "stack" },
      el("h3", { id: "forget-title" }, `Forget ${preview.count} memory?`),
      el("p", {}, "It is soft-deleted: you can recover it from this page during the retention window."),
      el("blockquote", {}, preview.candidates.map((c) => c.content).join("\n")),
      el("label", { for: "forget-reason" }, "Reason"), reason,
      el("div", { class: "actions" },
        el("button", { value: "cancel", type: "submit" }, "Cancel"),
        el("button", { value: "confirm", type: "submit", class: "danger", id: "forget-confirm" }, "Forget"))));
    document.body.append(dialog);
    dialog.addEventListener("close", async () => {
      dialog.remove();
      if (dialog.returnValue !== "confirm") return;
      try {
        await api("POST", "/api/memory/forget", { mode: "execute", ids: [m.id], reason: reason.value.trim() || "dashboard", confirm_token: preview.confirm_token });
        main.replaceChildren();
        await render(main, id);
        notice("Forgotten. Recover it with the button below.");
      } catch (e) { notice(e.message); }
    });
    dialog.showModal();
  } catch (e) { notice(e.message); }
}

async function recover(m, main, id) {
  try {
    await api("POST", `/api/memory/${encodeURIComponent(m.id)}/recover`, { reason: "dashboard: recovered" });
    main.replaceChildren();
    await render(main, id);
    notice("Recovered.");
  } catch (e) { notice(e.message); }
}
