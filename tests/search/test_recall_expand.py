"""Recall's ``expand``: the transcript turns a memory was extracted from, attached to the best
results after ranking (docs/recall.md, expand). Real SQLite, the real app (and a real daemon for
the SDK and the CLI): transcripts stored through ``POST /api/ingest/transcript``, memories naming
their session in ``source_id`` as the pipeline writes them. Scoped callers never see turns of
another project's or agent's session, whatever a memory's ``source_id`` says."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from signet.daemon.app import create_app
from signet.models import EXCERPT_TURN_CHARS
from signet.runtime import Runtime
from signet.sdk import SignetClient
from signet.workspace import Workspace, setup_workspace
from tests.auth.conftest import bearer, token_for
from tests.conftest import TEST_STORAGE, DaemonProcess, launch_daemon, pg_storage_section, start_runtime, write_config

ROSTER = [{"name": "alice", "readPolicy": "isolated"}, {"name": "bob", "readPolicy": "shared"}]
LONG = "the rota detail " * 400
DEPLOY_TURNS = [
    {"role": "user", "content": "Where should the new billing service run?"},
    {"role": "assistant", "content": "We could compare the Dublin and Warsaw clusters on latency."},
    {"role": "user", "content": "decided: the deploy target is the Frankfurt cluster from now on"},
    {"role": "assistant", "content": "Noted, I will update the pipeline config for billing."},
    {"role": "user", "content": "and the pager rotation moves to Mondays"},
    {"role": "assistant", "content": LONG},
]
BETA_TURNS = [
    {"role": "user", "content": "beta only: the Frankfurt vault passphrase is hunter2"},
    {"role": "assistant", "content": "I will not repeat the passphrase."},
]
ALICE_TURNS = [
    {"role": "user", "content": "we picked the Lisbon office for the team offsite"},
    {"role": "assistant", "content": "Lisbon it is; I will book the rooms."},
]


def ingest(c: Any, session: str, turns: list[dict[str, str]], **owner: str) -> str:
    body = {
        "path": f"/tmp/{session}.jsonl",
        "content_hash": hashlib.sha256(session.encode()).hexdigest(),
        "adapter": "claude-code",
        "session_id": session,
        "harness": "claude-code",
        "turns": turns,
        **owner,
    }
    r = c.post("/api/ingest/transcript", json=body)
    assert r.status_code == 200, r.text
    return str(r.json()["session_key"])


def remember(c: Any, content: str, headers: dict[str, str] | None = None, **fields: Any) -> str:
    r = c.post("/api/memory/remember", json={"content": content, **fields}, headers=headers or {})
    assert r.status_code == 200, r.text
    return str(r.json()["id"])


def recall(c: Any, query: str, headers: dict[str, str] | None = None, **fields: Any) -> dict[str, Any]:
    r = c.post("/api/memory/recall", json={"query": query, "min_score": 0, **fields}, headers=headers or {})
    assert r.status_code == 200, r.text
    return dict(r.json())


def by_id(res: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {r["id"]: r for r in res["results"]}


Env = tuple[Workspace, Runtime, TestClient, dict[str, str]]


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Env]:
    ws = Workspace(tmp_path_factory.mktemp("expand") / "ws")
    setup_workspace(ws, agent_name="t", user_name="T", embedding_provider="none")
    write_config(
        ws,
        memory={"pipelineV2": {"enabled": False, "extraction": {"provider": "none"}}},
        auth={"mode": "hybrid"},
        agents={"roster": ROSTER},
    )
    if TEST_STORAGE == "postgres":
        write_config(ws, storage=pg_storage_section())
    rt = start_runtime(ws)
    ids: dict[str, str] = {}
    with TestClient(create_app(rt, manage_runtime=False), base_url="http://127.0.0.1:3850") as c:
        ids["deploy-key"] = ingest(c, "deploy-1", DEPLOY_TURNS, project="alpha")
        ids["beta-key"] = ingest(c, "beta-1", BETA_TURNS, project="beta")
        ids["alice-key"] = ingest(c, "alice-1", ALICE_TURNS, agent_id="alice")
        extracted: dict[str, Any] = {"source_type": "pipeline", "project": "alpha"}
        ids["deploy"] = remember(
            c, "The deploy target is the Frankfurt cluster", source_id=ids["deploy-key"], **extracted
        )
        ids["pager"] = remember(c, "The pager rotation moves to Mondays", source_id=ids["deploy-key"], **extracted)
        ids["plain"] = remember(c, "Frankfurt cluster costs are reviewed every quarter", project="alpha")
        ids["offsite"] = remember(
            c,
            "The team offsite is in the Lisbon office",
            agent_id="alice",
            visibility="global",
            source_type="pipeline",
            source_id=ids["alice-key"],
        )
        yield ws, rt, c, ids
    rt.stop()


def test_without_expand_no_result_carries_an_excerpt(env: Env) -> None:
    _, _, c, _ = env
    res = recall(c, "Frankfurt cluster deploy target")
    assert res["results"] and all(r["excerpt"] is None for r in res["results"])


def test_expand_attaches_the_matching_turns_after_ranking(env: Env) -> None:
    _, _, c, ids = env
    plain = recall(c, "Frankfurt cluster deploy target")
    res = recall(c, "Frankfurt cluster deploy target", expand=True)
    assert [r["id"] for r in res["results"]] == [r["id"] for r in plain["results"]]  # order untouched
    assert [r["score"] for r in res["results"]] == [r["score"] for r in plain["results"]]
    hits = by_id(res)
    ex = hits[ids["deploy"]]["excerpt"]
    assert ex["session_key"] == ids["deploy-key"] and ex["turn_index"] == 2
    assert [t["index"] for t in ex["turns"]] == [1, 2, 3]  # the default window: one turn either side
    assert "Frankfurt cluster from now on" in ex["turns"][1]["content"] and ex["turns"][1]["role"] == "user"
    assert hits[ids["plain"]]["excerpt"] is None  # no session source: nothing to join


def test_window_limit_and_turn_cap_bound_the_excerpts(env: Env) -> None:
    _, _, c, ids = env
    res = recall(c, "pager rotation Mondays", expand=True, expand_window=2, limit=1)
    ex = res["results"][0]["excerpt"]
    assert res["results"][0]["id"] == ids["pager"] and ex["turn_index"] == 4
    assert [t["index"] for t in ex["turns"]] == [2, 3, 4, 5]  # the session ends at turn 5
    long = ex["turns"][-1]
    assert long["truncated"] is True and len(long["content"]) == EXCERPT_TURN_CHARS < len(LONG)
    # only the best `expand_limit` results get one
    both = recall(c, "Frankfurt cluster deploy target pager rotation Mondays", expand=True, expand_limit=1)
    assert [r["excerpt"] is not None for r in both["results"]].count(True) <= 1
    assert both["results"][0]["excerpt"] is not None or both["results"][0]["source_id"] is None


@pytest.mark.parametrize(
    "field",
    [
        {"expand_limit": 0},
        {"expand_limit": 11},
        {"expand_limit": -1},
        {"expand_limit": "3; DROP TABLE memories"},
        {"expand_limit": 10**12},
        {"expand_window": -1},
        {"expand_window": 6},
        {"expand_window": 2.5},
        {"expand": {"on": True}},
        {"expand": [1]},
        {"expandLimit": 99},
    ],
)
def test_hostile_expand_values_are_a_4xx_json_answer(env: Env, field: dict[str, Any]) -> None:
    _, _, c, _ = env
    r = c.post("/api/memory/recall", json={"query": "Frankfurt", "expand": True, **field})
    assert r.status_code == 422, r.text
    assert r.headers["content-type"].startswith("application/json") and "error" in r.json()


@pytest.mark.parametrize("value", [{"on": True}, [1], "maybe", 2])
def test_hostile_hook_expand_values_are_a_4xx_json_answer(env: Env, value: Any) -> None:
    _, _, c, _ = env
    r = c.post("/api/hooks/recall", json={"query": "Frankfurt", "expand": value})
    assert r.status_code == 422, r.text
    assert r.headers["content-type"].startswith("application/json") and "error" in r.json()


def test_hook_recall_passes_expand_through(env: Env) -> None:
    _, _, c, ids = env
    r = c.post("/api/hooks/recall", json={"query": "Frankfurt cluster deploy target", "expand": True})
    assert r.status_code == 200, r.text
    assert by_id(r.json())[ids["deploy"]]["excerpt"]["turn_index"] == 2
    r = c.post("/api/hooks/recall", json={"query": "Frankfurt cluster deploy target"})
    assert all(h["excerpt"] is None for h in r.json()["results"])


def test_a_project_token_never_reads_another_projects_session(env: Env) -> None:
    """A memory's ``source_id`` is any writer's to set: an alpha token stores an alpha memory
    naming the beta session and matching its words; its expanded recall shows no beta turn."""
    ws, _, c, ids = env
    alpha = bearer(token_for(ws, "agent", sub="alpha-bot", project="alpha"))
    crafted = remember(
        c, "Frankfurt vault passphrase beta only", headers=alpha, source_type="pipeline", source_id=ids["beta-key"]
    )
    res = recall(c, "Frankfurt vault passphrase", headers=alpha, expand=True, expand_limit=10)
    hits = by_id(res)
    assert crafted in hits and hits[crafted]["excerpt"] is None
    assert "hunter2" not in r_text(res)
    # its own project's session it does read
    own = by_id(recall(c, "Frankfurt cluster deploy target", headers=alpha, expand=True))
    assert own[ids["deploy"]]["excerpt"]["session_key"] == ids["deploy-key"]
    # a beta token sees neither the alpha memory nor the alpha session's turns
    beta = bearer(token_for(ws, "agent", sub="beta-bot", project="beta"))
    res = recall(c, "Frankfurt cluster deploy target", headers=beta, expand=True, expand_limit=10)
    assert "from now on" not in r_text(res)


def r_text(res: dict[str, Any]) -> str:
    return " ".join(t["content"] for r in res["results"] if r["excerpt"] for t in r["excerpt"]["turns"])


def test_another_agents_session_stays_its_own(env: Env) -> None:
    """bob (``shared``) may read alice's global memory, not her conversation; alice reads both."""
    ws, _, c, ids = env
    bob = bearer(token_for(ws, "agent", sub="bob", agent="bob"))
    hits = by_id(recall(c, "Lisbon offsite", headers=bob, expand=True))
    assert hits[ids["offsite"]]["excerpt"] is None
    local_bob = by_id(recall(c, "Lisbon offsite", headers={"X-Signet-Agent": "bob"}, expand=True))
    assert local_bob[ids["offsite"]]["excerpt"] is None
    alice = bearer(token_for(ws, "agent", sub="alice", agent="alice"))
    mine = by_id(recall(c, "Lisbon offsite", headers=alice, expand=True))
    assert mine[ids["offsite"]]["excerpt"]["session_key"] == ids["alice-key"]
    # bob's own memory naming alice's session joins nothing, even for an unscoped caller
    crafted = remember(
        c, "Lisbon office offsite rooms", agent_id="bob", source_type="pipeline", source_id=ids["alice-key"]
    )
    assert by_id(recall(c, "Lisbon office offsite rooms", expand=True, expand_limit=10))[crafted]["excerpt"] is None


