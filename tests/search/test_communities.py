"""Entity communities (signet.knowledge.communities): Louvain over each agent's entity graph,
stored in one write, read through the API and the MCP tool; a memory naming many entities
pairs only a few; recomputed after a maintenance cycle only when the graph changed; agent A's
communities never reach agent B (scoped tokens, ``agent_id``, each read policy); unknown ids
and bad parameters are JSON 4xx. Runs on PostgreSQL too (``SIGNET_TEST_STORAGE=postgres``)."""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from signet.daemon.app import create_app
from signet.knowledge.communities import PER_MEMORY, build_graph
from signet.knowledge.community_upkeep import CommunityService
from signet.runtime import Runtime
from signet.workspace import Workspace, setup_workspace
from tests.auth.conftest import bearer, token_for
from tests.conftest import TEST_STORAGE, pg_storage_section, start_runtime, write_config

ROSTER = [
    {"name": "alice", "readPolicy": "isolated"},
    {"name": "bob", "readPolicy": "shared"},
    {"name": "carol", "readPolicy": "group", "group": ["alice", "carol"]},
]
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-06-18"}
PAYMENTS = ["Alice Moreau", "Payments Service", "Acme Corp"]
FERRIES = ["Nordic Ferry", "Oslo Harbour", "Bergen Line"]
DEFAULT_TEXTS = [
    "Alice Moreau reviewed the Payments Service for Acme Corp.",
    "Acme Corp pays Alice Moreau to run the Payments Service.",
    "Alice Moreau says the Payments Service is slow, and Acme Corp agrees.",
    "Nordic Ferry boats leave Oslo Harbour for Bergen Line trains.",
    "Oslo Harbour sells Bergen Line tickets next to Nordic Ferry boats.",
    "Bergen Line trains and Nordic Ferry boats meet in Oslo Harbour.",
]
ALICE_TEXTS = [
    "Zanzibar Quill met Lemon Harbor at Quartz Tower.",
    "At Quartz Tower Zanzibar Quill and Lemon Harbor signed the lease.",
]


def _workspace(root: Any, **sections: Any) -> Workspace:
    ws = Workspace(root)
    setup_workspace(ws, agent_name="t", user_name="T", embedding_provider="none")
    write_config(ws, memory={"pipelineV2": {"enabled": False, "extraction": {"provider": "none"}}})
    write_config(ws, **sections)
    if TEST_STORAGE == "postgres":
        write_config(ws, storage=pg_storage_section())
    return ws


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Workspace, Runtime]]:
    ws = _workspace(tmp_path_factory.mktemp("communities") / "ws", auth={"mode": "hybrid"}, agents={"roster": ROSTER})
    rt = start_runtime(ws)
    with _client(rt) as c:
        for agent, texts in (("default", DEFAULT_TEXTS), ("alice", ALICE_TEXTS)):
            for text in texts:
                r = c.post("/api/memory/remember", json={"content": text, "agent_id": agent})
                assert r.status_code == 200, r.text
    yield ws, rt
    rt.stop()


def _client(rt: Runtime) -> TestClient:
    return TestClient(create_app(rt, manage_runtime=False), base_url="http://127.0.0.1:3850")


def _members(community: dict[str, Any]) -> frozenset[str]:
    return frozenset(m["name"] for m in community["members"])


def _mcp(c: TestClient, headers: dict[str, str], args: dict[str, Any]) -> dict[str, Any]:
    r = c.post(
        "/mcp",
        headers={**MCP_HEADERS, **headers},
        json={
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "knowledge_list_communities", "arguments": args},
        },
    )
    assert r.status_code == 200, r.text
    return dict(r.json()["result"])


