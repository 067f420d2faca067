"""Isolation of the LLM-built knowledge: agent A's entities, attributes and supersession marks
never reach agent B's recall, knowledge endpoints or MCP tools, under each read policy (agent
tokens from a remote address, and local callers naming their agent). Facts the pipeline derives
from a private memory stay private."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from signet.daemon.app import create_app
from signet.runtime import Runtime
from signet.workspace import Workspace, setup_workspace
from tests.auth.conftest import bearer, token_for
from tests.conftest import start_runtime, write_config
from tests.pipeline.conftest import pipeline_config, rows, wait_idle
from tests.pipeline.fake_llm import FakeLLM, as_json

ROSTER = [
    {"name": "alice", "readPolicy": "isolated"},
    {"name": "bob", "readPolicy": "shared"},
    {"name": "carol", "readPolicy": "group", "group": ["alice", "carol"]},
    {"name": "dave", "readPolicy": "group", "group": ["bob", "dave"]},
    {"name": "erin", "readPolicy": "isolated"},
]
READERS = {"bob": "shared", "carol": "group with alice", "dave": "group without alice", "erin": "isolated"}
SEES_ALICE_GLOBAL = {"bob": True, "carol": True, "dave": False, "erin": False}
OLD = "Alice Moreau lives in Berlin, near the old harbour."
NEW = "Alice Moreau moved to Paris in May; she keeps the new address private."
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-06-18"}
CITY = {"Berlin": "Berlin", "Paris": "Paris", "Lyon": "Lyon"}


def _extract(text: str) -> str:
    city = next((c for c in CITY if c in text), None)
    if city is None:
        return as_json({"facts": [], "entities": []})
    fact = {"content": f"Alice Moreau lives in {city}.", "type": "fact", "confidence": 0.9}
    return as_json({"facts": [fact], "entities": []})


def _knowledge(text: str, known: list[str]) -> str:
    city = next((c for c in CITY if c in text), None)
    if city is None:
        return as_json({"entities": []})
    attr = {"key": "city", "value": city, "kind": "state", "confidence": 0.9}
    return as_json(
        {"entities": [{"name": "Alice Moreau", "type": "person", "aspects": [{"name": "home", "attributes": [attr]}]}]}
    )


@pytest.fixture(scope="module")
def env() -> Iterator[tuple[Workspace, Runtime, dict[str, str]]]:
    fake = FakeLLM().start()
    fake.extract = _extract
    fake.knowledge = _knowledge
    tmp = tempfile.TemporaryDirectory()
    ws = Workspace(Path(tmp.name) / "ws")
    setup_workspace(ws, agent_name="t", user_name="T", embedding_provider="none")
    write_config(ws, memory=pipeline_config(fake), auth={"mode": "hybrid"}, agents={"roster": ROSTER})
    rt = start_runtime(ws)
    ids: dict[str, str] = {}
    with TestClient(create_app(rt, manage_runtime=False), base_url="http://127.0.0.1:3850") as c:
        for key, body in {
            "alice-old": {"content": OLD, "agent_id": "alice", "visibility": "global"},
            "alice-new": {"content": NEW, "agent_id": "alice", "visibility": "private"},
            "bob": {"content": "Bob heard Alice Moreau lives in Lyon these days.", "agent_id": "bob"},
        }.items():
            r = c.post("/api/memory/remember", json=body)
            assert r.status_code == 200, r.text
            ids[key] = r.json()["id"]
            wait_idle(rt)
    yield ws, rt, ids
    rt.stop()
    fake.stop()
    tmp.cleanup()


def _mcp(c: TestClient, headers: dict[str, str], name: str, args: dict[str, Any]) -> dict[str, Any]:
    r = c.post(
        "/mcp",
        headers={**MCP_HEADERS, **headers},
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": name, "arguments": args}},
    )
    assert r.status_code == 200, r.text
    return dict(r.json()["result"])


def _entity(c: TestClient, headers: dict[str, str]) -> str:
    found = c.get("/api/knowledge/entities", headers=headers, params={"q": "moreau"}).json()["entities"]
    assert len(found) == 1, found
    return str(found[0]["id"])


def test_the_owner_sees_its_knowledge_and_marks(env: tuple[Workspace, Runtime, dict[str, str]]) -> None:
    """The positive control: alice's own recall marks her old memory and puts the new one first."""
    ws, rt, ids = env
    alice = bearer(token_for(ws, "agent", sub="alice", agent="alice"))
    with TestClient(create_app(rt, manage_runtime=False), base_url="http://127.0.0.1:3850") as c:
        hits = c.post(
            "/api/memory/recall", headers=alice, json={"query": "Alice Moreau Berlin harbour", "min_score": 0}
        ).json()["results"]
        by_id = {h["id"]: h for h in hits}
        assert by_id[ids["alice-old"]]["superseded"] is True
        assert by_id[ids["alice-old"]]["superseded_by"] == ids["alice-new"]
        assert hits[0]["id"] == ids["alice-new"] and hits[0]["current"] is True
        detail = c.get(f"/api/knowledge/entities/{_entity(c, alice)}", headers=alice).json()
        values = {t["value"]: t["status"] for a in detail["aspects"] for t in a["attributes"]}
        assert values == {"Berlin": "superseded", "Paris": "active"}
        (claim,) = c.get("/api/knowledge/claims", headers=alice).json()["claims"]
        assert claim["entity_name"] == "Alice Moreau" and claim["aspect"] == "home"
        assert claim["current"]["value"] == "Paris" and claim["current"]["source_memory_id"] == ids["alice-new"]
        assert [(h["value"], h["status"]) for h in claim["history"]] == [("Berlin", "superseded")]
        assert claim["history"][0]["superseded_at"] is not None
        # the MCP tools (through the SDK's async client) pass their arguments on
        res = _mcp(c, alice, "knowledge_claims", {"changed": True, "limit": 5})["structuredContent"]
        assert [k["current"]["value"] for k in res["claims"]] == ["Paris"]
        res = _mcp(c, alice, "knowledge_list_attributes", {"status": "superseded", "aspect": "home"})
        assert [a["value"] for a in res["structuredContent"]["attributes"]] == ["Berlin"]
    # the fact derived from the private memory is private too
    derived = rows(
        rt, "SELECT visibility FROM memories WHERE source_type = 'pipeline' AND source_id = ?", ids["alice-new"]
    )
    assert [d[0] for d in derived] == ["private"]


