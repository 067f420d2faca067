"""Agent isolation: agent A's private memories never reach agent B through recall, search,
list, get, similar, history, export, hook output or MCP tool results, under each read policy;
both for agent-scoped tokens (remote callers) and for local callers naming their agent."""

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
    {"name": "dave", "readPolicy": "group", "group": ["bob", "dave"]},
    {"name": "erin", "readPolicy": "isolated"},
]
SECRET = "alice private zebra migration plan with the vault code"
PUBLIC = "alice global zebra note about the team offsite"
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-06-18"}
# reader -> (sees alice's global memory?)
READERS = {"bob": True, "carol": True, "dave": False, "erin": False}


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Workspace, Runtime, dict[str, str]]]:
    ws = Workspace(tmp_path_factory.mktemp("iso") / "ws")
    setup_workspace(ws, agent_name="t", user_name="T", embedding_provider="local")
    write_config(
        ws,
        memory={"pipelineV2": {"enabled": False, "extraction": {"provider": "none"}}},
        auth={"mode": "hybrid"},
        agents={"roster": ROSTER},
    )
    rt = start_runtime(ws)
    ids: dict[str, str] = {}
    with TestClient(create_app(rt, manage_runtime=False), base_url="http://127.0.0.1:3850") as c:
        for key, body in {
            "secret": {"content": SECRET, "agent_id": "alice", "visibility": "private"},
            "public": {"content": PUBLIC, "agent_id": "alice", "visibility": "global"},
            **{
                f"own-{r}": {"content": f"{r} private zebra diary entry", "agent_id": r, "visibility": "private"}
                for r in READERS
            },
            "bob-public": {"content": "bob global zebra checklist", "agent_id": "bob", "visibility": "global"},
        }.items():
            r = c.post("/api/memory/remember", json=body)
            assert r.status_code == 200, r.text
            ids[key] = r.json()["id"]
    synced = rt.db.read(lambda conn: conn.execute("SELECT count(*) FROM agents").fetchone()[0])
    assert synced == len(ROSTER)
    assert rt.embeddings.wait_idle(60), "embeddings still pending"
    yield ws, rt, ids
    rt.stop()


def _reads(c: TestClient, ids: dict[str, str], reader: str, headers: dict[str, str]) -> dict[str, Any]:
    """Every read path, as the reader; returns each response's text."""
    own = ids[f"own-{reader}"]
    out: dict[str, Any] = {
        "recall": c.post("/api/memory/recall", headers=headers, json={"query": "zebra", "limit": 50, "min_score": 0.0}),
        "search": c.get("/api/memory/search", headers=headers, params={"q": "zebra vault", "limit": 50}),
        "legacy": c.get("/memory/search", headers=headers, params={"q": "zebra", "limit": 50}),
        "list": c.get("/api/memories", headers=headers, params={"limit": 200}),
        "similar": c.get("/memory/similar", headers=headers, params={"id": own, "limit": 50}),
        "export": c.get("/api/embeddings", headers=headers),
        "session-start": c.post(
            "/api/hooks/session-start", headers=headers, json={"harness": "claude-code", "session_id": f"s-{reader}"}
        ),
        "prompt": c.post(
            "/api/hooks/user-prompt-submit",
            headers=headers,
            json={"harness": "claude-code", "session_id": f"s-{reader}", "prompt": "zebra migration plan vault code"},
        ),
        "hook-recall": c.post("/api/hooks/recall", headers=headers, json={"query": "zebra vault code"}),
    }
    for name in ("memory_search", "memory_list"):
        args = {"query": "zebra vault code", "limit": 50} if name == "memory_search" else {"limit": 200}
        out[f"mcp-{name}"] = c.post(
            "/mcp",
            headers={**MCP_HEADERS, **headers},
            json={"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": name, "arguments": args}},
        )
    return out


def _check(reads: dict[str, Any], ids: dict[str, str], reader: str, sees_public: bool) -> None:
    for path, r in reads.items():
        assert r.status_code == 200, (reader, path, r.status_code, r.text[:300])
        assert SECRET not in r.text and ids["secret"] not in r.text, (reader, path, "leaked alice's private memory")
        if not sees_public:
            assert PUBLIC not in r.text and ids["public"] not in r.text, (reader, path, "leaked alice's global memory")
    # the reads do work: the reader's own private memory comes back where a list is returned
    for path in ("recall", "list", "export", "mcp-memory_list"):
        assert ids[f"own-{reader}"] in reads[path].text, (reader, path)
    assert (ids["public"] in reads["list"].text) == sees_public, (reader, "list")
    assert (ids["public"] in reads["recall"].text) == sees_public, (reader, "recall")


