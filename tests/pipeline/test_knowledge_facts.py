"""An agent's attributes and claims across its entities (signet.knowledge.facts;
GET /api/knowledge/attributes and /claims): the knowledge is built the real way, by the pipeline
against the fake LLM server, and read through the real app. Filters, paging, bad input, facts of
memories the caller may not read (another project, forgotten), the SDK over a real daemon."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from signet.daemon.app import create_app
from signet.runtime import Runtime
from tests.auth.conftest import bearer, token_for
from tests.pipeline.knowledge_env import Env, knowledge_env

# text keyword -> (entity, aspect, key, value, confidence)
CLAIMS = {
    "Berlin": ("Alice Moreau", "home", "city", "Berlin", 0.9),
    "Paris": ("Alice Moreau", "home", "city", "Paris", 0.9),
    "Acme": ("Alice Moreau", "work", "employer", "Acme", 0.9),
    "Initech": ("Alice Moreau", "work", "employer", "Initech", 0.9),
    "tennis": ("Marco Rossi", "hobbies", "sport", "tennis 100% of weekends", 0.9),
}
MEMORIES = {
    "berlin": {"content": "Alice Moreau lives in Berlin.", "project": "home"},
    "paris": {"content": "Alice Moreau moved to Paris in May.", "project": "home"},
    "acme": {"content": "Alice Moreau works at Acme.", "project": "work"},
    "initech": {"content": "Alice Moreau joined Initech last week.", "project": "work"},
    "tennis": {"content": "Marco Rossi plays tennis 100% of weekends.", "project": "home"},
}


@pytest.fixture(scope="module")
def env() -> Iterator[Env]:
    with knowledge_env(CLAIMS, MEMORIES, auth={"mode": "hybrid"}) as e:
        yield e


def _get(rt: Runtime, path: str, headers: dict[str, str] | None = None, **params: Any) -> Any:
    remote = headers is not None and "Authorization" in headers
    with TestClient(
        create_app(rt, manage_runtime=False),
        base_url="http://localhost:3850" if remote else "http://127.0.0.1:3850",
        client=("10.1.2.3", 5000) if remote else ("127.0.0.1", 5000),
    ) as c:
        return c.get(path, headers=headers or {}, params=params)


def _values(body: dict[str, Any]) -> list[str]:
    return [a["value"] for a in body["attributes"]]


def test_attributes_across_entities_filtered(env: Env) -> None:
    _, rt, ids = env
    body = _get(rt, "/api/knowledge/attributes").json()
    assert sorted(_values(body)) == ["Initech", "Paris", "tennis 100% of weekends"] and body["total"] == 3
    assert {a["entity_name"] for a in body["attributes"]} == {"Alice Moreau", "Marco Rossi"}
    assert sorted(_values(_get(rt, "/api/knowledge/attributes", status="superseded").json())) == ["Acme", "Berlin"]
    assert _get(rt, "/api/knowledge/attributes", status="all").json()["total"] == 5
    assert _values(_get(rt, "/api/knowledge/attributes", aspect="WORK").json()) == ["Initech"]
    assert _values(_get(rt, "/api/knowledge/attributes", q="PAR").json()) == ["Paris"]
    # LIKE's wildcards are plain characters in q: "%" matches only a literal percent sign
    assert _values(_get(rt, "/api/knowledge/attributes", q="100%").json()) == ["tennis 100% of weekends"]
    assert _values(_get(rt, "/api/knowledge/attributes", q="_").json()) == []
    alice = _get(rt, "/api/knowledge/entities", q="moreau").json()["entities"][0]["id"]
    assert sorted(_values(_get(rt, "/api/knowledge/attributes", entity_id=alice).json())) == ["Initech", "Paris"]
    page = _get(rt, "/api/knowledge/attributes", status="all", limit=2, offset=2).json()
    assert len(page["attributes"]) == 2 and page["total"] == 5
    first = _get(rt, "/api/knowledge/attributes", status="all", limit=2).json()
    assert not {a["id"] for a in first["attributes"]} & {a["id"] for a in page["attributes"]}
    for a in _get(rt, "/api/knowledge/attributes", status="all").json()["attributes"]:
        assert a["source_memory_id"] is not None and a["claim_key"]
    assert ids["paris"] in {a["source_memory_id"] for a in body["attributes"]}


def test_claims_current_value_and_history(env: Env) -> None:
    _, rt, ids = env
    body = _get(rt, "/api/knowledge/claims").json()
    by_value = {k["current"]["value"]: k for k in body["claims"]}
    assert set(by_value) == {"Paris", "Initech", "tennis 100% of weekends"} and body["total"] == 3
    assert [h["value"] for h in by_value["Paris"]["history"]] == ["Berlin"]
    assert by_value["Paris"]["current"]["source_memory_id"] == ids["paris"]
    assert by_value["Initech"]["aspect"] == "work" and by_value["Initech"]["claim_type"] == "state"
    changed = _get(rt, "/api/knowledge/claims", changed=True).json()
    assert {k["current"]["value"] for k in changed["claims"]} == {"Paris", "Initech"} and changed["total"] == 2
    key = by_value["Paris"]["claim_key"]
    only = _get(rt, "/api/knowledge/claims", claim_key=key).json()["claims"]
    assert [k["current"]["value"] for k in only] == ["Paris"]


def test_a_project_token_reads_only_its_projects_facts(env: Env) -> None:
    ws, rt, _ = env
    tok = bearer(token_for(ws, "agent", sub="default", agent="default", project="work"))
    assert sorted(_values(_get(rt, "/api/knowledge/attributes", tok, status="all").json())) == ["Acme", "Initech"]
    claims = _get(rt, "/api/knowledge/claims", tok).json()["claims"]
    assert [(k["current"]["value"], [h["value"] for h in k["history"]]) for k in claims] == [("Initech", ["Acme"])]
    r = _get(rt, "/api/knowledge/claims", tok, changed=True)
    assert "Paris" not in r.text and "Berlin" not in r.text
    # one entity's detail keeps the same rule: its home facts come from the other project
    alice = _get(rt, "/api/knowledge/entities", tok, q="moreau").json()["entities"][0]["id"]
    detail = _get(rt, f"/api/knowledge/entities/{alice}", tok).json()
    assert sorted(t["value"] for a in detail["aspects"] for t in a["attributes"]) == ["Acme", "Initech"]
    local = _get(rt, f"/api/knowledge/entities/{alice}").json()
    assert sorted(t["value"] for a in local["aspects"] for t in a["attributes"]) == [
        "Acme",
        "Berlin",
        "Initech",
        "Paris",
    ]


def test_a_forgotten_memorys_fact_is_hidden(env: Env) -> None:
    _, rt, _ = env
    with TestClient(create_app(rt, manage_runtime=False), base_url="http://127.0.0.1:3850") as c:
        source = c.get("/api/knowledge/attributes", params={"q": "tennis"}).json()["attributes"][0]["source_memory_id"]
        r = c.delete(f"/api/memory/{source}", params={"reason": "test"})
        assert r.status_code == 200, r.text
        try:
            assert "tennis" not in c.get("/api/knowledge/attributes", params={"status": "all"}).text
            assert "tennis" not in c.get("/api/knowledge/claims").text
        finally:
            r = c.post(f"/api/memory/{source}/recover", json={"reason": "test"})
            assert r.status_code == 200, r.text
        assert "tennis" in c.get("/api/knowledge/attributes").text


@pytest.mark.parametrize(
    ("path", "params", "status"),
    [
        ("/api/knowledge/attributes", {"status": "maybe"}, 422),
        ("/api/knowledge/attributes", {"limit": 0}, 422),
        ("/api/knowledge/attributes", {"limit": 501}, 422),
        ("/api/knowledge/attributes", {"offset": -1}, 422),
        ("/api/knowledge/attributes", {"entity_id": "nope"}, 404),
        ("/api/knowledge/attributes", {"entity_id": ""}, 422),
        ("/api/knowledge/attributes", {"q": "x" * 201}, 422),
        ("/api/knowledge/claims", {"changed": "perhaps"}, 422),
        ("/api/knowledge/claims", {"limit": 201}, 422),
        ("/api/knowledge/claims", {"entity_id": "' OR 1=1 --"}, 404),
        ("/api/knowledge/claims", {"claim_key": "x" * 501}, 422),
    ],
)
def test_bad_input_is_a_clear_4xx(env: Env, path: str, params: dict[str, Any], status: int) -> None:
    _, rt, _ = env
    r = _get(rt, path, **params)
    assert r.status_code == status, r.text
    assert isinstance(r.json(), dict) and r.json().get("error")
