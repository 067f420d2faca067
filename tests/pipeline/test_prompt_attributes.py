"""Prompt-submit injects the current attributes of the entities a prompt names (spec 001;
docs/harnesses.md): the knowledge is built the real way, by the pipeline against the fake LLM
server; the hook is called through the real app. Only the requesting agent's active attributes
above the confidence gate whose source memory the caller may read are injected, within the
prompt's one token budget, before the memories."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from signet.daemon.app import create_app
from signet.hooks.budget import estimate_tokens
from signet.runtime import Runtime
from signet.workspace import Workspace
from tests.auth.conftest import bearer, token_for
from tests.pipeline.conftest import rows
from tests.pipeline.knowledge_env import Env, knowledge_env

ROSTER = [
    {"name": "alice", "readPolicy": "isolated"},
    {"name": "bob", "readPolicy": "shared"},
    {"name": "carol", "readPolicy": "group", "group": ["alice", "carol"]},
    {"name": "dave", "readPolicy": "group", "group": ["bob", "dave"]},
    {"name": "erin", "readPolicy": "isolated"},
]
READERS = ["bob", "carol", "dave", "erin"]
# text keyword -> (entity, aspect, key, value, confidence of the claim)
CLAIMS = {
    "Berlin": ("Alice Moreau", "home", "city", "Berlin", 0.9),
    "Paris": ("Alice Moreau", "home", "city", "Paris", 0.9),
    "Lyon": ("Alice Moreau", "home", "city", "Lyon", 0.9),
    "Acme": ("Marco Rossi", "work", "employer", "Acme", 0.5),
}
PARIS = "Known about Alice Moreau: home: city = Paris"
WHERE = "Where does Alice Moreau live these days?"


MEMORIES = {
    "alice-old": {"content": "Alice Moreau lives in Berlin, near the harbour.", "agent_id": "alice"},
    "alice-new": {"content": "Alice Moreau moved to Paris in May.", "agent_id": "alice"},
    "marco": {"content": "Marco Rossi might work at Acme, not sure.", "agent_id": "alice"},
    "bob": {"content": "Bob heard Alice Moreau lives in Lyon these days.", "agent_id": "bob"},
}


@pytest.fixture(scope="module")
def env() -> Iterator[Env]:
    bodies = {k: {**b, "visibility": "global"} for k, b in MEMORIES.items()}
    with knowledge_env(CLAIMS, bodies, auth={"mode": "hybrid"}, agents={"roster": ROSTER}) as e:
        yield e


def submit(rt: Runtime, headers: dict[str, str], prompt: str, **body: Any) -> dict[str, Any]:
    remote = "Authorization" in headers
    with TestClient(
        create_app(rt, manage_runtime=False),
        base_url="http://localhost:3850" if remote else "http://127.0.0.1:3850",
        client=("10.1.2.3", 5000) if remote else ("127.0.0.1", 5000),
    ) as c:
        r = c.post(
            "/api/hooks/user-prompt-submit", headers=headers, json={"harness": "claude-code", "prompt": prompt, **body}
        )
    assert r.status_code == 200, r.text
    return dict(r.json())


def agent(ws: Workspace, name: str, project: str | None = None) -> dict[str, str]:
    return bearer(token_for(ws, "agent", sub=name, agent=name, project=project))


def values(out: dict[str, Any]) -> list[str]:
    return [a["value"] for a in out["attributes"]]


def test_the_prompt_gets_the_current_value_not_the_superseded_one(env: Env) -> None:
    ws, rt, ids = env
    stored = rows(
        rt,
        "SELECT attribute_value, status FROM entity_attributes WHERE agent_id = 'alice' AND attribute_key = 'city'"
        " ORDER BY attribute_value",
    )
    assert [tuple(r) for r in stored] == [("Berlin", "superseded"), ("Paris", "active")]
    out = submit(rt, agent(ws, "alice"), WHERE)
    assert values(out) == ["Paris"] and out["attributes"][0]["entity"] == "Alice Moreau"
    assert out["attributes"][0]["source_memory_id"] == ids["alice-new"]
    assert out["context"].startswith(PARIS + "\n\n")  # first, then the memories
    assert "city = Berlin" not in out["context"]
    assert out["outcome"] == "injected" and out["memories"]  # the memories still come
    assert out["tokens"] == estimate_tokens(out["context"]) <= 300


def test_an_alias_or_other_words_around_the_name_resolve_the_same_entity(env: Env) -> None:
    ws, rt, _ = env
    assert values(submit(rt, agent(ws, "alice"), "remind me what you know about alice moreau")) == ["Paris"]


def test_below_the_confidence_gate_nothing_is_injected(env: Env) -> None:
    ws, rt, _ = env
    low = rows(rt, "SELECT status, confidence FROM entity_attributes WHERE attribute_value = 'Acme'")
    assert [tuple(r) for r in low] == [("active", 0.5)]
    out = submit(rt, agent(ws, "alice"), "What does Marco Rossi do for a living?")
    assert out["attributes"] == [] and "Known about" not in out["context"]
    gate = rt.hooks.settings
    try:  # the gate is the setting: above the claim's confidence, Paris is not injected either
        rt.hooks.settings = gate.model_copy(update={"prompt_attribute_min_confidence": 0.95})
        assert submit(rt, agent(ws, "alice"), WHERE)["attributes"] == []
        rt.hooks.settings = gate.model_copy(update={"prompt_attribute_min_confidence": 0.4})
        out = submit(rt, agent(ws, "alice"), "What does Marco Rossi do for a living?")
        assert values(out) == ["Acme"]
    finally:
        rt.hooks.settings = gate


@pytest.mark.parametrize("reader", READERS)
def test_another_agents_attributes_never_reach_a_prompt(env: Env, reader: str) -> None:
    """Under every read policy, by token and by a local caller naming its agent: alice's
    attributes (Paris, Berlin) never; bob's own claim (Lyon) only to bob."""
    ws, rt, _ = env
    for headers in (agent(ws, reader), {"X-Signet-Agent": reader}):
        out = submit(rt, headers, WHERE)
        assert values(out) == (["Lyon"] if reader == "bob" else []), (reader, out)
        assert "city = Paris" not in out["context"] and "city = Berlin" not in out["context"]
    out = submit(rt, {}, WHERE, agent_id=reader)  # the agent named in the body
    assert values(out) == (["Lyon"] if reader == "bob" else []), (reader, out)


