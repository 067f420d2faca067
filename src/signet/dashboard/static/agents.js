// Agents and tokens (admin): the agent roster with read policies and memory counts; issue a
// token for a role and scope (shown once); revoke a token (one issued in this tab, or pasted);
// the revocation list. Tokens are signed, not stored: the daemon cannot list live ones.
"use strict";
import { api, can, el, notice, fmtDate } from "./api.js";

const ROLES = ["readonly", "agent", "operator", "admin"];
const issued = []; // tokens issued from this tab (memory only: gone on reload), so they can be revoked
const when = (s) => fmtDate(new Date(s * 1000).toISOString());

export async function render(main) {
  main.append(el("h2", {}, "Agents and tokens"));
  if (!can("admin")) {
    main.append(el("p", { class: "meta" }, "Agents and tokens need an admin token."));
    return null;
  }
  const agentsBox = el("section", { class: "card", "aria-labelledby": "agents-title" });
  const issueBox = el("section", { class: "card", "aria-labelledby": "issue-title" });
  const revokeBox = el("section", { class: "card", "aria-labelledby": "revoke-title" });
  const revokedBox = el("section", { class: "card", "aria-labelledby": "revoked-title" });
  main.append(el("div", { class: "grid" }, agentsBox, issueBox), revokeBox, revokedBox);

  async function loadAgents() {
    const out = await api("GET", "/api/auth/agents");
    agentsBox.replaceChildren(el("h3", { id: "agents-title" }, "Agents"),
      el("table", { id: "agents" },
        el("thead", {}, el("tr", {}, ...["agent", "read policy", "group", "memories"].map((h) => el("th", {}, h)))),
        el("tbody", {}, ...out.items.map((a) => el("tr", {},
          el("td", {}, a.name, a.on_roster ? "" : el("span", { class: "tag", title: "owns memories but is not in agents.roster: reads with the shared policy" }, "not on roster")),
          el("td", {}, a.read_policy), el("td", {}, a.group.join(", ")), el("td", { class: "num" }, String(a.memories)))))),
      el("p", { class: "meta" }, "The roster is agents.roster in agent.yaml (the Workspace page edits it)."));
  }

  async function revoke(token, reason) {
    const r = await api("POST", "/api/auth/revoke", { token, ...(reason ? { reason } : {}) });
    const mine = issued.find((t) => t.token === token);
    if (mine) mine.revoked = true;
    notice(`Revoked the token of ${r.sub}: the daemon refuses it from now on`);
    renderIssued();
    await loadRevoked();
  }

  const issuedList = el("ul", { id: "issued", class: "results compact", "aria-label": "Tokens issued in this tab" });
  function renderIssued() {
    issuedList.replaceChildren(...issued.map((t) => el("li", {},
      el("div", { class: "body" },
        el("div", {}, `${t.claims.sub} · ${t.claims.role} `, Object.entries(t.claims.scope).map(([k, v]) => el("span", { class: "tag" }, `${k}: ${v}`)),
          t.revoked ? el("span", { class: "tag bad" }, "revoked") : ""),
        el("div", { class: "meta" }, `expires ${when(t.claims.exp)}`)),
      t.revoked ? "" : el("button", { type: "button", class: "danger", "aria-label": `Revoke the token of ${t.claims.sub}`,
        onclick: () => revoke(t.token, "revoked from the dashboard").catch((e) => notice(e.message)) }, "Revoke"))));
    if (!issued.length) issuedList.append(el("li", { class: "meta" }, "None issued in this tab."));
  }

  const out = el("p", { id: "token-issued", class: "mono", "aria-live": "polite" });
  const form = el("form", { id: "issue", class: "stack" },
    el("div", { class: "row" },
      el("div", { class: "field" }, el("label", { for: "iss-sub" }, "Subject (who it is for)"), el("input", { id: "iss-sub", required: true, size: 14 })),
      el("div", { class: "field" }, el("label", { for: "iss-role" }, "Role"), el("select", { id: "iss-role" }, ...ROLES.map((r) => el("option", { value: r }, r)))),
      el("div", { class: "field" }, el("label", { for: "iss-ttl" }, "Lifetime (days)"), el("input", { id: "iss-ttl", type: "number", min: 1, max: 3650, size: 5, placeholder: "default" }))),
    el("div", { class: "row" },
      el("div", { class: "field" }, el("label", { for: "iss-project" }, "Only project"), el("input", { id: "iss-project", size: 12 })),
      el("div", { class: "field" }, el("label", { for: "iss-agent" }, "Only agent"), el("input", { id: "iss-agent", size: 12 })),
      el("div", { class: "field" }, el("label", { for: "iss-user" }, "User"), el("input", { id: "iss-user", size: 12 }))),
    el("button", { type: "submit" }, "Issue token"));
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const v = (id) => form.querySelector(id).value.trim();
    const body = { sub: v("#iss-sub"), role: v("#iss-role") };
    for (const k of ["project", "agent", "user"]) if (v(`#iss-${k}`)) body[k] = v(`#iss-${k}`);
    if (v("#iss-ttl")) body.ttl_seconds = Math.round(Number(v("#iss-ttl")) * 86400);
    try {
      const r = await api("POST", "/api/auth/token", body);
      issued.unshift({ token: r.token, claims: r.claims, revoked: false });
      out.textContent = `Shown once — copy it now: ${r.token}`;
      renderIssued();
    } catch (e) { out.textContent = e.message; }
  });
  issueBox.append(el("h3", { id: "issue-title" }, "Issue a token"), form, out, el("h4", {}, "Issued in this tab"), issuedList);
  renderIssued();

  const revokeForm = el("form", { id: "revoke", class: "row" },
    el("div", { class: "field" }, el("label", { for: "rev-token" }, "Token to revoke"), el("input", { id: "rev-token", type: "password", required: true, size: 40, autocomplete: "off" })),
    el("div", { class: "field" }, el("label", { for: "rev-reason" }, "Reason"), el("input", { id: "rev-reason", size: 24 })),
    el("button", { type: "submit", class: "danger" }, "Revoke"));
  const revokeOut = el("p", { id: "revoke-out", class: "error", role: "status" });
  revokeForm.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    revokeOut.textContent = "";
    try {
      await revoke(revokeForm.querySelector("#rev-token").value.trim(), revokeForm.querySelector("#rev-reason").value.trim());
      revokeForm.reset();
    } catch (e) { revokeOut.textContent = e.message; }
  });
  revokeBox.append(el("h3", { id: "revoke-title" }, "Revoke a token"),
    el("p", { class: "meta" }, "Paste any token this workspace signed (also an expired one). The daemon refuses it at once, across restarts."),
    revokeForm, revokeOut);

  async function loadRevoked() {
    const r = await api("GET", "/api/auth/revocations");
    revokedBox.replaceChildren(el("h3", { id: "revoked-title" }, `Revoked tokens (${r.total})`),
      r.items.length
        ? el("table", { id: "revoked" },
          el("thead", {}, el("tr", {}, ...["subject", "revoked", "would expire", "reason", "id"].map((h) => el("th", {}, h)))),
          el("tbody", {}, ...r.items.map((x) => el("tr", {},
            el("td", {}, x.sub || ""), el("td", {}, when(x.revoked_at)), el("td", {}, when(x.expires_at)), el("td", {}, x.reason || ""), el("td", { class: "mono" }, x.token_id)))))
        : el("p", { class: "meta" }, "No token has been revoked."));
  }

  await Promise.all([loadAgents(), loadRevoked()]);
  return null;
}