@pytest.mark.parametrize("reader", sorted(READERS))
def test_agent_token_never_reads_anothers_private_memories(
    env: tuple[Workspace, Runtime, dict[str, str]], reader: str
) -> None:
    ws, rt, ids = env
    tok = bearer(token_for(ws, "agent", sub=reader, agent=reader))
    with TestClient(
        create_app(rt, manage_runtime=False), base_url="http://localhost:3850", client=("10.1.2.3", 5000)
    ) as c:
        _check(_reads(c, ids, reader, tok), ids, reader, READERS[reader])
        for mid in (ids["secret"],) + (() if READERS[reader] else (ids["public"],)):
            assert c.get(f"/api/memory/{mid}", headers=tok).status_code == 404
            assert c.get(f"/api/memory/{mid}/history", headers=tok).status_code == 404
            assert c.get("/memory/similar", headers=tok, params={"id": mid}).status_code == 404
            r = c.post(
                "/mcp",
                headers={**MCP_HEADERS, **tok},
                json={
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": "tools/call",
                    "params": {"name": "memory_get", "arguments": {"id": mid}},
                },
            )
            assert r.json()["result"]["isError"] is True and SECRET not in r.text
            # nor change it
            assert (
                c.patch(f"/api/memory/{mid}", headers=tok, json={"content": "pwned", "reason": "x"}).status_code == 404
            )
            assert c.delete(f"/api/memory/{mid}", headers=tok, params={"reason": "x"}).status_code == 404
        # writing as another agent is refused; a write without agent_id is the token's agent
        r = c.post("/api/memory/remember", headers=tok, json={"content": "impersonation", "agent_id": "alice"})
        assert r.status_code == 403 and r.json()["reason"] == "scope_mismatch"
        r = c.post(
            "/api/memory/remember", headers=tok, json={"content": f"{reader} writes zebra log", "visibility": "private"}
        )
        assert r.status_code == 200
        assert c.get(f"/api/memory/{r.json()['id']}", headers=tok).json()["agent_id"] == reader


@pytest.mark.parametrize("reader", sorted(READERS))
def test_local_caller_naming_an_agent_gets_its_policy(
    env: tuple[Workspace, Runtime, dict[str, str]], reader: str
) -> None:
    _, rt, ids = env
    with TestClient(
        create_app(rt, manage_runtime=False), base_url="http://127.0.0.1:3850", client=("127.0.0.1", 5000)
    ) as c:
        reads = _reads(c, ids, reader, {"X-Signet-Agent": reader})
        reads.pop("mcp-memory_search")  # MCP forwards the token, not this header: covered with tokens
        reads.pop("mcp-memory_list")
        for path, r in reads.items():
            assert r.status_code == 200, (path, r.text[:200])
            assert SECRET not in r.text and ids["secret"] not in r.text, (reader, path)
        # hooks name the agent in the body or an OpenClaw session key
        for body in ({"agent_id": reader}, {"session_id": f"agent:{reader}:main"}):
            r = c.post(
                "/api/hooks/user-prompt-submit",
                json={"harness": "openclaw", "prompt": "zebra vault code migration plan", **body},
            )
            assert r.status_code == 200 and SECRET not in r.text, (reader, body)
            r = c.post("/api/hooks/session-start", json={"harness": "openclaw", **body})
            assert r.status_code == 200 and SECRET not in r.text, (reader, body)
        assert c.get(f"/api/memory/{ids['secret']}", params={"agent_id": reader}).status_code == 404


def test_single_agent_local_caller_sees_everything_as_before(env: tuple[Workspace, Runtime, dict[str, str]]) -> None:
    _, rt, ids = env
    with TestClient(create_app(rt, manage_runtime=False), base_url="http://127.0.0.1:3850") as c:
        listed = c.get("/api/memories", params={"limit": 200}).text
        assert ids["secret"] in listed and ids["public"] in listed
        assert c.get("/api/auth/whoami").json()["read_policy"] == "all"


def test_resolve_agent_id() -> None:
    from signet.auth.agents import resolve_agent_id

    assert resolve_agent_id("agent:alice:main") == "alice"
    assert resolve_agent_id("agent:bob:telegram:123") == "bob"
    assert resolve_agent_id("agent::x") is None
    assert resolve_agent_id("session-1") is None
    assert resolve_agent_id(None) is None