def test_an_attribute_whose_source_the_caller_cannot_read_is_not_injected(env: Env) -> None:
    """alice's token scoped to a project: the attributes' source memories are in no project."""
    ws, rt, _ = env
    out = submit(rt, agent(ws, "alice", project="elsewhere"), WHERE, project="elsewhere")
    assert out["attributes"] == [] and "Paris" not in out["context"]


def test_the_budget_counts_both_and_keeps_half_for_the_memories(env: Env) -> None:
    ws, rt, _ = env
    line = estimate_tokens(PARIS)
    out = submit(rt, agent(ws, "alice"), WHERE, budget_tokens=2 * line)
    assert values(out) == ["Paris"] and out["tokens"] <= 2 * line
    # half of a budget smaller than the line: no attribute (a fact is never cut), memories go on
    out = submit(rt, agent(ws, "alice"), WHERE, budget_tokens=2 * line - 2)
    assert out["attributes"] == [] and out["tokens"] <= 2 * line - 2
    for budget in (20, 40, 80, 300):
        out = submit(rt, agent(ws, "alice"), WHERE, budget_tokens=budget)
        assert out["tokens"] <= budget, (budget, out)
        facts = "\n".join(f"Known about Alice Moreau: home: city = {v}" for v in values(out))
        assert estimate_tokens(facts) <= budget // 2


def test_a_prompt_naming_no_entity_is_answered_as_before(env: Env) -> None:
    ws, rt, _ = env
    tok = agent(ws, "alice")
    prompt = "Which city did the harbour move to in May?"
    with_attrs = submit(rt, tok, prompt)
    settings = rt.hooks.settings
    try:
        rt.hooks.settings = settings.model_copy(update={"prompt_max_attributes": 0})
        without = submit(rt, tok, prompt)
        assert submit(rt, tok, WHERE)["attributes"] == []  # 0 turns it off
    finally:
        rt.hooks.settings = settings
    assert with_attrs["attributes"] == [] and with_attrs == without


def test_a_session_is_not_given_the_same_attribute_again_within_the_dedup_window(env: Env) -> None:
    ws, rt, _ = env
    alice = agent(ws, "alice")
    first = submit(rt, alice, WHERE, session_id="s-dedup")
    assert values(first) == ["Paris"]
    window = rt.settings.hooks.prompt_dedup_turns
    for _ in range(window):
        again = submit(rt, alice, WHERE, session_id="s-dedup")
        assert values(again) == [] and PARIS not in again["context"]
    # past the window it is given again; another session, and a call without one, get it at once
    assert values(submit(rt, alice, WHERE, session_id="s-dedup")) == ["Paris"]
    assert values(submit(rt, alice, WHERE, session_id="s-other")) == ["Paris"]
    assert values(submit(rt, alice, WHERE)) == ["Paris"]