MCP_HEADERS = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-06-18"}


def _mcp(c: TestClient, method: str, params: dict[str, Any]) -> dict[str, Any]:
    r = c.post("/mcp", headers=MCP_HEADERS, json={"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
    assert r.status_code == 200, r.text
    return dict(r.json()["result"])


def test_the_mcp_search_tool_takes_expand(env: Env) -> None:
    _, _, c, ids = env
    tools = {t["name"]: t for t in _mcp(c, "tools/list", {})["tools"]}
    prop = tools["memory_search"]["inputSchema"]["properties"]["expand"]
    assert prop["type"] == "boolean" and prop["default"] is False
    args = {"query": "Frankfurt cluster deploy target", "min_score": 0, "expand": True}
    out = _mcp(c, "tools/call", {"name": "memory_search", "arguments": args})
    assert not out.get("isError"), out
    hits = by_id(out["structuredContent"])
    assert hits[ids["deploy"]]["excerpt"]["turn_index"] == 2
    args["expand"] = False
    out = _mcp(c, "tools/call", {"name": "memory_search", "arguments": args})
    assert all(h["excerpt"] is None for h in out["structuredContent"]["results"])


# -- SDK and CLI: a real daemon ----------------------------------------------------------------


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[DaemonProcess, str]]:
    ws = Workspace(tmp_path_factory.mktemp("expand-daemon") / "ws")
    setup_workspace(ws, agent_name="t", user_name="T", embedding_provider="none")
    write_config(ws, memory={"pipelineV2": {"enabled": False, "extraction": {"provider": "none"}}})
    d = launch_daemon(ws)
    with d.client() as c:
        key = ingest(c, "deploy-1", DEPLOY_TURNS)
        mid = remember(
            c, "The deploy target is the Frankfurt cluster", source_type="pipeline", source_id=key, who="pipeline"
        )
    yield d, mid
    d.stop()


def test_the_sdk_passes_expand_through(daemon: tuple[DaemonProcess, str]) -> None:
    d, mid = daemon
    with SignetClient(d.url) as sdk:
        res = sdk.recall("Frankfurt deploy target", expand=True, min_score=0)
        assert res.results[0].id == mid and res.results[0].excerpt is not None
        assert res.results[0].excerpt.turns[1].content.startswith("decided: the deploy target")
        assert sdk.recall("Frankfurt deploy target", min_score=0).results[0].excerpt is None
        hook = sdk.hook_recall("Frankfurt deploy target", expand=True)
        assert hook.results[0].excerpt is not None and hook.results[0].excerpt.turn_index == 2


def test_the_cli_prints_the_turns_under_a_result(daemon: tuple[DaemonProcess, str]) -> None:
    d, mid = daemon
    env = {**os.environ, "SIGNET_WORKSPACE": str(d.workspace.root), "SIGNET_PORT": str(d.port)}

    def cli(*args: str) -> str:
        r = subprocess.run(
            [sys.executable, "-m", "signet.cli.entry", "recall", "Frankfurt deploy target", *args],
            capture_output=True,
            text=True,
            timeout=60,
            env=env,
        )
        assert r.returncode == 0, r.stderr
        return r.stdout

    lines = cli("--expand").splitlines()
    first = next(i for i, line in enumerate(lines) if mid[:8] in line)
    assert "The deploy target is the Frankfurt cluster" in lines[first]
    assert lines[first + 1] == "    from claude-code:deploy-1:"
    assert lines[first + 2].startswith("      assistant: We could compare")
    assert lines[first + 3] == "    > user: decided: the deploy target is the Frankfurt cluster from now on"
    assert "from claude-code" not in cli()
    bad = subprocess.run(
        [sys.executable, "-m", "signet.cli.entry", "recall", "x", "--expand=maybe"],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert bad.returncode != 0
