// The daemon's HTTP API as the dashboard uses it: the token (team mode), permissions, helpers.
"use strict";

const KEY = "signet.token";
export const session = { token: sessionStorage.getItem(KEY), perms: new Set(), who: null };

export class ApiError extends Error {
  constructor(status, data) {
    super(data.error || `HTTP ${status}`);
    this.status = status;
    this.data = data;
  }
}

export function setToken(token) {
  session.token = token || null;
  if (token) sessionStorage.setItem(KEY, token); else sessionStorage.removeItem(KEY);
}

export function headers(extra = {}) {
  const h = { "X-Signet-Actor": "dashboard", ...extra };
  if (session.token) h.Authorization = `Bearer ${session.token}`;
  return h;
}

/** Call the API; a 401 sends the user to the login, any other error throws ApiError. */
export async function api(method, path, body, { raw = false } = {}) {
  const opts = { method, headers: headers() };
  if (body !== undefined) { opts.headers["content-type"] = "application/json"; opts.body = JSON.stringify(body); }
  const r = await fetch(path, opts);
  if (raw) return r;
  let data;
  try { data = await r.json(); } catch (_) { data = { error: `HTTP ${r.status}` }; }
  if (r.status === 401) document.dispatchEvent(new CustomEvent("signet:login", { detail: data.error }));
  if (!r.ok) throw new ApiError(r.status, data);
  return data;
}

/** Whether this caller may use a permission (whoami's list): hides what the API would refuse. */
export const can = (perm) => session.perms.has(perm);

export function el(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "class") e.className = v;
    else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else if (k === "value") e.value = v;
    else e.setAttribute(k, v === true ? "" : v);
  }
  for (const c of children.flat()) if (c !== "" && c !== null && c !== undefined) e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return e;
}

export function notice(text) {
  const n = document.getElementById("notice");
  n.textContent = text || "";
  n.hidden = !text;
}

export const fmtDate = (s) => (s ? s.replace("T", " ").slice(0, 16) : "");
export const TYPES = ["fact", "preference", "decision", "procedural", "semantic", "rule", "learning", "issue", "episodic"];

/** Read a server-sent event stream with fetch (EventSource cannot send the bearer token). */
export async function streamEvents(path, signal, onEvent) {
  const r = await fetch(path, { headers: headers({ Accept: "text/event-stream" }), signal });
  if (!r.ok || !r.body) throw new ApiError(r.status, { error: `stream: HTTP ${r.status}` });
  const reader = r.body.pipeThrough(new TextDecoderStream()).getReader();
  let buf = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buf += value.replace(/\r\n/g, "\n");
    let cut;
    while ((cut = buf.indexOf("\n\n")) >= 0) {
      const block = buf.slice(0, cut);
      buf = buf.slice(cut + 2);
      let event = "message", data = "";
      for (const line of block.split("\n")) {
        if (line.startsWith("event:")) event = line.slice(6).trim();
        else if (line.startsWith("data:")) data += line.slice(5).trimStart();
      }
      if (data) onEvent(event, data);
    }
  }
}
