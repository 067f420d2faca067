"""The SDK against a real daemon: every method, every typed error, sync/async parity."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from signet.hooks.models import SessionStartResponse
from signet.memory.feedback import FeedbackList
from signet.models import Memory, MemoryList, RecallResponse, RememberResponse, StatusResponse
from signet.sdk import (
    AsyncSignetClient,
    ConfirmationRequired,
    DaemonUnavailable,
    InvalidRequest,
    NotDeleted,
    NotFound,
    RetentionExpired,
    SignetClient,
    SignetError,
    VersionConflict,
)
from tests.conftest import DaemonProcess, free_port
from tests.sdk.conftest import TOMBSTONE_SECONDS


@pytest.fixture
def client(sdk_daemon: DaemonProcess) -> Iterator[SignetClient]:
    with SignetClient(sdk_daemon.url) as c:
        yield c


def tag() -> str:
    return f"t{uuid.uuid4().hex[:8]}"


def test_memory_methods(client: SignetClient) -> None:
    t = tag()
    saved = client.remember(f"{t}: Postgres 16 for every new service", tags=[t], project="web", importance=0.7)
    assert isinstance(saved, RememberResponse) and not saved.deduped and saved.tags == [t]
    assert client.remember(f"{t}: Postgres 16 for every new service", project="web").deduped is True
    assert client.remember(f"{t}: Postgres 16 for every new service").deduped is False  # another project

    batch = client.remember_batch([f"{t} one", {"content": f"{t} two", "tags": [t]}])
    assert batch.created == 2 and len(batch.results) == 2

    hits = client.recall(f"{t} postgres", tags=[t], limit=5)
    assert isinstance(hits, RecallResponse) and hits.results[0].id == saved.id

    mem = client.get(saved.id)
    assert isinstance(mem, Memory) and mem.version == 1 and mem.project == "web"
    listed = client.list(tags=[t], limit=10)
    assert isinstance(listed, MemoryList) and {m.id for m in listed.items} >= {saved.id, batch.results[1].id}
    assert client.list(tags=[t], limit=1, offset=1).items[0].id in {m.id for m in listed.items}

    upd = client.modify(saved.id, reason="version bump", if_version=1, content=f"{t}: Postgres 17 everywhere")
    assert upd.status == "updated" and upd.new_version == 2
    many = client.modify_batch([{"id": saved.id, "importance": 0.9}, {"id": "missing", "pinned": True}], reason="tidy")
    assert [r.status for r in many.results] == ["updated", "not_found"] and many.updated == 1

    deleted = client.delete(batch.results[0].id, reason="duplicate")
    assert deleted.status == "deleted" and not deleted.hard_deleted
    recovered = client.recover(batch.results[0].id, reason="was not a duplicate")
    assert recovered.status == "recovered"
    events = [e.event for e in client.history(saved.id).events]
    assert events == ["created", "modified", "modified"]

    preview = client.forget_preview(tags=[t])
    assert preview.mode == "preview" and preview.count == 2 and client.get(saved.id).is_deleted is False
    done = client.forget(tags=[t], reason="cleanup", confirm_token=preview.confirm_token)
    assert sorted(done.deleted) == sorted(c.id for c in preview.candidates)

    st = client.status()
    assert isinstance(st, StatusResponse) and st.memories["total"] >= 3
    assert client.health().status == "ok"


def test_feedback_and_hook_methods(client: SignetClient) -> None:
    t = tag()
    mid = client.hook_remember(f"{t} the user prefers tabs", harness="codex", session_id="s1").id
    assert client.hook_recall(f"{t} tabs", harness="codex").results[0].id == mid

    rated = client.feedback(f"sess-{t}", ratings=[{"memory_id": mid, "feedback": "positive"}])
    assert rated.recorded == 1
    stored = client.list_feedback(session_id=f"sess-{t}")
    assert isinstance(stored, FeedbackList) and [(i.memory_id, i.feedback, i.actor) for i in stored.items] == [
        (mid, "positive", "sdk")
    ]

    start = client.session_start(harness="codex", session_id=f"sess-{t}", project="web")
    assert isinstance(start, SessionStartResponse) and start.tokens <= start.budget
    prompt = client.prompt_submit(f"{t} do I like tabs?", harness="codex", session_id=f"sess-{t}")
    assert prompt.outcome in ("injected", "below_threshold", "no_results", "already_injected", "skipped")
    assert client.pre_compaction(harness="codex").instructions
    compacted = client.compaction_complete(f"{t} we refactored the parser", harness="codex", session_id=f"sess-{t}")
    assert client.get(compacted.memory_id).content.endswith("we refactored the parser")
    ended = client.session_end(
        f"sess-{t}",
        harness="codex",
        turns=[{"role": "user", "content": "hello"}, {"role": "assistant", "content": "hi"}],
    )
    assert ended.turns == 2


def test_typed_errors(client: SignetClient) -> None:
    t = tag()
    mid = client.remember(f"{t} typed errors").id
    with pytest.raises(NotFound) as nf:
        client.get("no-such-memory")
    assert nf.value.status == 404 and "no-such-memory" in nf.value.message
    with pytest.raises(VersionConflict) as vc:
        client.modify(mid, reason="stale edit", if_version=7, pinned=True)
    assert vc.value.details["current_version"] == 1
    with pytest.raises(NotDeleted):
        client.recover(mid, reason="not deleted")
    # server-side validation (a patch without any reason) and client-side validation
    with pytest.raises(InvalidRequest, match="reason"):
        client.modify_batch([{"id": mid, "pinned": True}])
    with pytest.raises(InvalidRequest, match="limit"):
        client.recall("x", limit=0)
    with pytest.raises(InvalidRequest, match="colour"):
        client.remember("x", colour="red")
    # more than forget_confirm_threshold (2) matches: the preview's token is required
    client.remember_batch([{"content": f"{t} batch {i}", "tags": [f"{t}-b"]} for i in range(3)])
    with pytest.raises(ConfirmationRequired):
        client.forget(tags=[f"{t}-b"], reason="too many")
    # past the tombstone window a soft delete can no longer be undone
    client.delete(mid, reason="gone")
    time.sleep(TOMBSTONE_SECONDS + 0.5)
    with pytest.raises(RetentionExpired):
        client.recover(mid, reason="too late")


def test_daemon_down_is_a_typed_error() -> None:
    url = f"http://127.0.0.1:{free_port()}"
    with SignetClient(url) as c, pytest.raises(DaemonUnavailable, match="signet start"):
        c.status()

    async def main() -> None:
        async with AsyncSignetClient(url) as a:
            await a.status()

    with pytest.raises(DaemonUnavailable, match="signet start"):
        asyncio.run(main())


VOLATILE = {"took_ms", "uptime_s", "effective_importance"}  # time-dependent: differ between any two calls


def _comparable(value: Any) -> Any:
    data = value.model_dump() if hasattr(value, "model_dump") else value
    if isinstance(data, dict):
        return {k: _comparable(v) for k, v in data.items() if k not in VOLATILE}
    if isinstance(data, list):
        return [_comparable(v) for v in data]
    return data


def test_sync_and_async_give_identical_results(client: SignetClient, sdk_daemon: DaemonProcess) -> None:
    t = tag()
    ids = [
        r.id
        for r in client.remember_batch(
            [{"content": f"{t} parity {i} about rust and sqlite", "tags": [t]} for i in range(3)]
        ).results
    ]
    client.modify(ids[0], reason="parity", pinned=True)
    calls: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = [
        ("recall", (f"{t} rust sqlite",), {"tags": [t], "limit": 5, "track_access": False}),
        ("get", (ids[0],), {}),
        ("list", (), {"tags": [t]}),
        ("history", (ids[0],), {}),
        ("forget_preview", (), {"tags": [t]}),
        ("remember", (f"{t} parity 1 about rust and sqlite",), {}),  # deduped: same answer both times
        ("get", ("missing",), {}),
        ("modify", (ids[1],), {"reason": "x", "if_version": 9, "pinned": True}),
        ("recall", ("x",), {"limit": 0}),
    ]

    def outcome(fn: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return _comparable(fn(*args, **kwargs))
        except SignetError as exc:
            return (type(exc).__name__, str(exc), getattr(exc, "details", None))

    sync_results = [outcome(getattr(client, name), *a, **kw) for name, a, kw in calls]

    async def run_async() -> list[Any]:
        out = []
        async with AsyncSignetClient(sdk_daemon.url) as a:
            for name, args, kwargs in calls:
                try:
                    out.append(_comparable(await getattr(a, name)(*args, **kwargs)))
                except SignetError as exc:
                    out.append((type(exc).__name__, str(exc), getattr(exc, "details", None)))
        return out

    async_results = asyncio.run(run_async())
    assert async_results == sync_results
    assert [type(r).__name__ for r in sync_results[-3:]] == ["tuple"] * 3
    assert sync_results[-3][0] == "NotFound" and sync_results[-2][0] == "VersionConflict"
    assert sync_results[-1][0] == "InvalidRequest"
