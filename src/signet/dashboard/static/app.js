// Signet dashboard: hash routes over small ES modules; every call goes to this daemon's own API.
"use strict";
import { api, session, setToken, notice } from "./api.js";
import * as memories from "./memories.js";
import * as memory from "./memory.js";
import * as map from "./map.js";
import * as health from "./health.js";
import * as workspace from "./workspace.js";
import * as knowledge from "./knowledge.js";
import * as documents from "./documents.js";
import * as agents from "./agents.js";

const PAGES = { memories, memory, map, knowledge, documents, health, workspace, agents };
let cleanup = null;

async function whoami() {
  const me = await api("GET", "/api/auth/whoami");
  session.who = me;
  session.perms = new Set(me.permissions || []);
  const who = document.getElementById("who");
  who.textContent = me.claims ? `${me.claims.sub} · ${me.claims.role}` : `${me.mode} mode${me.local ? " · local" : ""}`;
  document.getElementById("logout").hidden = !session.token;
  return me;
}

function showLogin(message) {
  document.getElementById("main").hidden = true;
  document.querySelector("header nav").hidden = true;
  const box = document.getElementById("login");
  box.hidden = false;
  document.getElementById("login-error").textContent = message || "";
  document.getElementById("login-token").focus();
}

async function route() {
  if (cleanup) { cleanup(); cleanup = null; }
  notice("");
  const [, name = "memories", ...rest] = location.hash.split("/");
  const page = PAGES[name] || memories;
  for (const a of document.querySelectorAll("nav a")) {
    const here = a.dataset.page === (name === "memory" ? "memories" : name);
    if (here) a.setAttribute("aria-current", "page"); else a.removeAttribute("aria-current");
  }
  const main = document.getElementById("main");
  main.replaceChildren();
  try {
    cleanup = (await page.render(main, decodeURIComponent(rest.join("/")))) || null;
  } catch (e) {
    if (e.status !== 401) notice(e.message);
  }
}

async function boot() {
  document.addEventListener("signet:login", (ev) => showLogin(session.token ? ev.detail : ""));
  document.getElementById("login-form").addEventListener("submit", async (ev) => {
    ev.preventDefault();
    setToken(document.getElementById("login-token").value.trim());
    const me = await whoami().catch(() => null);
    if (!me || !me.authenticated) {
      setToken(null);
      showLogin("That token was refused: invalid or expired. Ask an admin for a new one.");
      return;
    }
    document.getElementById("login").hidden = true;
    document.getElementById("main").hidden = false;
    document.querySelector("header nav").hidden = false;
    document.getElementById("login-token").value = "";
    route();
  });
  document.getElementById("logout").addEventListener("click", () => { setToken(null); location.reload(); });
  window.addEventListener("hashchange", () => { if (document.getElementById("login").hidden) route(); });
  const me = await whoami();
  if (me.mode !== "local" && !me.local && !me.authenticated) { showLogin(""); return; }
  document.addEventListener("keydown", (ev) => {
    if (ev.key === "/" && !/INPUT|TEXTAREA|SELECT/.test(document.activeElement.tagName)) {
      const q = document.getElementById("q");
      if (q) { ev.preventDefault(); q.focus(); }
    }
  });
  route();
}

boot().catch((e) => notice(`The dashboard could not start: ${e.message}`));
