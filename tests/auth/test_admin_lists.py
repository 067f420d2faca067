"""The admin's lists the dashboard's Agents page shows: ``GET /api/auth/agents`` (the roster and
any other agent owning memories, with live counts) and ``GET /api/auth/revocations`` (revoked
tokens, never the token itself); both refused below admin and without a token; bad paging is 422."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
from fastapi.testclient import TestClient

from signet.auth.tokens import token_id
from signet.daemon.app import create_app
from signet.workspace import Workspace
from tests.auth.conftest import bearer, configure, token_for
from tests.conftest import start_runtime

ROSTER = [{"name": "ci-bot", "readPolicy": "isolated"}, {"name": "pair", "readPolicy": "group", "group": ["ci-bot"]}]


@pytest.fixture
def team(make_workspace: Callable[..., Workspace]) -> Iterator[tuple[Workspace, TestClient]]:
    ws = configure(
        make_workspace(embedding="none", memory={"pipelineV2": {"enabled": False}}, agents={"roster": ROSTER}), "team"
    )
    rt = start_runtime(ws)
    try:
        with TestClient(create_app(rt, manage_runtime=False), base_url="http://127.0.0.1:3850") as c:
            yield ws, c
    finally:
        rt.stop()


def test_agents_lists_the_roster_and_memory_owners_with_live_counts(team: tuple[Workspace, TestClient]) -> None:
    ws, c = team
    admin = bearer(token_for(ws, "admin"))
    for body in (
        {"content": "ci note one", "agent_id": "ci-bot"},
        {"content": "a stray agent's note", "agent_id": "stray"},
    ):
        assert c.post("/api/memory/remember", headers=admin, json=body).status_code == 200
    gone = c.post("/api/memory/remember", headers=admin, json={"content": "ci note two", "agent_id": "ci-bot"}).json()
    assert c.delete(f"/api/memory/{gone['id']}", headers=admin, params={"reason": "test"}).status_code == 200
    r = c.get("/api/auth/agents", headers=admin)
    assert r.status_code == 200, r.text
    items = {a["name"]: a for a in r.json()["items"]}
    assert items["ci-bot"] == {
        "name": "ci-bot",
        "read_policy": "isolated",
        "group": [],
        "on_roster": True,
        "memories": 1,
    }
    assert items["pair"]["group"] == ["ci-bot"] and items["pair"]["memories"] == 0
    assert items["stray"] == {"name": "stray", "read_policy": "shared", "group": [], "on_roster": False, "memories": 1}


def test_revocations_list_ids_never_tokens_newest_first_with_paging(team: tuple[Workspace, TestClient]) -> None:
    ws, c = team
    admin = bearer(token_for(ws, "admin"))
    assert c.get("/api/auth/revocations", headers=admin).json() == {"items": [], "total": 0}
    first, second = token_for(ws, "agent", sub="first"), token_for(ws, "readonly", sub="second")
    for tok, why in ((first, "lost laptop"), (second, None)):
        assert c.post("/api/auth/revoke", headers=admin, json={"token": tok, "reason": why}).status_code == 200
    r = c.get("/api/auth/revocations", headers=admin)
    assert r.status_code == 200 and r.json()["total"] == 2
    assert {x["sub"]: x["reason"] for x in r.json()["items"]} == {"first": "lost laptop", "second": None}
    assert {x["token_id"] for x in r.json()["items"]} == {token_id(first)[:12], token_id(second)[:12]}
    assert first not in r.text and second not in r.text and token_id(first) not in r.text
    page = c.get("/api/auth/revocations", headers=admin, params={"limit": 1, "offset": 1}).json()
    assert len(page["items"]) == 1 and page["total"] == 2
    assert c.get("/api/memories", headers=bearer(first)).status_code == 401


@pytest.mark.parametrize("path", ["/api/auth/agents", "/api/auth/revocations"])
def test_below_admin_is_refused_and_bad_paging_is_422(team: tuple[Workspace, TestClient], path: str) -> None:
    ws, c = team
    for role in ("operator", "agent", "readonly"):
        r = c.get(path, headers=bearer(token_for(ws, role)))
        assert r.status_code == 403 and "error" in r.json(), role
    assert c.get(path).status_code == 401
    admin = bearer(token_for(ws, "admin"))
    if path.endswith("revocations"):
        for bad in ({"limit": 0}, {"limit": 501}, {"offset": -1}, {"limit": "many"}):
            r = c.get(path, headers=admin, params=bad)
            assert r.status_code == 422 and "error" in r.json(), bad
