"""The sans-I/O core on its own: requests built and answers read without any network."""

from __future__ import annotations

from datetime import UTC, datetime

import httpx
import pytest

from signet.errors import InvalidRequest, NotFound, SignetError
from signet.models import MemoryType
from signet.sdk._core import read_response
from signet.sdk._ops import delete, get, list_memories, recall, remember


def test_requests_are_built_from_the_shared_models() -> None:
    call = remember("critical: ship it", tags=[" a ", "a", "b"], importance=0.5)
    assert (call.method, call.path) == ("POST", "/api/memory/remember")
    assert call.json == {
        "content": "critical: ship it",
        "tags": ["a", "b"],
        "importance": 0.5,
    }  # cleaned, unset omitted
    since = datetime(2026, 1, 2, tzinfo=UTC)
    listed = list_memories(tags=["x", "y"], pinned=False, since=since, type=MemoryType.RULE)
    assert listed.params == {
        "limit": 50,
        "offset": 0,
        "type": "rule",
        "tag": ["x", "y"],
        "pinned": "false",
        "since": since.isoformat(),
    }
    assert get("a/b?c").path == "/api/memory/a%2Fb%3Fc"  # ids never escape their path segment
    assert delete("m1", reason="old", force=True).params == {"reason": "old", "force": "true"}


def test_bad_arguments_fail_before_any_io() -> None:
    with pytest.raises(InvalidRequest) as exc:
        recall("q", limit=500, type="nonsense")
    assert exc.value.message.startswith("invalid request: ") and "(and 1 more)" in exc.value.message
    assert {p["field"] for p in exc.value.details["problems"]} == {"limit", "type"}
    with pytest.raises(InvalidRequest):
        get("  ")
    with pytest.raises(InvalidRequest, match="reason"):
        delete("m1", reason=" ")


def test_answers_become_models_or_typed_errors() -> None:
    call = get("m1")
    with pytest.raises(NotFound) as nf:
        read_response(
            call, 404, httpx.Headers(), b'{"error": "memory \'m1\' not found", "code": "not_found", "id": "m1"}'
        )
    assert nf.value.details == {"id": "m1"}
    with pytest.raises(SignetError) as odd:
        read_response(call, 418, httpx.Headers(), b'{"error": "teapot", "code": "teapot"}')
    assert (odd.value.code, odd.value.status, odd.value.message) == ("teapot", 418, "teapot")
    with pytest.raises(SignetError, match="non-JSON") as bad:
        read_response(call, 200, httpx.Headers(), b"<html>")
    assert bad.value.code == "bad_response"
    with pytest.raises(SignetError, match="unexpected response shape"):
        read_response(call, 200, httpx.Headers(), b'{"id": "m1"}')
    assert isinstance(
        read_response(
            recall("q"),
            200,
            httpx.Headers(),
            b'{"query": "q", "results": [], "count": 0, '
            b'"method": "fts", "vector_search": {"available": false}, "took_ms": 1}',
        ).count,
        int,
    )
