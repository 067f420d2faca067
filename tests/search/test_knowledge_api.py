"""The knowledge endpoints and MCP tools (signet.knowledge.read): list, get and expand entities;
unknown or foreign ids are 404; hostile input is a 4xx with a JSON message; agent A's entities
never reach agent B through recall, the endpoints or the MCP tools, under each read policy."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from signet.daemon.app import create_app
from signet.runtime import Runtime
from signet.workspace import Workspace, setup_workspace
from tests.auth.conftest import bearer, token_for
from tests.conftest import start_runtime, write_config

ROSTER = [
    {"name": "alice", "readPolicy": "isolated"},
    {"name": "bob", "readPolicy": "shared"},
    {"name": "carol", "readPolicy": "group", "group": ["alice", "carol"]},
]
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-06-18"}
ALICE_TEXT = "At the lab Zanzibar Quill reviewed the reactor_cooling plan."


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Workspace, Runtime, dict[str, str]]]:
    ws = Workspace(tmp_path_factory.mktemp("kg") / "ws")
    setup_workspace(ws, agent_name="t", user_name="T", embedding_provider="none")
    write_config(
        ws,
        memory={"pipelineV2": {"enabled": False, "extraction": {"provider": "none"}, "traversal": {"enabled": True}}},
        auth={"mode": "hybrid"},
        agents={"roster": ROSTER},
    )
    rt = start_runtime(ws)
    ids: dict[str, str] = {}
    with TestClient(create_app(rt, manage_runtime=False), base_url="http://127.0.0.1:3850") as c:
        for key, body in {
            "alice-private": {"content": ALICE_TEXT, "agent_id": "alice", "visibility": "private"},
            "alice-global": {"content": "Later Zanzibar Quill moved to Oslo.", "agent_id": "alice"},
            "bob": {"content": "Yesterday Zanzibar Quill sent bob a parcel.", "agent_id": "bob"},
            "default": {"content": "Notes about Zanzibar Quill for the default agent."},
        }.items():
            r = c.post("/api/memory/remember", json=body)
            assert r.status_code == 200, r.text
            ids[key] = r.json()["id"]
    yield ws, rt, ids
    rt.stop()


def _client(rt: Runtime) -> TestClient:
    return TestClient(create_app(rt, manage_runtime=False), base_url="http://127.0.0.1:3850")


def _entity_id(c: TestClient, headers: dict[str, str], name: str = "zanzibar") -> str:
    r = c.get("/api/knowledge/entities", headers=headers, params={"q": name})
    assert r.status_code == 200, r.text
    found = r.json()["entities"]
    assert len(found) == 1, found
    return str(found[0]["id"])


def _mcp(c: TestClient, headers: dict[str, str], name: str, args: dict[str, Any]) -> dict[str, Any]:
    r = c.post(
        "/mcp",
        headers={**MCP_HEADERS, **headers},
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": name, "arguments": args}},
    )
    assert r.status_code == 200, r.text
    return dict(r.json()["result"])


def test_list_get_expand_for_the_local_default_agent(env: tuple[Workspace, Runtime, dict[str, str]]) -> None:
    _, rt, ids = env
    with _client(rt) as c:
        listed = c.get("/api/knowledge/entities").json()
        assert listed["agent_id"] == "default"
        names = {e["name"] for e in listed["entities"]}
        assert "Zanzibar Quill" in names and "Oslo" not in names  # Oslo is alice's
        eid = _entity_id(c, {})
        detail = c.get(f"/api/knowledge/entities/{eid}").json()
        assert detail["entity_type"] == "name" and [a["name"] for a in detail["aspects"]] == ["named thing"]
        expanded = c.get(f"/api/knowledge/entities/{eid}/expand").json()
        assert [m["id"] for m in expanded["memories"]] == [ids["default"]]
        assert expanded["memories"][0]["via"] == "mention"


def test_unknown_and_hostile_input(env: tuple[Workspace, Runtime, dict[str, str]]) -> None:
    _, rt, _ = env
    with _client(rt) as c:
        for path in ("/api/knowledge/entities/nope", "/api/knowledge/entities/nope/expand"):
            r = c.get(path)
            assert r.status_code == 404 and "no entity" in r.json()["error"]
        assert c.get("/api/knowledge/entities/" + "x" * 500).status_code == 422
        assert c.get("/api/knowledge/entities", params={"limit": 0}).status_code == 422
        assert c.get("/api/knowledge/entities", params={"limit": "many"}).status_code == 422
        # LIKE wildcards and quotes are literal, never SQL
        for q in ("%", "_", "' OR 1=1 --", "\\"):
            r = c.get("/api/knowledge/entities", params={"q": q})
            assert r.status_code == 200 and r.json()["entities"] == [], q
        r = c.get("/api/knowledge/entities/..%2F..%2Fetc%2Fpasswd")
        assert r.status_code == 404 and "error" in r.json()


@pytest.mark.parametrize("reader", ["bob", "carol"])
def test_tokens_see_only_their_agents_entities(env: tuple[Workspace, Runtime, dict[str, str]], reader: str) -> None:
    ws, rt, ids = env
    alice = bearer(token_for(ws, "agent", sub="alice", agent="alice"))
    tok = bearer(token_for(ws, "agent", sub=reader, agent=reader))
    with _client(rt) as c:
        alice_entity = _entity_id(c, alice)
        listed = c.get("/api/knowledge/entities", headers=tok).json()
        assert listed["agent_id"] == reader
        assert alice_entity not in {e["id"] for e in listed["entities"]}
        assert "oslo" not in {e["name"].lower() for e in listed["entities"]}
        for path in (f"/api/knowledge/entities/{alice_entity}", f"/api/knowledge/entities/{alice_entity}/expand"):
            assert c.get(path, headers=tok).status_code == 404
        r = c.get("/api/knowledge/entities", headers=tok, params={"agent_id": "alice"})
        assert r.status_code == 403 and r.json()["reason"] == "scope_mismatch"
        # recall: the graph resolves only the reader's own entity; alice's private memory never comes back
        r = c.post("/api/memory/recall", headers=tok, json={"query": "Zanzibar Quill", "limit": 50, "min_score": 0})
        assert r.status_code == 200
        got = [h["id"] for h in r.json()["results"]]
        assert ids["alice-private"] not in got and ALICE_TEXT not in r.text
        # MCP tools, with the same token
        res = _mcp(c, tok, "knowledge_get_entity", {"entity_id": alice_entity})
        assert res["isError"] is True and "not_found" in res["content"][0]["text"]
        res = _mcp(c, tok, "knowledge_expand", {"entity_id": alice_entity})
        assert res["isError"] is True and ALICE_TEXT not in str(res)
        res = _mcp(c, tok, "knowledge_list_entities", {"q": "oslo"})
        assert res["isError"] is False and res["structuredContent"]["entities"] == []
    # alice herself sees her entity and both her memories through it
    with _client(rt) as c:
        expanded = c.get(f"/api/knowledge/entities/{alice_entity}/expand", headers=alice).json()
        assert {m["id"] for m in expanded["memories"]} == {ids["alice-private"], ids["alice-global"]}
        res = _mcp(c, alice, "knowledge_list_entities", {"q": "reactor"})
        assert [e["name"] for e in res["structuredContent"]["entities"]] == ["reactor_cooling"]


def test_readonly_token_may_read_the_graph_but_not_without_a_token(
    env: tuple[Workspace, Runtime, dict[str, str]],
) -> None:
    ws, rt, _ = env
    ro = bearer(token_for(ws, "readonly", sub="viewer"))
    with TestClient(
        create_app(rt, manage_runtime=False), base_url="http://localhost:3850", client=("10.1.2.3", 5000)
    ) as c:
        assert c.get("/api/knowledge/entities").status_code == 401  # remote, no token
        assert c.get("/api/knowledge/entities", headers=ro).status_code == 200