def test_two_groups_of_entities_become_two_communities_replaced_on_each_run(env: tuple[Workspace, Runtime]) -> None:
    _, rt = env
    with _client(rt) as c:
        assert c.get("/api/knowledge/communities").json() == {
            "agent_id": "default",
            "communities": [],
            "total": 0,
            "computed_at": None,
        }
        r = c.post("/api/knowledge/communities/refresh")
        assert r.status_code == 200, r.text
        done = r.json()
        assert done["agent_id"] == "default" and done["communities"] == 2 and done["members"] == 6
        assert done["modularity"] > 0.3 and done["hubs"] == []
        listed = c.get("/api/knowledge/communities").json()
        assert listed["total"] == 2 and listed["computed_at"] == done["computed_at"]
        assert {_members(x) for x in listed["communities"]} == {frozenset(FERRIES), frozenset(PAYMENTS)}
        for com in listed["communities"]:
            assert com["size"] == 3 and com["quality"] == "strong"
            assert com["name"] == ", ".join(m["name"] for m in com["members"])  # its most mentioned members
        for com in listed["communities"]:  # each member's entity names its community
            entity = c.get(f"/api/knowledge/entities/{com['members'][0]['id']}").json()
            assert entity["community"] == {"id": com["id"], "name": com["name"], "size": 3}
        detail = c.get(f"/api/knowledge/communities/{listed['communities'][0]['id']}").json()
        assert detail["agent_id"] == "default" and detail["members_total"] == 3 and len(detail["members"]) == 3
        page = c.get(f"/api/knowledge/communities/{detail['id']}", params={"limit": 1, "offset": 1}).json()
        assert [m["id"] for m in page["members"]] == [detail["members"][1]["id"]]
        assert c.get("/api/knowledge/communities", params={"members": 0}).json()["communities"][0]["members"] == []
        # a second run replaces the first: the same communities keep their ids, nothing piles up
        again = c.post("/api/knowledge/communities/refresh").json()
        assert again["communities"] == 2
        relisted = c.get("/api/knowledge/communities").json()
        assert {x["id"] for x in relisted["communities"]} == {x["id"] for x in listed["communities"]}
        assert relisted["computed_at"] == again["computed_at"] > listed["computed_at"]
    rows = rt.db.read(
        lambda conn: conn.execute(
            "SELECT COUNT(*) FROM entity_communities c JOIN entity_community_members m ON m.community_id = c.id"
            " WHERE c.agent_id = 'default'"
        ).fetchone()[0]
    )
    assert rows == 6


def test_unknown_ids_and_bad_parameters_are_json_4xx(env: tuple[Workspace, Runtime]) -> None:
    _, rt = env
    with _client(rt) as c:
        r = c.get("/api/knowledge/communities/nope")
        assert r.status_code == 404 and "no community" in r.json()["error"]
        r = c.get("/api/knowledge/communities/..%2F..%2Fetc%2Fpasswd")
        assert r.status_code == 404 and "error" in r.json()
        assert c.get("/api/knowledge/communities/" + "x" * 500).status_code == 422
        for params in ({"limit": 0}, {"limit": "many"}, {"members": 51}, {"offset": -1}, {"agent_id": ""}):
            r = c.get("/api/knowledge/communities", params=params)
            assert r.status_code == 422 and "error" in r.json(), params
        r = c.post("/api/knowledge/communities/refresh", params={"agent_id": "x" * 300})
        assert r.status_code == 422 and "error" in r.json()
        assert c.delete("/api/knowledge/communities/nope").status_code == 405
        # an agent without a graph has no communities, and a refresh says so
        done = c.post("/api/knowledge/communities/refresh", params={"agent_id": "nobody"}).json()
        assert done["communities"] == 0 and done["entities"] == 0 and done["modularity"] is None


def test_agent_a_communities_never_reach_agent_b(env: tuple[Workspace, Runtime]) -> None:
    ws, rt = env
    alice = bearer(token_for(ws, "agent", sub="alice", agent="alice"))
    with _client(rt) as c:
        done = c.post("/api/knowledge/communities/refresh", headers=alice).json()
        assert done["agent_id"] == "alice" and done["communities"] == 1
        mine = c.get("/api/knowledge/communities", headers=alice).json()
        assert mine["agent_id"] == "alice"
        assert _members(mine["communities"][0]) == {"Zanzibar Quill", "Lemon Harbor", "Quartz Tower"}
        alice_id = mine["communities"][0]["id"]
        assert c.get(f"/api/knowledge/communities/{alice_id}", headers=alice).status_code == 200
        res = _mcp(c, alice, {"members": 3})
        assert res["isError"] is False and [x["id"] for x in res["structuredContent"]["communities"]] == [alice_id]
        for reader in ("bob", "carol"):
            tok = bearer(token_for(ws, "agent", sub=reader, agent=reader))
            listed = c.get("/api/knowledge/communities", headers=tok).json()
            assert listed["agent_id"] == reader and alice_id not in {x["id"] for x in listed["communities"]}
            assert "Zanzibar" not in str(listed)
            assert c.get(f"/api/knowledge/communities/{alice_id}", headers=tok).status_code == 404
            for method in ("get", "post"):
                path = "/api/knowledge/communities" + ("/refresh" if method == "post" else "")
                r = getattr(c, method)(path, headers=tok, params={"agent_id": "alice"})
                assert r.status_code == 403 and r.json()["reason"] == "scope_mismatch", (reader, method)
            res = _mcp(c, tok, {})
            assert res["isError"] is False and "Zanzibar" not in str(res)
        # the local default agent does not see alice's either, unless it names her
        assert c.get(f"/api/knowledge/communities/{alice_id}").status_code == 404
        assert "Zanzibar" not in c.get("/api/knowledge/communities").text
        named = c.get("/api/knowledge/communities", params={"agent_id": "alice"}).json()
        assert [x["id"] for x in named["communities"]] == [alice_id]
        # a readonly token reads but may not recompute
        ro = bearer(token_for(ws, "readonly", sub="viewer"))
        assert c.get("/api/knowledge/communities", headers=ro).status_code == 200
        assert c.post("/api/knowledge/communities/refresh", headers=ro).status_code == 403


