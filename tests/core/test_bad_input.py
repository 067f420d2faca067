"""Malformed and hostile input gets a 4xx with a JSON message, never a 500."""

from __future__ import annotations

from typing import Any

from fastapi.testclient import TestClient
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

HOSTILE_QUERIES = [
    '"',
    '""',
    '"unterminated',
    "AND",
    "OR NOT",
    "NEAR(a b)",
    "content:foo",
    "*",
    "foo*",
    "^start",
    "a AND (b OR",
    ")))",
    "-",
    "col:",
    "{a b}",
    "\x00",
    "😀 emoji",
    "日本語のクエリ",
    "' OR 1=1 --",
    "memories_fts MATCH 'x'",
    "   ",
    "",
    "a" * 10_000,
    "NOT NOT NOT",
    '"a" NEAR/2 "b"',
]


def assert_json_4xx(r: Any, *codes: int) -> dict[str, Any]:
    assert r.status_code in (codes or range(400, 500)), (r.status_code, r.text)
    body = r.json()
    assert isinstance(body.get("error"), str) and body["error"], body
    return body


def test_hostile_fts_queries_never_raise(api: TestClient) -> None:
    api.post("/api/memory/remember", json={"content": "AND OR NOT near the content column"})
    for q in HOSTILE_QUERIES:
        r = api.post("/api/memory/recall", json={"query": q})
        assert r.status_code == 200, (q, r.text)
        r = api.get("/memory/search", params={"q": q})
        assert r.status_code in (200, 422), (q, r.text)
        r = api.post("/api/memory/forget", json={"query": q})
        if q.strip():
            assert r.status_code == 200, (q, r.text)
        else:  # a blank query selects nothing: refused, not "forget everything"
            assert_json_4xx(r, 400)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(q=st.text(max_size=200))
def test_any_text_is_a_valid_query(api: TestClient, q: str) -> None:
    r = api.post("/api/memory/recall", json={"query": q, "limit": 3})
    assert r.status_code == 200, r.text


INVISIBLE = dict.fromkeys(map(ord, "\u200b\u200c\u200d\u2060\ufeff\u00ad\u180e"))
"""The zero-width and invisible characters the API counts as saying nothing (signet.models)."""


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(content=st.text(min_size=1, max_size=300))
@example(content="\u200b")  # found by hypothesis: a zero-width space only
def test_any_content_is_stored_or_refused_cleanly(api: TestClient, content: str) -> None:
    r = api.post("/api/memory/remember", json={"content": content})
    if content.translate(INVISIBLE).strip():  # zero-width-only text says nothing: refused like blank
        assert r.status_code == 200, r.text
        got = api.get(f"/api/memory/{r.json()['id']}").json()
        assert got["content"] == " ".join(got["content"].split())
    else:
        assert_json_4xx(r, 422)


def test_malformed_json_and_wrong_types(api: TestClient) -> None:
    h = {"content-type": "application/json"}
    assert_json_4xx(api.post("/api/memory/remember", content=b"{not json", headers=h), 422)
    assert_json_4xx(api.post("/api/memory/remember", content=b"", headers=h), 422)
    assert_json_4xx(api.post("/api/memory/remember", content=b"[1,2]", headers=h), 422)
    assert_json_4xx(api.post("/api/memory/remember", content=b"\xff\xfe", headers=h), 422)
    assert_json_4xx(api.post("/api/memory/remember", json={"content": 5}), 422)
    assert_json_4xx(api.post("/api/memory/remember", json={"content": "x", "importance": 7}), 422)
    assert_json_4xx(api.post("/api/memory/remember", json={"content": "x", "tags": "notalist"}), 422)
    assert_json_4xx(api.post("/api/memory/remember", json={"content": "x", "bogus": 1}), 422)
    assert_json_4xx(api.post("/api/memory/remember", json={"content": "x", "created_at": "yesterday"}), 422)
    assert_json_4xx(api.post("/api/memory/recall", json={"query": "x", "limit": 0}), 422)
    assert_json_4xx(api.post("/api/memory/recall", json={"query": None}), 422)
    assert_json_4xx(api.post("/api/memory/modify", json={"patches": []}), 422)
    assert_json_4xx(api.post("/api/memory/modify", json={"patches": [{"id": "x", "if_version": 0}]}), 422)
    assert_json_4xx(api.post("/api/memory/forget", json={"mode": "destroy"}), 422)
    assert_json_4xx(api.get("/api/memories", params={"limit": -1}), 422)
    body = assert_json_4xx(api.post("/api/memory/remember", json={"content": "   "}), 422)
    assert body["code"] == "invalid_request" and "content" in body["error"]


