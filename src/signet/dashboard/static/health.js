// Health and operations: status warnings, diagnostics per domain, the pipeline queue with dead
// jobs (requeue), embedding coverage, and a live tail of the daemon's log (server-sent events).
"use strict";
import { api, can, el, notice, fmtDate, streamEvents } from "./api.js";

function card(title, ...body) {
  return el("section", { class: title === "Diagnostics" || title === "Analytics" ? "card wide" : "card", "aria-label": title }, el("h3", {}, title), ...body);
}
const kv = (rows) => el("table", { class: "kv" }, el("tbody", {}, ...rows.map(([k, v]) => el("tr", {}, el("th", { scope: "row" }, k), el("td", {}, v)))));
const badge = (s) => el("span", { class: `badge ${/ok|ready|healthy|running/.test(s) ? "ok" : /degraded|warn|waiting|building|backoff/.test(s) ? "warn" : "bad"}` }, s);

export async function render(main) {
  const grid = el("div", { class: "grid" });
  const logList = el("ol", { id: "log-tail", class: "log", tabindex: 0, "aria-live": "polite", "aria-label": "Log tail" });
  const logState = el("span", { id: "log-state", class: "meta" }, "connecting…");
  main.append(el("h2", {}, "Health and operations"), grid, card("Log tail", logState, logList));
  const fail = (title) => (e) => card(title, el("p", { class: "meta" }, e.status === 403 ? "Your token may not read this." : e.message));

  const [st, diag, pipe, emb] = await Promise.all([
    api("GET", "/api/status").catch((e) => e), api("GET", "/api/diagnostics").catch((e) => e),
    api("GET", "/api/pipeline/status").catch((e) => e), api("GET", "/api/embeddings/status").catch((e) => e),
  ]);
  grid.append(st instanceof Error ? fail("Status")(st) : card("Status",
    el("p", {}, badge(st.status), ` version ${st.version} · up ${Math.round(st.uptime_s)} s`),
    st.warnings.length ? el("ul", { id: "warnings", class: "warnings" }, ...st.warnings.map((w) => el("li", {}, w))) : el("p", { class: "meta" }, "No warnings."),
    kv([["Memories", `${st.memories.active ?? 0} live · ${st.memories.deleted ?? 0} forgotten · ${st.memories.pinned ?? 0} pinned`],
      ["Vector search", st.vector_search.available ? "on" : `off: ${st.vector_search.reason}`],
      ["Keyword index", `${st.keyword_index.state} · ${st.keyword_index.rows} rows`]])));
  grid.append(emb instanceof Error ? fail("Embeddings")(emb) : card("Embeddings",
    el("p", {}, badge(emb.state), ` ${emb.provider} · ${emb.model}`),
    el("progress", { max: 1, value: emb.coverage, "aria-label": "Embedding coverage" }),
    el("p", { class: "meta" }, `${emb.embedded} of ${emb.memories} live memories embedded (${(emb.coverage * 100).toFixed(1)} %), ${emb.pending} pending`)));
  if (pipe instanceof Error) grid.append(fail("Pipeline queue")(pipe));
  else {
    const dead = el("div", { id: "dead-jobs" });
    grid.append(card("Pipeline queue",
      el("p", {}, badge(pipe.state), ` ${pipe.mode}${pipe.reason ? " — " + pipe.reason : ""}`),
      kv(Object.entries(pipe.queue.by_status).map(([k, v]) => [k, String(v)]).concat([["oldest pending", pipe.queue.oldest_pending ? fmtDate(pipe.queue.oldest_pending) : "—"]])),
      dead));
    if (can("repair")) loadDead(dead).catch((e) => dead.replaceChildren(el("p", { class: "meta" }, e.message)));
  }

  grid.append(diag instanceof Error ? fail("Diagnostics")(diag) : card("Diagnostics",
    el("p", {}, badge(diag.status), ` score ${diag.score.toFixed(2)} · checked ${fmtDate(diag.checked_at)}`),
    el("table", { class: "domains" }, el("thead", {}, el("tr", {}, el("th", {}, "Domain"), el("th", {}, "Status"), el("th", {}, "Findings"))),
      el("tbody", {}, ...Object.entries(diag.domains).filter(([, d]) => d.applicable).map(([name, d]) =>
        el("tr", {}, el("td", {}, name), el("td", {}, badge(d.status)), el("td", {}, d.findings.join("; ") || "—")))))));
  if (can("analytics")) analytics().then((c) => grid.append(c)).catch((e) => grid.append(fail("Analytics")(e)));
  const ctrl = new AbortController();
  tail(logList, logState, ctrl.signal);
  return () => ctrl.abort();
}

