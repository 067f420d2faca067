// Embedding map: the daemon's 2-D projection drawn on a canvas; colour by type, project or
// source; hover names a point, a click opens its memory. 202 means "computing": poll.
"use strict";
import { api, el, notice } from "./api.js";

// A first, down-sampled map paints at once whatever the store's size; the full one (up to
// FULL points) replaces it when it arrives.
const FIRST = 2000, FULL = 20000;
const PALETTE = ["#7aa2f7", "#9ece6a", "#e0af68", "#f7768e", "#bb9af7", "#7dcfff", "#ff9e64", "#c0caf5", "#73daca", "#db4b4b", "#2ac3de", "#e6c07b"];

export async function render(main) {
  let stopped = false;
  const status = el("p", { id: "map-status", class: "meta", "aria-live": "polite" }, "Loading the projection…");
  const colour = el("select", { id: "map-colour" }, ...["type", "project", "source"].map((k) => el("option", { value: k }, k)));
  const edges = el("input", { id: "map-edges", type: "checkbox" });
  const canvas = el("canvas", { id: "map", width: 900, height: 600, tabindex: 0, role: "img", "aria-label": "Embedding map: each point is a memory; click one, or use the arrow keys and Enter, to open it" });
  const tip = el("div", { id: "map-tip", class: "tip", hidden: true });
  const legend = el("ul", { id: "map-legend", class: "legend" });
  const pick = el("button", { type: "button", id: "map-pick", hidden: true });
  main.append(el("h2", {}, "Embedding map"),
    el("div", { class: "row" }, el("label", { for: "map-colour" }, "Colour by"), colour,
      el("span", { class: "field check" }, edges, el("label", { for: "map-edges" }, "Neighbour edges")), status),
    el("p", { class: "meta" }, "Shift + drag a box to select points, then open them in the memory browser."),
    el("div", { class: "mapwrap" }, canvas, tip), el("div", { class: "row" }, pick), legend);

  let data = null;
  for (;;) {
    const r = await api("GET", `/api/embeddings/projection?dimensions=2&limit=${FIRST}`, undefined, { raw: true });
    const body = await r.json();
    if (stopped || !canvas.isConnected) return null;
    if (r.status === 202) { status.textContent = `Computing the projection of ${body.embedding_count} memories…`; await new Promise((res) => setTimeout(res, 700)); continue; }
    if (!r.ok) { notice(body.error || `HTTP ${r.status}`); return null; }
    data = body;
    break;
  }
  const describe = () => { status.textContent = `${data.returned} of ${data.total} points · ${data.method} · computed ${data.cached_at.replace("T", " ").slice(0, 16)}`; };
  describe();
  if (!data.points.length) { status.textContent = "No embedded memories yet: remember something, then come back."; return null; }

  const dpr = window.devicePixelRatio || 1;
  const ctx = canvas.getContext("2d");
  let screen = [];
  function draw() {
    const w = canvas.clientWidth, h = canvas.clientHeight;
    canvas.width = w * dpr; canvas.height = h * dpr;
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.fillStyle = "#12151c"; ctx.fillRect(0, 0, w, h);
    const key = colour.value;
    const groups = [...new Set(data.points.map((p) => p[key] || "—"))];
    const colourOf = new Map(groups.map((g, i) => [g, PALETTE[i % PALETTE.length]]));
    const pad = 16, r = data.points.length > 5000 ? 1.5 : 3.5;
    screen = data.points.map((p) => ({ p, x: pad + ((p.xyz[0] + 210) / 420) * (w - 2 * pad), y: pad + ((210 - p.xyz[1]) / 420) * (h - 2 * pad) }));
    if (edges.checked) {
      // Each point to its 2 nearest neighbours on the map (the spec's KNN edges), in its colour.
      ctx.globalAlpha = 0.35; ctx.lineWidth = 1;
      for (const s of screen) {
        let a = null, b = null, da = Infinity, db = Infinity;
        for (const t of screen) {
          if (t === s) continue;
          const d = (t.x - s.x) ** 2 + (t.y - s.y) ** 2;
          if (d < da) { b = a; db = da; a = t; da = d; } else if (d < db) { b = t; db = d; }
        }
        ctx.strokeStyle = colourOf.get(s.p[key] || "—");
        for (const t of [a, b]) if (t) { ctx.beginPath(); ctx.moveTo(s.x, s.y); ctx.lineTo(t.x, t.y); ctx.stroke(); }
      }
      ctx.globalAlpha = 1;
    }
    for (const s of screen) {
      ctx.fillStyle = colourOf.get(s.p[key] || "—");
      ctx.beginPath(); ctx.arc(s.x, s.y, r, 0, 2 * Math.PI); ctx.fill();
    }
    legend.replaceChildren(...groups.map((g) => {
      const swatch = el("span", { class: "swatch" });
      swatch.style.background = colourOf.get(g); // CSSOM, not a style attribute: the CSP allows it
      return el("li", {}, swatch, g);
    }));
  }
  function nearest(ev) {
    const b = canvas.getBoundingClientRect();
    const x = ev.clientX - b.left, y = ev.clientY - b.top;
    let best = null, bd = 64;
    for (const s of screen) { const d = (s.x - x) ** 2 + (s.y - y) ** 2; if (d < bd) { bd = d; best = s; } }
    return best;
  }
  canvas.addEventListener("mousemove", (ev) => {
    const s = nearest(ev);
    tip.hidden = !s;
    canvas.style.cursor = s ? "pointer" : "default";
    if (s) { tip.textContent = `${s.p.type} · ${s.p.project || "no project"} · ${s.p.source}`; tip.style.left = `${s.x + 10}px`; tip.style.top = `${s.y + 10}px`; }
  });
  // Box selection (Shift + drag): the ids go to the memory browser through sessionStorage.
  let box = null, dragged = false;
  const local = (ev) => { const b = canvas.getBoundingClientRect(); return { x: ev.clientX - b.left, y: ev.clientY - b.top }; };
  canvas.addEventListener("mousedown", (ev) => { if (ev.shiftKey) { box = { a: local(ev), b: local(ev) }; dragged = false; ev.preventDefault(); } });
  canvas.addEventListener("mousemove", (ev) => {
    if (!box) return;
    box.b = local(ev); dragged = true;
    draw();
    ctx.strokeStyle = "#ffffff"; ctx.setLineDash([4, 3]); ctx.lineWidth = 1;
    ctx.strokeRect(box.a.x, box.a.y, box.b.x - box.a.x, box.b.y - box.a.y); ctx.setLineDash([]);
  });
  const onUp = (ev) => {
    if (!box) return;
    box.b = local(ev); // the release point: the browser may not have sent the last move yet
    const [x0, x1] = [box.a.x, box.b.x].sort((m, n) => m - n), [y0, y1] = [box.a.y, box.b.y].sort((m, n) => m - n);
    const ids = screen.filter((s) => s.x >= x0 && s.x <= x1 && s.y >= y0 && s.y <= y1).map((s) => s.p.id).slice(0, 200);
    box = null;
    pick.hidden = !ids.length;
    pick.textContent = `Show the ${ids.length} selected in the memory browser`;
    pick.onclick = () => { sessionStorage.setItem("signet.mapSelection", JSON.stringify(ids)); location.hash = "#/memories/?selection=map"; };
    draw();
  };
  window.addEventListener("mouseup", onUp);
  canvas.addEventListener("click", (ev) => {
    if (ev.shiftKey || dragged) { dragged = false; return; }
    const s = nearest(ev);
    if (s) location.hash = `#/memory/${encodeURIComponent(s.p.id)}`;
  });
  // Keyboard: arrows step through the points (left to right), Enter opens the one shown.
  let cursor = -1;
  canvas.addEventListener("keydown", (ev) => {
    if (!screen.length) return;
    const order = [...screen].sort((a, b) => a.x - b.x);
    if (ev.key === "ArrowRight" || ev.key === "ArrowDown") cursor = (cursor + 1) % order.length;
    else if (ev.key === "ArrowLeft" || ev.key === "ArrowUp") cursor = (cursor - 1 + order.length) % order.length;
    else if (ev.key === "Enter" && cursor >= 0) { location.hash = `#/memory/${encodeURIComponent(order[cursor].p.id)}`; return; }
    else return;
    ev.preventDefault();
    const s = order[cursor];
    draw();
    ctx.strokeStyle = "#ffffff"; ctx.lineWidth = 2;
    ctx.beginPath(); ctx.arc(s.x, s.y, 7, 0, 2 * Math.PI); ctx.stroke();
    tip.hidden = false;
    tip.textContent = `${cursor + 1}/${order.length} · ${s.p.type} · ${s.p.project || "no project"} · ${s.p.source} — Enter opens it`;
    tip.style.left = `${s.x + 10}px`; tip.style.top = `${s.y + 10}px`;
  });
  colour.addEventListener("change", draw);
  edges.checked = data.points.length <= 3000; // O(n²): off by default on big maps
  edges.addEventListener("change", draw);
  window.addEventListener("resize", draw);
  canvas.dataset.points = String(data.points.length);
  draw();
  if (data.returned < data.total) {
    status.textContent += " · loading more…";
    api("GET", `/api/embeddings/projection?dimensions=2&limit=${FULL}`, undefined, { raw: true })
      .then(async (r) => {
        if (stopped || !canvas.isConnected || r.status !== 200) { if (!stopped) describe(); return; }
        data = await r.json();
        edges.checked = edges.checked && data.points.length <= 3000;
        describe();
        canvas.dataset.points = String(data.points.length);
        canvas.dataset.complete = "";
        draw();
      })
      .catch((e) => { describe(); notice(e.message); });
  } else canvas.dataset.complete = "";
  return () => { stopped = true; window.removeEventListener("resize", draw); window.removeEventListener("mouseup", onUp); };
}
