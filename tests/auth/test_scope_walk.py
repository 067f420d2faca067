"""Scoped tokens stay in scope: every write route of the OpenAPI schema x {project-scoped,
agent-scoped, readonly} tokens x an owner outside the token's scope.

Bodies are built from the schema itself (so a route added later is walked without editing
this file): a valid body with every owner field it declares, at any depth, set to another
project or agent, and path targets pointing at another agent's or project's memory. Each must
be refused (403, or 404 for a row the token cannot see, or a per-item ``forbidden`` /
``not_found`` result) and leave the database exactly as it was. The same body with owners
inside the scope must not be refused, which shows the body was valid and that the 403 came
from the scope. A second part calls the memory and hook services directly, with the auth
middleware out of the way, to show the services enforce the scope on their own.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import hypothesis
import pytest
from fastapi.testclient import TestClient
from hypothesis import strategies as st

from signet.auth.policy import role_allows, route_permission
from signet.daemon.app import create_app
from signet.errors import Forbidden
from signet.hooks.models import SessionEndRequest, SessionStartRequest
from signet.models import ModifyPatch, ModifyRequest, RecoverRequest, RememberRequest
from signet.runtime import Runtime
from signet.store.scope import ReadScope
from signet.workspace import Workspace, setup_workspace
from tests.auth.conftest import bearer, token_for
from tests.conftest import start_runtime, write_config

WRITE_METHODS = ("post", "patch", "put", "delete")
OWNER_FIELDS = ("project", "agent_id", "agentId")
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-06-18"}
ROSTER = [{"name": "alice", "readPolicy": "shared"}, {"name": "mallory", "readPolicy": "shared"}]


@dataclass(frozen=True)
class Caller:
    name: str
    role: str
    scope: dict[str, str]
    own: dict[str, str]
    """Owner values inside the scope."""
    foreign: dict[str, str]
    """Owner values outside the scope, by field."""


CALLERS = [
    Caller("project-scoped", "agent", {"project": "alpha"}, {"project": "alpha"}, {"project": "beta"}),
    Caller(
        "agent-scoped",
        "agent",
        {"agent": "alice"},
        {"agent_id": "alice", "agentId": "alice"},
        {"agent_id": "mallory", "agentId": "mallory"},
    ),
    Caller(
        "readonly",
        "readonly",
        {"project": "alpha", "agent": "alice"},
        {"project": "alpha", "agent_id": "alice", "agentId": "alice"},
        {"project": "beta", "agent_id": "mallory", "agentId": "mallory"},
    ),
]

# Tables whose rows a refused request could touch. Rate-limit and access counters live in memory.
VOLATILE_COLUMNS = {"memories": ("access_count", "last_accessed")}


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Runtime, TestClient, dict[str, str]]]:
    ws = Workspace(tmp_path_factory.mktemp("scope-walk") / "ws")
    setup_workspace(ws, agent_name="t", user_name="T", embedding_provider="none")
    write_config(
        ws,
        memory={"pipelineV2": {"enabled": False, "extraction": {"provider": "none"}}},
        # No background worker may change the store between the walk's snapshots (a document an
        # in-scope request queued would be ingested meanwhile).
        documents={"workers": 0},
        auth={"mode": "team", "rateLimits": {"default": 1_000_000, "operations": {}}},
        agents={"roster": ROSTER},
    )
    rt = start_runtime(ws)
    admin = bearer(token_for(ws, "admin"))
    with TestClient(
        create_app(rt, manage_runtime=False), raise_server_exceptions=False, base_url="http://127.0.0.1:3850"
    ) as c:
        ids: dict[str, str] = {}
        for key, body in {
            "own": {"content": "alice keeps the alpha deploy notes", "agent_id": "alice", "project": "alpha"},
            "foreign-agent": {
                "content": "mallory global alpha note",
                "agent_id": "mallory",
                "project": "alpha",
                "visibility": "global",
            },
            "foreign-project": {"content": "alice beta roadmap", "agent_id": "alice", "project": "beta"},
            "deleted-foreign": {
                "content": "mallory deleted alpha note",
                "agent_id": "mallory",
                "project": "alpha",
                "visibility": "global",
            },
        }.items():
            r = c.post("/api/memory/remember", json=body, headers=admin)
            assert r.status_code == 200, r.text
            ids[key] = r.json()["id"]
        r = c.request("DELETE", f"/api/memory/{ids['deleted-foreign']}", params={"reason": "setup"}, headers=admin)
        assert r.status_code == 200, r.text
        ids["__ws__"] = str(ws.root)
        yield rt, c, ids
    rt.stop()


def snapshot(rt: Runtime) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every table (FTS shadow tables aside), volatile counters left out. Buffered
    telemetry events are written first: the flusher thread would otherwise land an earlier
    request's events between two snapshots (a CI run saw a recall's event appear)."""
    rt.observability.telemetry.flush()

    def read(conn: Any) -> dict[str, list[tuple[Any, ...]]]:
        names = [
            r[0]
            for r in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE '%fts%'"
                " AND name NOT LIKE 'sqlite_%' AND name != 'keyword_changes' ORDER BY name"
            )
        ]
        out: dict[str, list[tuple[Any, ...]]] = {}
        for name in names:
            cols = [
                r[1] for r in conn.execute(f"PRAGMA table_info({name})") if r[1] not in VOLATILE_COLUMNS.get(name, ())
            ]
            out[name] = sorted(tuple(row) for row in conn.execute(f"SELECT {', '.join(cols)} FROM {name}"))
        return out

    return rt.db.read(read)


