// Knowledge graph: entity search and type filter, one entity's aliases, aspects, attributes
// (current and superseded) and the memories it leads to, and its neighbourhood as a small
// node-link SVG that grows as you expand neighbours; the agent's entity communities below the
// list (recomputed on demand by a caller who may write).
"use strict";
import { api, can, el, notice, fmtDate } from "./api.js";

const PAGE = 50;
const COMMUNITY_PAGE = 20;
const QUALITY = { strong: "ok", moderate: "", fragmented: "warn" };
const SVG = "http://www.w3.org/2000/svg";
const W = 640, H = 420;

function svg(tag, attrs = {}, ...children) {
  const e = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) if (v !== undefined && v !== null) e.setAttribute(k, String(v));
  for (const c of children) e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return e;
}

/** A few hundred steps of a plain force layout (n is tens of nodes): springs on edges,
 * repulsion between nodes, the first node pinned at the centre. Deterministic per graph. */
function layout(nodes, edges) {
  const idx = new Map(nodes.map((n, i) => [n.id, i]));
  nodes.forEach((n, i) => {
    if (n.x === undefined) {
      const a = (i * 2.399963) % (2 * Math.PI); // golden angle: spread, no randomness
      const r = 60 + 12 * Math.sqrt(i);
      const from = n.parent ? nodes[idx.get(n.parent)] : { x: W / 2, y: H / 2 };
      n.x = from.x + r * Math.cos(a);
      n.y = from.y + r * Math.sin(a);
    }
  });
  for (let step = 0; step < 250; step++) {
    const cool = 1 - step / 250;
    for (let i = 0; i < nodes.length; i++) {
      for (let j = i + 1; j < nodes.length; j++) {
        const a = nodes[i], b = nodes[j];
        let dx = a.x - b.x, dy = a.y - b.y;
        const d2 = Math.max(dx * dx + dy * dy, 25);
        const f = (2600 / d2) * cool;
        const d = Math.sqrt(d2);
        dx /= d; dy /= d;
        a.x += dx * f; a.y += dy * f; b.x -= dx * f; b.y -= dy * f;
      }
    }
    for (const e of edges) {
      const a = nodes[idx.get(e.a)], b = nodes[idx.get(e.b)];
      const dx = b.x - a.x, dy = b.y - a.y;
      const d = Math.sqrt(dx * dx + dy * dy) || 1;
      const f = ((d - 90) / d) * 0.08 * cool;
      a.x += dx * f; a.y += dy * f; b.x -= dx * f; b.y -= dy * f;
    }
    nodes[0].x = W / 2; nodes[0].y = H / 2;
    for (const n of nodes) { n.x = Math.min(W - 30, Math.max(30, n.x)); n.y = Math.min(H - 20, Math.max(20, n.y)); }
  }
}