/** A horizontal bar for a table cell (its number is in the next cell: the bar is decoration). */
function bar(value, max) {
  const fill = el("span", { class: "fill" });
  fill.style.width = `${max > 0 ? Math.max(1, (100 * value) / max) : 0}%`; // CSSOM: the CSP allows it
  return el("span", { class: "bar", "aria-hidden": "true" }, fill);
}

async function analytics() {
  const [lat, use] = await Promise.all([api("GET", "/api/analytics/latency"), api("GET", "/api/analytics/usage")]);
  const ops = Object.entries(lat.operations).filter(([, o]) => o.count > 0);
  const maxP95 = Math.max(0, ...ops.map(([, o]) => o.p95 || 0));
  const routes = Object.entries(use.endpoints).sort((a, b) => b[1].calls - a[1].calls).slice(0, 8);
  const maxCalls = Math.max(0, ...routes.map(([, r]) => r.calls));
  return card("Analytics",
    el("p", { class: "meta" }, `${use.totals.requests} requests, ${use.totals.errors} errors since ${fmtDate(use.since)}`),
    el("h4", {}, "Latency (ms, p95)"),
    ops.length ? el("table", { class: "bars" }, el("thead", {}, el("tr", {}, el("th", {}, "Operation"), el("th", {}, "p95"), el("th", {}, "p50 / p95"), el("th", {}, "Count"))),
      el("tbody", {}, ...ops.map(([name, o]) => el("tr", {}, el("td", {}, name), el("td", {}, bar(o.p95 || 0, maxP95)), el("td", { class: "num" }, `${(o.p50 || 0).toFixed(1)} / ${(o.p95 || 0).toFixed(1)}`), el("td", { class: "num" }, String(o.count))))))
      : el("p", { class: "meta" }, "No timed operations yet."),
    el("h4", {}, "Busiest endpoints"),
    el("table", { class: "bars" }, el("thead", {}, el("tr", {}, el("th", {}, "Endpoint"), el("th", {}, "Share"), el("th", {}, "Calls"), el("th", {}, "Errors"), el("th", {}, "Mean ms"))),
      el("tbody", {}, ...routes.map(([name, r]) => el("tr", {}, el("td", { class: "mono" }, name), el("td", {}, bar(r.calls, maxCalls)), el("td", { class: "num" }, String(r.calls)), el("td", { class: "num" }, String(r.errors)), el("td", { class: "num" }, r.mean_ms.toFixed(1)))))));
}

async function loadDead(box) {
  const out = await api("GET", "/api/pipeline/jobs?status=dead&limit=20");
  box.replaceChildren(el("h4", {}, `Dead jobs (${out.total})`));
  if (!out.items.length) return;
  box.append(el("ul", { class: "jobs" }, ...out.items.map((j) => el("li", {},
    el("code", {}, j.id.slice(0, 8)), ` ${j.job_type} · ${j.attempts}/${j.max_attempts} · `, el("span", { class: "error" }, j.error || ""),
    el("button", { type: "button", onclick: async () => { try { await api("POST", "/api/repair/requeue-dead", { job_id: j.id }); notice("Requeued."); await loadDead(box); } catch (e) { notice(e.message); } } }, "Requeue")))));
}

function addLine(list, e) {
  list.append(el("li", { class: `lvl-${e.level.toLowerCase()}` }, el("time", {}, e.ts.slice(11, 23)), el("b", {}, e.level), el("span", { class: "logger" }, e.logger), el("span", {}, e.message)));
  while (list.childElementCount > 300) list.firstElementChild.remove();
  list.scrollTop = list.scrollHeight;
}

async function tail(list, state, signal) {
  try {
    const recent = await api("GET", "/api/logs?limit=30");
    for (const e of recent.entries) addLine(list, e);
    const after = recent.last_seq !== null && recent.last_seq !== undefined ? `?after=${recent.last_seq}` : "";
    state.textContent = "live";
    await streamEvents(`/api/logs/stream${after}`, signal, (event, data) => {
      if (event === "log") addLine(list, JSON.parse(data));
      else if (event === "dropped") state.textContent = `some lines were dropped (${JSON.parse(data).reason})`;
      else if (event === "end") state.textContent = "the daemon is stopping";
    });
  } catch (e) {
    if (e.name !== "AbortError") state.textContent = e.status === 403 ? "Your token may not read the log." : `log tail stopped: ${e.message}`;
  }
}