# -- bodies from the schema --------------------------------------------------------------------
class Synth:
    """A minimal valid instance of a JSON schema, with owner fields set wherever declared."""

    def __init__(self, spec: dict[str, Any], owners: dict[str, str], memory_id: str) -> None:
        self.spec = spec
        self.owners = owners
        self.memory_id = memory_id

    def resolve(self, schema: dict[str, Any]) -> dict[str, Any]:
        while "$ref" in schema:
            node: Any = self.spec
            for part in schema["$ref"].lstrip("#/").split("/"):
                node = node[part]
            schema = node
        return schema

    def value(self, schema: dict[str, Any], name: str = "") -> Any:
        schema = self.resolve(schema)
        for key in ("anyOf", "oneOf"):
            if key in schema:
                options = [self.resolve(o) for o in schema[key]]
                non_null = [o for o in options if o.get("type") != "null"]
                return self.value(non_null[0] if non_null else options[0], name)
        if "allOf" in schema:
            return self.value(schema["allOf"][0], name)
        if "const" in schema:
            return schema["const"]
        if "enum" in schema:
            return schema["enum"][0]
        kind = schema.get("type")
        if kind == "object" or "properties" in schema:
            props = schema.get("properties", {})
            out = {k: self.value(v, k) for k, v in props.items() if k in schema.get("required", [])}
            # A rule the schema cannot state (e.g. "exactly one of url, content or path"): the
            # model's own example is a valid body to start from.
            out.update(schema.get("examples", [{}])[0])
            for field in OWNER_FIELDS:
                if field in props and field in self.owners:
                    out[field] = self.owners[field]
            return out
        if kind == "array":
            return [self.value(schema.get("items", {}), name) for _ in range(max(1, schema.get("minItems", 1)))]
        if kind == "integer":
            return max(1, schema.get("minimum", 1))
        if kind == "number":
            return min(max(0.5, schema.get("minimum", 0.5)), schema.get("maximum", 0.5))
        if kind == "boolean":
            return False
        if kind == "string":
            if schema.get("format") == "date-time":
                return "2026-01-01T00:00:00Z"
            if name in ("id", "memory_id"):
                return self.memory_id
            if "pattern" in schema:  # the simplest string the pattern accepts
                return hypothesis.find(st.from_regex(schema["pattern"], fullmatch=True), lambda _: True)
            text = {"content": "a scope walk memory", "query": "alpha deploy", "reason": "scope walk"}.get(name, "x")
            return text.ljust(schema.get("minLength", 1), "x")[: schema.get("maxLength", 10_000)]
        return "x"