def test_identity_inheritance_per_agent(env: tuple[Workspace, Runtime, dict[str, str]]) -> None:
    """``agents/{name}/`` files win for that agent; others (and missing files) fall back to the root."""
    ws, rt, _ = env
    root_soul = (ws.root / "SOUL.md").read_text()
    (ws.root / "agents" / "bob").mkdir(parents=True, exist_ok=True)
    (ws.root / "agents" / "bob" / "SOUL.md").write_text("# Soul\nBob's own soul: terse and kind.\n")
    with TestClient(
        create_app(rt, manage_runtime=False), base_url="http://localhost:3850", client=("10.1.2.3", 5000)
    ) as c:
        bob = c.post(
            "/api/hooks/session-start",
            headers=bearer(token_for(ws, "agent", sub="bob", agent="bob")),
            json={"harness": "claude-code", "session_id": "id-bob"},
        ).json()["context"]
        carol = c.post(
            "/api/hooks/session-start",
            headers=bearer(token_for(ws, "agent", sub="carol", agent="carol")),
            json={"harness": "claude-code", "session_id": "id-carol"},
        ).json()["context"]
    assert "Bob's own soul" in bob and "Bob's own soul" not in carol
    first_line = next(line for line in root_soul.splitlines() if line.strip() and not line.startswith("#"))
    assert first_line.strip()[:40] in carol


def test_roster_sync_archives_a_removed_agents_memories(make_workspace: Any) -> None:
    ws = make_workspace(
        embedding="none",
        memory={"pipelineV2": {"enabled": False}},
        agents={"roster": [{"name": "gone", "readPolicy": "isolated"}, {"name": "stays"}]},
    )
    rt = start_runtime(ws)
    try:
        with TestClient(create_app(rt, manage_runtime=False), base_url="http://127.0.0.1") as c:
            mid = c.post("/api/memory/remember", json={"content": "gone's note", "agent_id": "gone"}).json()["id"]
            assert c.get(f"/api/memory/{mid}", headers={"X-Signet-Agent": "stays"}).status_code == 200
        rows = rt.db.read(lambda conn: conn.execute("SELECT name, read_policy FROM agents ORDER BY name").fetchall())
        assert [tuple(r) for r in rows] == [("gone", "isolated"), ("stays", "shared")]
    finally:
        rt.stop()
    write_config(ws, agents={"roster": [{"name": "stays", "readPolicy": "group", "group": ["stays"]}]})
    rt = start_runtime(ws)
    try:
        with TestClient(create_app(rt, manage_runtime=False), base_url="http://127.0.0.1") as c:
            assert c.get(f"/api/memory/{mid}", headers={"X-Signet-Agent": "stays"}).status_code == 404
            assert c.get(f"/api/memory/{mid}").json()["visibility"] == "archived"
        rows = rt.db.read(lambda conn: conn.execute("SELECT name, read_policy FROM agents").fetchall())
        assert [tuple(r) for r in rows] == [("stays", "group")]
    finally:
        rt.stop()


def test_identical_text_from_another_agent_is_its_own_memory(env: tuple[Workspace, Runtime, dict[str, str]]) -> None:
    """Dedupe is per agent (migration 8): erin saying exactly what alice said privately must not
    get alice's memory back -- that would tell erin it exists and store nothing for erin."""
    _, rt, ids = env
    with TestClient(create_app(rt, manage_runtime=False), base_url="http://127.0.0.1:3850") as c:
        r = c.post(
            "/api/memory/remember",
            json={"content": SECRET, "agent_id": "erin", "visibility": "private"},
            headers={"X-Signet-Agent": "erin"},
        )
        assert r.status_code == 200, r.text
        assert r.json()["deduped"] is False and r.json()["id"] != ids["secret"]
        mine = r.json()["id"]
        again = c.post(
            "/api/memory/remember",
            json={"content": SECRET, "agent_id": "erin", "visibility": "private"},
            headers={"X-Signet-Agent": "erin"},
        ).json()
        assert again["deduped"] is True and again["id"] == mine  # still one per agent
        assert c.get(f"/api/memory/{mine}", headers={"X-Signet-Agent": "erin"}).json()["agent_id"] == "erin"
        assert c.get(f"/api/memory/{ids['secret']}", headers={"X-Signet-Agent": "erin"}).status_code == 404