def test_huge_bodies_are_refused(api: TestClient) -> None:
    r = api.post("/api/memory/remember", json={"content": "x" * 200_000})
    assert_json_4xx(r, 422)
    big = b'{"content": "' + b"y" * (9 * 1024 * 1024) + b'"}'
    r = api.post("/api/memory/remember", content=big, headers={"content-type": "application/json"})
    body = assert_json_4xx(r, 413)
    assert body["code"] == "payload_too_large"


def test_unknown_ids_and_routes(api: TestClient) -> None:
    for method, path in [
        ("GET", "/api/memory/nope"),
        ("GET", "/api/memory/nope/history"),
        ("POST", "/api/memory/nope/recover"),
        ("GET", "/no/such/route"),
    ]:
        kw = {"json": {"reason": "r"}} if method == "POST" else {}
        body = assert_json_4xx(api.request(method, path, **kw), 404)
        assert body["code"] == "not_found"
    assert_json_4xx(api.put("/api/memory/remember", json={}), 405)


# Valid ISO-8601 that has no UTC equivalent inside datetime's range (year 1 / year 9999 edges).
UNREPRESENTABLE = ["0001-01-01T00:00+01:00", "9999-12-31T23:59-01:00"]


def test_datetimes_without_a_utc_equivalent_are_refused_not_500(api: TestClient) -> None:
    """Every route that takes a date-time refuses one it cannot convert to UTC with a 422.

    Regression: ``GET /api/memories?until=0001-01-01T00:00+01:00`` raised OverflowError while
    normalising to UTC and answered 500 (found by test_schemathesis).
    """
    turn = {"role": "user", "content": "hello"}
    for when in UNREPRESENTABLE:
        calls = {
            "list since": api.get("/api/memories", params={"since": when}),
            "list until": api.get("/api/memories", params={"until": when}),
            "recall since": api.post("/api/memory/recall", json={"query": "x", "since": when}),
            "recall until": api.post("/api/memory/recall", json={"query": "x", "until": when}),
            "forget since": api.post("/api/memory/forget", json={"since": when}),
            "forget until": api.post("/api/memory/forget", json={"until": when}),
            "remember": api.post("/api/memory/remember", json={"content": "x", "created_at": when}),
            "remember batch": api.post(
                "/api/memory/remember/batch", json={"items": [{"content": "x", "created_at": when}]}
            ),
            "hook session-end": api.post(
                "/api/hooks/session-end", json={"session_id": "s", "turns": [{**turn, "timestamp": when}]}
            ),
            "ingest": api.post(
                "/api/ingest/transcript",
                json={
                    "path": "/x/chat.jsonl",
                    "content_hash": "b" * 64,
                    "adapter": "jsonl",
                    "turns": [{**turn, "timestamp": when}],
                },
            ),
        }
        for name, r in calls.items():
            body = assert_json_4xx(r, 422)
            assert body["code"] == "invalid_request", (name, body)
            assert "out of range once converted to UTC" in body["error"], (name, body)


def test_extreme_but_representable_datetimes_still_work(api: TestClient) -> None:
    """The edges that do convert (and naive times, taken as UTC) keep working as filters and as created_at."""
    r = api.post("/api/memory/remember", json={"content": "an old import", "created_at": "0001-01-01T05:00+01:00"})
    assert r.status_code == 200, r.text
    assert r.json()["created_at"].startswith("0001-01-01T04:00:00")
    for params in (
        {"since": "0001-01-01T00:00:00"},
        {"until": "9999-12-31T23:59+00:00"},
        {"until": "0001-01-01T05:00-01:00"},
    ):
        r = api.get("/api/memories", params=params)
        assert r.status_code == 200, (params, r.text)
    got = api.get("/api/memories", params={"until": "0001-01-01T04:00:00+00:00"}).json()
    assert [m["content"] for m in got["items"]] == ["an old import"]