def write_operations(spec: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    return [(m, p, op) for p, item in spec["paths"].items() for m, op in item.items() if m in WRITE_METHODS]


def request_args(
    spec: dict[str, Any], path: str, op: dict[str, Any], owners: dict[str, str], memory_id: str
) -> dict[str, Any]:
    synth = Synth(spec, owners, memory_id)
    params: dict[str, Any] = {}
    for p in op.get("parameters", []):
        if p["in"] == "query" and (p.get("required") or p["name"] in OWNER_FIELDS):
            params[p["name"]] = owners.get(p["name"]) or synth.value(p.get("schema", {}), p["name"])
    args: dict[str, Any] = {"params": params}
    content = op.get("requestBody", {}).get("content", {})
    if "application/json" in content:
        args["json"] = synth.value(content["application/json"]["schema"])
    return args


def declares_owner(spec: dict[str, Any], op: dict[str, Any]) -> bool:
    """Whether the operation's query or body schema has an owner field anywhere."""
    seen: set[int] = set()
    synth = Synth(spec, {}, "")

    def walk(schema: Any) -> bool:
        if not isinstance(schema, dict) or id(schema) in seen:
            return False
        seen.add(id(schema))
        schema = synth.resolve(schema)
        if any(f in schema.get("properties", {}) for f in OWNER_FIELDS):
            return True
        return any(
            walk(v)
            for v in [
                *schema.get("properties", {}).values(),
                schema.get("items"),
                *schema.get("anyOf", []),
                *schema.get("oneOf", []),
                *schema.get("allOf", []),
            ]
        )

    if any(p["name"] in OWNER_FIELDS for p in op.get("parameters", [])):
        return True
    return any(walk(c.get("schema")) for c in op.get("requestBody", {}).get("content", {}).values())


def placed(args: dict[str, Any], owners: dict[str, str]) -> bool:
    """Whether a foreign owner value stands anywhere in the request's query or body."""
    stack: list[Any] = [args]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if any(node.get(f) == v for f, v in owners.items()):
                return True
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return False


def refused(resp: Any) -> bool:
    if resp.status_code in (403, 404):
        return True
    if resp.status_code == 200 and isinstance(data := resp.json(), dict) and isinstance(data.get("results"), list):
        return all(r.get("status") in ("forbidden", "not_found") for r in data["results"])
    return False


def test_the_walk_covers_every_write_route_with_an_owner(env: tuple[Runtime, TestClient, dict[str, str]]) -> None:
    _rt, c, _ids = env
    spec = c.get("/openapi.json").json()
    with_owner = {(m, p) for m, p, op in write_operations(spec) if declares_owner(spec, op)}
    targeted = {(m, p) for m, p, _ in write_operations(spec) if "{memory_id}" in p}
    # The routes that name an owner or a memory today: the walk must reach every one of them.
    for expected in [
        ("post", "/api/memory/remember"),
        ("post", "/api/memory/remember/batch"),
        ("post", "/api/memory/modify"),
        ("post", "/api/memory/forget"),
        ("patch", "/api/memory/{memory_id}"),
        ("delete", "/api/memory/{memory_id}"),
        ("post", "/api/memory/{memory_id}/recover"),
        ("post", "/api/hooks/session-end"),
        ("post", "/api/hooks/remember"),
        ("post", "/api/ingest/transcript"),
    ]:
        assert expected in with_owner | targeted, expected


@pytest.mark.parametrize("caller", CALLERS, ids=lambda c: c.name)
def test_foreign_owner_in_any_write_body_is_refused(
    env: tuple[Runtime, TestClient, dict[str, str]], caller: Caller
) -> None:
    rt, c, ids = env
    ws = Workspace(Path(ids["__ws__"]))
    headers = bearer(token_for(ws, caller.role, **caller.scope))  # type: ignore[arg-type]
    spec = c.get("/openapi.json").json()
    walked = 0
    accepted_in_scope = 0
    for method, path, op in write_operations(spec):
        if not declares_owner(spec, op):
            continue
        args = request_args(spec, path, op, caller.foreign, ids["own"])
        if not placed(args, caller.foreign):
            continue  # the route names no owner this token is bound by (e.g. only a project, for an agent token)
        before = snapshot(rt)
        r = c.request(method.upper(), path.replace("{memory_id}", ids["own"]), headers=headers, **args)
        assert r.status_code == 403, f"{caller.name} {method.upper()} {path} {args}: {r.status_code} {r.text}"
        assert r.json().get("code") == "forbidden", r.text
        assert snapshot(rt) == before, f"{caller.name} {method.upper()} {path} changed the store"
        walked += 1
        if role_allows(caller.role, route_permission(method.upper(), path)[0]) and path != "/mcp":
            # The same body inside the scope is not refused: the body was valid, the scope refused it.
            own = request_args(spec, path, op, caller.own, ids["own"])
            r2 = c.request(method.upper(), path.replace("{memory_id}", ids["own"]), headers=headers, **own)
            assert r2.status_code not in (403, 422), f"{caller.name} {method.upper()} {path} {own}: {r2.text}"
            accepted_in_scope += 1
    assert walked >= 8, walked
    if caller.role == "agent":
        assert accepted_in_scope >= 6


# A project-only token may change any agent's memories inside its project, and an agent-only
# token its own memories in any project: each is refused only what lies outside its scope.
FOREIGN_TARGETS = {
    "project-scoped": ("foreign-project",),
    "agent-scoped": ("foreign-agent", "deleted-foreign"),
    "readonly": ("foreign-agent", "foreign-project", "deleted-foreign"),
}
TARGETS = [(c, t) for c in CALLERS for t in FOREIGN_TARGETS[c.name]]


@pytest.mark.parametrize(("caller", "target"), TARGETS, ids=lambda v: v.name if isinstance(v, Caller) else v)
def test_write_routes_on_another_owners_memory_are_refused(
    env: tuple[Runtime, TestClient, dict[str, str]], caller: Caller, target: str
) -> None:
    rt, c, ids = env
    ws = Workspace(Path(ids["__ws__"]))
    headers = bearer(token_for(ws, caller.role, **caller.scope))  # type: ignore[arg-type]
    spec = c.get("/openapi.json").json()
    ops = [(m, p, op) for m, p, op in write_operations(spec) if "{memory_id}" in p]
    ops += [(m, p, op) for m, p, op in write_operations(spec) if p in ("/api/memory/modify", "/api/memory/forget")]
    assert len(ops) >= 5
    for method, path, op in ops:
        before = snapshot(rt)
        args = request_args(spec, path, op, caller.own, ids[target])
        if path == "/api/memory/forget":
            args["json"] = {"ids": [ids[target]], "mode": "execute", "reason": "walk", "force": True}
        elif path == "/api/memory/modify":
            args["json"] = {
                "patches": [{"id": ids[target], "content": "taken over", "importance": 0.1}],
                "reason": "walk",
            }
        elif method == "patch":
            args["json"] = {**args["json"], "content": "taken over", "importance": 0.1}
        r = c.request(method.upper(), path.replace("{memory_id}", ids[target]), headers=headers, **args)
        if path == "/api/memory/forget" and r.status_code == 200:
            assert r.json()["deleted"] == [], r.text
        else:
            assert refused(r), f"{caller.name} {method.upper()} {path} on {target}: {r.status_code} {r.text}"
        assert snapshot(rt) == before, f"{caller.name} {method.upper()} {path} on {target} changed the store"


def test_agent_token_reads_but_cannot_change_another_agents_global_memory(
    env: tuple[Runtime, TestClient, dict[str, str]],
) -> None:
    rt, c, ids = env
    ws = Workspace(Path(ids["__ws__"]))
    headers = bearer(token_for(ws, "agent", agent="alice"))
    assert c.get(f"/api/memory/{ids['foreign-agent']}", headers=headers).status_code == 200
    r = c.post(
        "/api/memory/modify",
        headers=headers,
        json={"patches": [{"id": ids["foreign-agent"], "content": "taken over"}], "reason": "x"},
    )
    assert r.status_code == 200 and r.json()["results"][0]["status"] == "forbidden", r.text
    r = c.patch(f"/api/memory/{ids['foreign-agent']}", headers=headers, json={"content": "taken", "reason": "x"})
    assert r.status_code == 403 and r.json()["code"] == "forbidden", r.text
    assert rt.service.get(ids["foreign-agent"]).content == "mallory global alpha note"


def test_the_issue_repro_moving_a_memory_out_of_the_project(env: tuple[Runtime, TestClient, dict[str, str]]) -> None:
    rt, c, ids = env
    ws = Workspace(Path(ids["__ws__"]))
    headers = bearer(token_for(ws, "agent", project="alpha"))
    r = c.post(
        "/api/memory/modify",
        headers=headers,
        json={"patches": [{"id": ids["own"], "project": "beta", "reason": "escape"}]},
    )
    assert r.status_code == 403, r.text
    assert rt.service.get(ids["own"]).project == "alpha"
    # Inside the scope, the same token edits its own memory, and a remember without a project lands in alpha.
    r = c.post("/api/memory/remember", headers=headers, json={"content": "alpha only fact from a scoped token"})
    assert r.status_code == 200, r.text
    assert rt.service.get(r.json()["id"]).project == "alpha"


# -- the services on their own (no middleware in front) -----------------------------------------
PROJECT = ReadScope(project="alpha")
AGENT = ReadScope(agent_id="alice", policy="shared", write_agent="alice")


def test_memory_service_enforces_the_write_scope_itself(env: tuple[Runtime, TestClient, dict[str, str]]) -> None:
    rt, _c, ids = env
    svc = rt.service
    before = snapshot(rt)
    with pytest.raises(Forbidden):
        svc.remember(RememberRequest(content="sneaky beta fact", project="beta"), scope=PROJECT)
    with pytest.raises(Forbidden):
        svc.remember(RememberRequest(content="sneaky mallory fact", agent_id="mallory"), scope=AGENT)
    with pytest.raises(Forbidden):
        svc.remember_batch(
            [
                RememberRequest(content="fine alpha fact", project="alpha"),
                RememberRequest(content="beta fact", project="beta"),
            ],
            scope=PROJECT,
        )
    with pytest.raises(Forbidden):
        svc.modify(
            ModifyRequest(
                patches=[ModifyPatch(id=ids["own"], importance=0.9), ModifyPatch(id=ids["own"], project="beta")],
                reason="x",
            ),
            scope=PROJECT,
        )
    res = svc.modify(
        ModifyRequest(patches=[ModifyPatch(id=ids["foreign-agent"], importance=0.1)], reason="x"), scope=AGENT
    )
    assert res.results[0].status == "forbidden"
    with pytest.raises(Forbidden):
        svc.delete(ids["foreign-agent"], reason="x", scope=AGENT)
    with pytest.raises(Forbidden):
        svc.recover(ids["deleted-foreign"], RecoverRequest(reason="x"), scope=AGENT)
    assert snapshot(rt) == before
    # Absent owners are filled from the scope.
    made = svc.remember(RememberRequest(content="alice fills her own owner"), scope=AGENT)
    assert svc.get(made.id).agent_id == "alice"


def test_hook_service_enforces_the_write_scope_itself(env: tuple[Runtime, TestClient, dict[str, str]]) -> None:

    rt, _c, _ids = env
    hooks = rt.hooks
    before = snapshot(rt)
    with pytest.raises(Forbidden):
        hooks.session_end(
            SessionEndRequest(
                harness="claude-code",
                session_id="s1",
                project="beta",
                turns=[{"role": "user", "content": "hello there"}],
            ),
            scope=PROJECT,
        )
    with pytest.raises(Forbidden):
        hooks.session_start(
            SessionStartRequest(harness="claude-code", session_id="s2", agent_id="mallory"), scope=AGENT
        )
    assert snapshot(rt) == before
    hooks.session_start(SessionStartRequest(harness="claude-code", session_id="s3"), scope=PROJECT)
    rows = rt.db.read(lambda conn: conn.execute("SELECT * FROM hook_sessions").fetchall())
    assert rows and all(r["project"] == "alpha" for r in rows), [dict(r) for r in rows]


def test_status_is_not_public_in_team_mode(env: tuple[Runtime, TestClient, dict[str, str]]) -> None:
    _rt, c, ids = env
    ws = Workspace(Path(ids["__ws__"]))
    anon = c.get("/api/status")
    assert anon.status_code == 401, anon.text
    assert ids["__ws__"] not in anon.text
    assert c.get("/api/status", headers=bearer(token_for(ws, "agent", project="alpha"))).status_code == 403
    assert c.get("/api/status", headers=bearer(token_for(ws, "operator"))).status_code == 200
    health = c.get("/health")
    assert health.status_code == 200
    assert ids["__ws__"] not in health.text
    assert set(health.json()) <= {"status", "proof"}, health.json()


def _mcp(c: TestClient, headers: dict[str, str], name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    r = c.post(
        "/mcp",
        headers={**MCP_HEADERS, **headers},
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": name, "arguments": arguments}},
    )
    if r.status_code == 403:
        return {"refused": r.json()}
    assert r.status_code == 200, r.text
    result: dict[str, Any] = r.json()["result"]
    return result


def test_mcp_tool_calls_stay_in_scope(env: tuple[Runtime, TestClient, dict[str, str]]) -> None:
    """/mcp is a mounted app outside the OpenAPI schema: its write tools are walked here."""
    rt, c, ids = env
    ws = Workspace(Path(ids["__ws__"]))
    project = bearer(token_for(ws, "agent", project="alpha"))
    agent = bearer(token_for(ws, "agent", agent="alice"))
    cases = [
        (project, "memory_store", {"content": "mcp beta fact", "project": "beta"}),
        (project, "memory_modify", {"id": ids["own"], "reason": "x", "fields": {"project": "beta"}}),
        (agent, "memory_store", {"content": "mcp fact as alice", "project": "alpha"}),  # in scope: stored as alice
        (agent, "memory_modify", {"id": ids["foreign-agent"], "reason": "x", "fields": {"content": "taken"}}),
        (agent, "memory_forget", {"id": ids["foreign-agent"], "reason": "x"}),
        (agent, "memory_recover", {"id": ids["deleted-foreign"], "reason": "x"}),
    ]
    for headers, name, arguments in cases:
        before = snapshot(rt)
        out = _mcp(c, headers, name, arguments)
        if arguments.get("content") == "mcp fact as alice":
            assert not out.get("isError") and "refused" not in out, out
            stored = rt.service.get(out["structuredContent"]["id"])
            assert (stored.agent_id, stored.project) == ("alice", "alpha"), stored
            continue
        assert "refused" in out or out.get("isError") is True, (name, arguments, out)
        assert snapshot(rt) == before, (name, arguments)