def _check_reader(
    c: TestClient, tok: dict[str, str], ws: Workspace, ids: dict[str, str], reader: str, *, mcp: bool = True
) -> None:
    alice = bearer(token_for(ws, "agent", sub="alice", agent="alice"))
    alice_entity = _entity(c, alice)
    # recall: alice's private memory and its derived fact never come back; no result carries
    # a mark made of alice's claims (which would say a newer, private value exists)
    r = c.post(
        "/api/memory/recall",
        headers=tok,
        json={"query": "Where does Alice Moreau live, Berlin?", "limit": 50, "min_score": 0},
    )
    assert r.status_code == 200, r.text
    hits = r.json()["results"]
    got = {h["id"] for h in hits}
    assert ids["alice-new"] not in got and not any("Paris" in h["content"] for h in hits)
    assert ids["alice-new"] not in r.text
    assert (ids["alice-old"] in got) == SEES_ALICE_GLOBAL[reader], (reader, hits)
    for h in hits:
        assert h["superseded"] is False and h["superseded_by"] is None, (reader, h)
        if h["id"] != ids["bob"]:
            assert h["current"] is False, (reader, h)
    # knowledge endpoints: alice's entity is unknown, her attributes invisible
    listed = c.get("/api/knowledge/entities", headers=tok, params={"q": "moreau"}).json()
    assert alice_entity not in {e["id"] for e in listed["entities"]}
    for path in (f"/api/knowledge/entities/{alice_entity}", f"/api/knowledge/entities/{alice_entity}/expand"):
        r = c.get(path, headers=tok)
        assert r.status_code == 404 and "Berlin" not in r.text and "Paris" not in r.text
    r = c.get("/api/knowledge/entities", headers=tok, params={"agent_id": "alice"})
    assert r.status_code == 403 and r.json()["reason"] == "scope_mismatch"
    for path in ("/api/knowledge/attributes", "/api/knowledge/claims"):
        r = c.get(path, headers=tok, params={"status": "all"} if path.endswith("attributes") else {})
        assert r.status_code == 200 and "Berlin" not in r.text and "Paris" not in r.text, (reader, r.text)
        r = c.get(path, headers=tok, params={"entity_id": alice_entity})
        assert r.status_code == 404 and "Berlin" not in r.text
    if reader == "bob":  # bob's own claim about the same name is his, and not superseded by alice's
        own = c.get(f"/api/knowledge/entities/{_entity(c, tok)}", headers=tok).json()
        assert [(t["value"], t["status"]) for a in own["aspects"] for t in a["attributes"]] == [("Lyon", "active")]
        claims = c.get("/api/knowledge/claims", headers=tok).json()["claims"]
        assert [(k["current"]["value"], k["history"]) for k in claims] == [("Lyon", [])]
    if not mcp:
        return
    # MCP tools with the same token
    res = _mcp(c, tok, "knowledge_get_entity", {"entity_id": alice_entity})
    assert res["isError"] is True and "Berlin" not in str(res) and "Paris" not in str(res)
    res = _mcp(c, tok, "knowledge_expand", {"entity_id": alice_entity})
    assert res["isError"] is True and OLD not in str(res)
    for tool in ("knowledge_list_attributes", "knowledge_claims"):
        res = _mcp(c, tok, tool, {})
        assert res["isError"] is False and "Berlin" not in str(res) and "Paris" not in str(res), (reader, res)
        res = _mcp(c, tok, tool, {"entity_id": alice_entity})
        assert res["isError"] is True and "Berlin" not in str(res)
    res = _mcp(c, tok, "knowledge_list_entities", {"q": "moreau"})
    assert alice_entity not in {e["id"] for e in res["structuredContent"]["entities"]}
    res = _mcp(c, tok, "memory_search", {"query": "Alice Moreau Berlin", "min_score": 0})
    assert res["isError"] is False and ids["alice-new"] not in str(res)
    for h in res["structuredContent"]["results"]:
        assert h["superseded"] is False and h["superseded_by"] is None, (reader, h)


@pytest.mark.parametrize("reader", sorted(READERS))
def test_agent_token_never_gets_anothers_knowledge(env: tuple[Workspace, Runtime, dict[str, str]], reader: str) -> None:
    ws, rt, ids = env
    tok = bearer(token_for(ws, "agent", sub=reader, agent=reader))
    with TestClient(
        create_app(rt, manage_runtime=False), base_url="http://localhost:3850", client=("10.1.2.3", 5000)
    ) as c:
        _check_reader(c, tok, ws, ids, reader)


@pytest.mark.parametrize("reader", sorted(READERS))
def test_local_caller_naming_an_agent_never_gets_anothers_knowledge(
    env: tuple[Workspace, Runtime, dict[str, str]], reader: str
) -> None:
    """The agent named by header (MCP forwards the token, not this header: covered with tokens)."""
    ws, rt, ids = env
    with TestClient(
        create_app(rt, manage_runtime=False), base_url="http://127.0.0.1:3850", client=("127.0.0.1", 5000)
    ) as c:
        _check_reader(c, {"X-Signet-Agent": reader}, ws, ids, reader, mcp=False)