export async function render(main, arg) {
  let offset = 0;
  let current = null;
  const graph = { nodes: [], edges: [], expanded: new Set() };

  const types = el("datalist", { id: "kg-types" });
  const form = el("form", { id: "kg-search", class: "row", role: "search", "aria-label": "Search entities" },
    el("div", { class: "field" }, el("label", { for: "kg-q" }, "Entity name or alias"), el("input", { id: "kg-q", name: "q", type: "search", autocomplete: "off" })),
    el("div", { class: "field" }, el("label", { for: "kg-type" }, "Type"), el("input", { id: "kg-type", name: "kind", list: "kg-types", size: 12, placeholder: "any" })),
    types,
    el("button", { type: "submit" }, "Find"));
  const meta = el("p", { id: "kg-meta", class: "meta", "aria-live": "polite" });
  const list = el("ul", { id: "kg-entities", class: "results compact", "aria-label": "Entities" });
  const pager = el("div", { class: "pager" });
  const detail = el("section", { id: "kg-detail", "aria-label": "Entity", class: "stack" },
    el("p", { class: "meta" }, "Pick an entity to see its aspects, attributes, memories and neighbours."));
  let commOffset = 0;
  const commMeta = el("p", { id: "kg-comm-meta", class: "meta", "aria-live": "polite" });
  const commList = el("ul", { id: "kg-communities", class: "results compact", "aria-label": "Communities" });
  const commPager = el("div", { class: "pager" });
  const recompute = can("remember") ? el("button", { id: "kg-comm-refresh", type: "button", onclick: () => refreshCommunities().catch((x) => { recompute.disabled = false; notice(x.message); }) }, "Recompute communities") : "";
  const communities = el("section", { id: "kg-comm", "aria-labelledby": "kg-comm-title" },
    el("h3", { id: "kg-comm-title" }, "Communities"),
    el("p", { class: "meta" }, "Entities your memories keep naming together, grouped by Louvain clustering; largest first."),
    commMeta, recompute, commList, commPager);
  main.append(el("h2", {}, "Knowledge graph"),
    el("div", { class: "split kg" }, el("section", { "aria-label": "Entities list" }, form, meta, list, pager, communities), detail));

  async function loadCommunities() {
    const out = await api("GET", `/api/knowledge/communities?limit=${COMMUNITY_PAGE}&offset=${commOffset}&members=8`);
    commMeta.textContent = out.computed_at
      ? `${out.total} ${out.total === 1 ? "community" : "communities"} · computed ${fmtDate(out.computed_at)}`
      : "Not computed yet: the maintenance worker computes them when the graph changes.";
    commList.replaceChildren(...out.communities.map((c) => el("li", { "data-id": c.id },
      el("div", { class: "body" },
        el("strong", {}, c.name), " ",
        c.quality ? el("span", { class: `badge ${QUALITY[c.quality] || ""}` }, c.quality) : "",
        el("span", { class: "meta" }, ` ${c.size} ${c.size === 1 ? "entity" : "entities"}`),
        el("div", { class: "meta" }, "members: ", ...c.members.flatMap((m, i) => [i ? ", " : "",
          el("a", { href: `#/knowledge/${encodeURIComponent(m.id)}`, onclick: (ev) => { ev.preventDefault(); select(m.id, true).catch((x) => notice(x.message)); } }, m.name)]),
          c.size > c.members.length ? ` and ${c.size - c.members.length} more` : "")))));
    if (out.computed_at && !out.communities.length) commList.append(el("li", { class: "meta" }, "No communities: too few entities are named together yet."));
    commPager.replaceChildren(...(out.total > COMMUNITY_PAGE ? [
      el("button", { type: "button", disabled: commOffset === 0, onclick: () => { commOffset = Math.max(0, commOffset - COMMUNITY_PAGE); loadCommunities().catch((x) => notice(x.message)); } }, "← Previous communities"),
      el("button", { type: "button", disabled: commOffset + COMMUNITY_PAGE >= out.total, onclick: () => { commOffset += COMMUNITY_PAGE; loadCommunities().catch((x) => notice(x.message)); } }, "Next communities →")] : []));
  }

  async function refreshCommunities() {
    recompute.disabled = true;
    commMeta.textContent = "Computing communities…";
    const done = await api("POST", "/api/knowledge/communities/refresh");
    commOffset = 0;
    await loadCommunities();
    recompute.disabled = false;
    notice(`Computed ${done.communities} communities of ${done.members} entities in ${(done.took_ms / 1000).toFixed(1)} s.`);
  }

  async function loadList() {
    const p = new URLSearchParams({ limit: PAGE, offset });
    const q = form.elements.q.value.trim(), kind = form.elements.kind.value.trim();
    if (q) p.set("q", q);
    if (kind) p.set("kind", kind);
    const out = await api("GET", `/api/knowledge/entities?${p}`);
    meta.textContent = `${out.total} ${out.total === 1 ? "entity" : "entities"} of agent ${out.agent_id}${out.total ? ` · showing ${offset + 1}–${offset + out.entities.length}` : ""}`;
    const seen = new Set([...types.children].map((o) => o.value));
    for (const e of out.entities) if (e.entity_type && !seen.has(e.entity_type)) { seen.add(e.entity_type); types.append(el("option", { value: e.entity_type })); }
    list.replaceChildren(...out.entities.map((e) => el("li", {},
      el("div", { class: "body" },
        el("a", { href: `#/knowledge/${encodeURIComponent(e.id)}`, onclick: (ev) => { ev.preventDefault(); select(e.id, true).catch((x) => notice(x.message)); } }, e.name),
        el("div", { class: "meta" }, `${e.entity_type || "untyped"} · ${e.mentions} mention${e.mentions === 1 ? "" : "s"}`,
          e.aliases.length ? ` · also ${e.aliases.join(", ")}` : "", e.pinned ? el("span", { class: "tag pin" }, e.pinned) : "")))));
    if (!out.entities.length) list.append(el("li", { class: "meta" }, "No entities match. They appear as memories mention names (and as the knowledge builder extracts them)."));
    pager.replaceChildren(
      el("button", { type: "button", disabled: offset === 0, onclick: () => { offset = Math.max(0, offset - PAGE); loadList().catch((x) => notice(x.message)); } }, "← Previous"),
      el("button", { type: "button", disabled: offset + PAGE >= out.total, onclick: () => { offset += PAGE; loadList().catch((x) => notice(x.message)); } }, "Next →"));
  }

  function attributeRows(attrs) {
    return el("table", {},
      el("thead", {}, el("tr", {}, el("th", {}, "key"), el("th", {}, "value"), el("th", {}, "status"), el("th", {}, "source"))),
      el("tbody", {}, ...attrs.map((a) => el("tr", { class: a.status === "active" ? "" : "superseded" },
        el("td", {}, a.key),
        el("td", {}, a.status === "active" ? a.value : el("del", {}, a.value)),
        el("td", {}, el("span", { class: `badge ${a.status === "active" ? "ok" : "warn"}` }, a.status),
          a.superseded_at ? el("span", { class: "meta" }, ` ${fmtDate(a.superseded_at)}`) : "", ` ${a.claim_type}`),
        el("td", {}, a.source_memory_id ? el("a", { href: `#/memory/${encodeURIComponent(a.source_memory_id)}` }, "memory") : "")))));
  }

  function addNeighbours(centre, related) {
    const have = new Set(graph.nodes.map((n) => n.id));
    if (!have.has(centre.id)) { graph.nodes.push({ id: centre.id, name: centre.name }); have.add(centre.id); }
    for (const r of related) {
      if (!have.has(r.id)) { graph.nodes.push({ id: r.id, name: r.name, parent: centre.id }); have.add(r.id); }
      const dup = graph.edges.some((e) => (e.a === centre.id && e.b === r.id) || (e.a === r.id && e.b === centre.id));
      if (!dup) graph.edges.push({ a: centre.id, b: r.id, via: r.via });
    }
    graph.expanded.add(centre.id);
  }

  function drawGraph(box) {
    layout(graph.nodes, graph.edges);
    const at = new Map(graph.nodes.map((n) => [n.id, n]));
    // Fit the view to the nodes (labels run right), never zooming in past half the canvas.
    const xs = graph.nodes.map((n) => n.x), ys = graph.nodes.map((n) => n.y);
    const cx = (Math.min(...xs) + Math.max(...xs) + 120) / 2, cy = (Math.min(...ys) + Math.max(...ys)) / 2;
    const vw = Math.max(W / 2, Math.max(...xs) - Math.min(...xs) + 200);
    const vh = Math.max(vw * H / W, Math.max(...ys) - Math.min(...ys) + 60);
    const g = svg("svg", { id: "kg-graph", viewBox: `${(cx - vw / 2).toFixed(0)} ${(cy - vh / 2).toFixed(0)} ${vw.toFixed(0)} ${vh.toFixed(0)}`, role: "group", "aria-label": `Neighbourhood graph: ${graph.nodes.length} entities, ${graph.edges.length} links`, "data-nodes": graph.nodes.length });
    for (const e of graph.edges) {
      const a = at.get(e.a), b = at.get(e.b);
      g.append(svg("line", { x1: a.x, y1: a.y, x2: b.x, y2: b.y, class: "kg-edge" }, svg("title", {}, e.via)));
    }
    for (const n of graph.nodes) {
      const open = () => select(n.id, false).catch((x) => notice(x.message));
      const cls = `kg-node${current && n.id === current.id ? " current" : ""}${graph.expanded.has(n.id) ? " expanded" : ""}`;
      const node = svg("g", { class: cls, tabindex: 0, role: "button", "data-id": n.id,
        "aria-label": `${n.name}${graph.expanded.has(n.id) ? "" : " (expand its neighbours)"}`, transform: `translate(${n.x.toFixed(1)},${n.y.toFixed(1)})` },
        svg("circle", { r: n.id === graph.nodes[0].id ? 11 : 8 }),
        svg("text", { x: 13, y: 4 }, n.name.length > 28 ? `${n.name.slice(0, 27)}…` : n.name));
      node.addEventListener("click", open);
      node.addEventListener("keydown", (ev) => { if (ev.key === "Enter" || ev.key === " ") { ev.preventDefault(); open(); } });
      g.append(node);
    }
    box.replaceChildren(g);
  }

  /** Show an entity; ``fresh`` starts a new graph at it, otherwise it is expanded in place. */
  async function select(id, fresh) {
    const [d, x] = await Promise.all([
      api("GET", `/api/knowledge/entities/${encodeURIComponent(id)}`),
      api("GET", `/api/knowledge/entities/${encodeURIComponent(id)}/expand?limit=50`),
    ]);
    current = d;
    history.replaceState(null, "", `#/knowledge/${encodeURIComponent(id)}`);
    if (fresh || !graph.nodes.length) { graph.nodes = []; graph.edges = []; graph.expanded = new Set(); }
    addNeighbours(d, [...d.related, ...x.related.filter((r) => !d.related.some((q) => q.id === r.id))]);
    const box = el("div", { class: "kg-graphbox" });
    detail.replaceChildren(
      el("h3", { id: "kg-name" }, d.name),
      el("dl", { class: "facts" },
        el("dt", {}, "type"), el("dd", {}, d.entity_type || "untyped"),
        el("dt", {}, "mentions"), el("dd", {}, String(d.mentions)),
        el("dt", {}, "aliases"), el("dd", { id: "kg-aliases" }, d.aliases.length ? d.aliases.join(", ") : "none"),
        d.description ? [el("dt", {}, "description"), el("dd", {}, d.description)] : "",
        d.pinned ? [el("dt", {}, "pinning"), el("dd", {}, d.pinned)] : "",
        d.community ? [el("dt", {}, "community"), el("dd", { id: "kg-community" }, `${d.community.name} (${d.community.size} entities)`)] : "",
        el("dt", {}, "updated"), el("dd", {}, fmtDate(d.updated_at))),
      el("h4", {}, `Neighbours (${d.related.length})`),
      el("p", { class: "meta" }, "Select a node (click, or Tab then Enter) to expand its neighbours into the graph."),
      box,
      el("ul", { id: "kg-related", class: "results compact", "aria-label": "Neighbours" }, ...d.related.map((r) => el("li", {},
        el("div", { class: "body" }, el("a", { href: `#/knowledge/${encodeURIComponent(r.id)}`, onclick: (ev) => { ev.preventDefault(); select(r.id, false).catch((e) => notice(e.message)); } }, r.name),
          el("span", { class: "meta" }, ` ${r.via}${r.strength !== null ? ` · ${r.strength.toFixed(2)}` : ""}`))))),
      el("h4", {}, `Aspects (${d.aspects.length})`),
      el("div", { id: "kg-aspects" }, ...d.aspects.map((a) => el("div", { class: "card" },
        el("h4", {}, a.name, el("span", { class: "meta" }, ` confidence ${a.confidence.toFixed(2)}`)),
        a.description ? el("p", { class: "meta" }, a.description) : "",
        a.attributes.length ? attributeRows(a.attributes) : el("p", { class: "meta" }, "No attributes.")))),
      el("h4", {}, `Memories (${x.memories.length})`),
      el("ul", { id: "kg-memories", class: "results compact", "aria-label": "Memories it leads to" }, ...x.memories.map((m) => el("li", {},
        el("div", { class: "body" }, el("a", { href: `#/memory/${encodeURIComponent(m.id)}`, class: "content" }, m.content),
          el("div", { class: "meta" }, `${m.via} · ${fmtDate(m.created_at)}${m.project ? " · " + m.project : ""}${m.who ? " · " + m.who : ""}`))))));
    if (!x.memories.length) detail.querySelector("#kg-memories").append(el("li", { class: "meta" }, "No memories you may read mention it."));
    drawGraph(box);
  }

  form.addEventListener("submit", (ev) => { ev.preventDefault(); offset = 0; loadList().catch((e) => notice(e.message)); });
  await Promise.all([loadList(), loadCommunities()]);
  if (arg) await select(arg, true);
}
