"""``/api/feedback`` on the real app and a real SQLite file: validation, scope of ids,
all-or-nothing batches; plus the SDK's list query kept equal to the list route's parameters."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from signet.daemon.app import create_app
from signet.sdk import ListQuery
from signet.workspace import Workspace


@pytest.fixture
def app_client(make_workspace: Callable[..., Workspace]) -> Iterator[TestClient]:
    ws = make_workspace(embedding="none", memory={"pipelineV2": {"enabled": False}})
    with TestClient(create_app(ws), raise_server_exceptions=False) as client:
        yield client


def remember(c: TestClient, content: str) -> str:
    r = c.post("/api/memory/remember", json={"content": content})
    assert r.status_code == 200, r.text
    return str(r.json()["id"])


def test_feedback_is_stored_and_listed(app_client: TestClient) -> None:
    a, b = remember(app_client, "alpha fact"), remember(app_client, "beta fact")
    r = app_client.post(
        "/api/feedback",
        headers={"X-Signet-Actor": "agent-7"},
        json={
            "session_id": "s1",
            "ratings": [
                {"memory_id": a, "feedback": "positive"},
                {"memory_id": b, "feedback": "correction", "correction": "beta is wrong"},
            ],
        },
    )
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["recorded"] == 2 and {i["actor"] for i in body["items"]} == {"agent-7"}
    app_client.post("/api/feedback", json={"session_id": "s2", "ratings": [{"memory_id": a, "feedback": "negative"}]})

    by_session = app_client.get("/api/feedback", params={"session_id": "s1"}).json()
    assert {(i["memory_id"], i["feedback"], i["correction"]) for i in by_session["items"]} == {
        (a, "positive", None),
        (b, "correction", "beta is wrong"),
    }
    by_memory = app_client.get("/api/feedback", params={"memory_id": a}).json()
    assert [i["session_id"] for i in by_memory["items"]] == ["s2", "s1"]  # newest first
    assert app_client.get("/api/feedback", params={"limit": 1}).json()["count"] == 1


@pytest.mark.parametrize(
    "ratings, status, needle",
    [
        ([], 422, "ratings"),
        ([{"memory_id": "m", "feedback": "great"}], 422, "feedback"),
        ([{"memory_id": "m", "feedback": "correction"}], 422, "correction"),
        ([{"memory_id": "m", "feedback": "positive", "correction": "x"}], 422, "correction"),
        ([{"memory_id": "m", "feedback": "positive", "stars": 5}], 422, "stars"),
    ],
)
def test_bad_feedback_is_a_clear_4xx(
    app_client: TestClient, ratings: list[dict[str, Any]], status: int, needle: str
) -> None:
    r = app_client.post("/api/feedback", json={"session_id": "s", "ratings": ratings})
    assert r.status_code == status and r.json()["code"] == "invalid_request" and needle in r.text


def test_unknown_or_deleted_memory_fails_the_whole_batch(app_client: TestClient) -> None:
    a, gone = remember(app_client, "kept fact"), remember(app_client, "deleted fact")
    app_client.delete(f"/api/memory/{gone}", params={"reason": "test"})
    for missing in ("no-such-id", gone):
        r = app_client.post(
            "/api/feedback",
            json={
                "session_id": "s",
                "ratings": [{"memory_id": a, "feedback": "positive"}, {"memory_id": missing, "feedback": "negative"}],
            },
        )
        assert r.status_code == 404 and r.json()["code"] == "not_found" and missing in r.json()["error"]
    assert app_client.get("/api/feedback", params={"session_id": "s"}).json()["items"] == []  # nothing stored


def test_sdk_list_query_matches_the_list_route(app_client: TestClient) -> None:
    """ListQuery (the SDK's and memory_list's schema) must not drift from GET /api/memories."""
    route = app_client.get("/openapi.json").json()["paths"]["/api/memories"]["get"]["parameters"]
    params = {p["name"]: p["schema"] for p in route}
    mine = ListQuery.model_json_schema()["properties"]
    assert set(params) == {"tag" if name == "tags" else name for name in mine}

    def bounds(schema: dict[str, Any]) -> tuple[Any, ...]:
        flat = schema.get("anyOf", [schema])[0]
        return tuple(flat.get(k) for k in ("minimum", "maximum", "maxLength", "maxItems"))

    for name, schema in mine.items():
        theirs = params["tag" if name == "tags" else name]
        assert bounds(schema) == bounds(theirs), name
        assert schema.get("default") == theirs.get("default"), name