def test_a_memory_naming_many_entities_pairs_only_its_most_mentioned(env: tuple[Workspace, Runtime]) -> None:
    _, rt = env
    names = [f"Zorblat{chr(65 + i // 26)}{chr(97 + i % 26)}x Vendor" for i in range(40)]
    ids = []
    with _client(rt) as c:
        for order in (names, list(reversed(names))):  # two memories: each name is mentioned twice
            r = c.post(
                "/api/memory/remember", json={"content": "Vendors: " + ", ".join(order) + ".", "agent_id": "dave"}
            )
            assert r.status_code == 200, r.text
            ids.append(r.json()["id"])
    graph = rt.db.read(lambda conn: build_graph(conn, "dave"))
    assert len(graph.nodes) >= 40
    pairs = PER_MEMORY * (PER_MEMORY - 1) // 2
    assert 0 < len(graph.weights) <= 2 * pairs  # not 780 per memory
    for w in graph.weights.values():
        assert w in (1 / (PER_MEMORY - 1), 2 / (PER_MEMORY - 1))
    assert max(sum(w for (a, b), w in graph.weights.items() if k in (a, b)) for k in graph.nodes) <= 2 + 1e-9
    # a forgotten memory's co-mentions no longer count
    with _client(rt) as c:
        r = c.delete(f"/api/memory/{ids[1]}", params={"reason": "test"})
        assert r.status_code == 200, r.text
    after = rt.db.read(lambda conn: build_graph(conn, "dave"))
    assert 0 < len(after.weights) <= pairs and set(after.weights.values()) == {1 / (PER_MEMORY - 1)}


def test_hubs_are_left_out(env: tuple[Workspace, Runtime]) -> None:
    _, rt = env
    with _client(rt) as c:
        batch = [
            {"content": f"Hubert Hubbard met {a} Quist and {b} Quist on day {i}.", "agent_id": "erin"}
            for i, (a, b) in enumerate(itertools.islice(itertools.cycle([("Ann", "Bea"), ("Cal", "Dov")]), 60))
        ]
        r = c.post("/api/memory/remember/batch", json={"items": batch})
        assert r.status_code == 200, r.text
        done = c.post("/api/knowledge/communities/refresh", params={"agent_id": "erin"}).json()
    assert done["hubs"] == ["Hubert Hubbard"]
    with _client(rt) as c:
        listed = c.get("/api/knowledge/communities", params={"agent_id": "erin"}).json()
        hub = c.get("/api/knowledge/entities", params={"agent_id": "erin", "q": "hubert"}).json()["entities"][0]
        detail = c.get(f"/api/knowledge/entities/{hub['id']}", params={"agent_id": "erin"}).json()
        assert detail["name"] == "Hubert Hubbard" and detail["community"] is None
    assert {_members(x) for x in listed["communities"]} == {
        frozenset({"Ann Quist", "Bea Quist"}),
        frozenset({"Cal Quist", "Dov Quist"}),
    }


def test_upkeep_recomputes_only_a_changed_graph(env: tuple[Workspace, Runtime]) -> None:
    _, rt = env
    first = rt.maintenance.run_upkeep()["communities"]
    assert first["error"] is None
    second = rt.maintenance.run_upkeep()["communities"]
    assert second["result"] == "unchanged" and second["error"] is None
    # a restarted daemon knows no signature: communities computed after the last change stand
    assert CommunityService(rt.db).refresh_changed() == "unchanged"
    with _client(rt) as c:
        r = c.post("/api/memory/remember", json={"content": "Carl Dorne joined Alice Moreau on the Payments Service."})
        assert r.status_code == 200
        r = c.post("/api/memory/remember", json={"content": "Carl Dorne fixed the Payments Service."})
        assert r.status_code == 200
    third = rt.maintenance.run_upkeep()["communities"]
    assert third["result"] == "recomputed default: 2", third
    assert rt.maintenance.status()["upkeep"]["communities"]["result"] == third["result"]
    with _client(rt) as c:
        listed = c.get("/api/knowledge/communities").json()
    assert any("Carl Dorne" in _members(x) for x in listed["communities"])


def test_the_scheduled_cycle_computes_them(tmp_path: Any) -> None:
    """The maintenance timer (1 s here) runs the upkeep: communities appear with no call."""
    ws = _workspace(tmp_path / "ws", memory={"pipelineV2": {"autonomous": {"maintenanceIntervalMs": 1000}}})
    rt = start_runtime(ws)
    try:
        with _client(rt) as c:
            for text in DEFAULT_TEXTS:
                assert c.post("/api/memory/remember", json={"content": text}).status_code == 200
            deadline = time.monotonic() + 30
            while c.get("/api/knowledge/communities").json()["total"] != 2:
                assert time.monotonic() < deadline, rt.maintenance.status()
                time.sleep(0.2)
    finally:
        rt.stop()
