"""The remember intake (signet.memory.intake): a remember over HTTP is answered once committed to
``memory_intake`` and stored as a memory soon after, and no later request can tell.

The workspaces here hold the intake's rows back (``quiet_ms`` and ``max_lag_s`` at their
maximum), so what waits is deterministic: rows are stored only when a request waits for them
or the runtime starts again.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable

import pytest
from fastapi.testclient import TestClient

from signet.daemon.intake_barrier import PENDING_HEADER
from signet.models import RememberRequest
from signet.runtime import Runtime
from signet.workspace import Workspace
from tests.conftest import TEST_STORAGE, StoreConnection, start_runtime, write_config

pytestmark = pytest.mark.skipif(TEST_STORAGE == "postgres", reason="the intake is SQLite's (docs/reliability.md)")

HELD = {"quiet_ms": 60_000, "max_lag_s": 3600, "when": "always"}


def held_workspace(make_workspace: Callable[..., Workspace], **intake: object) -> Workspace:
    return make_workspace(embedding="none", memory={"intake": {**HELD, **intake}})


def rows(ws: Workspace, sql: str) -> list[tuple[object, ...]]:
    """Read behind the daemon's back with the store's own SQLite library (two SQLite libraries
    in one process on one file see each other's WAL wrongly)."""
    conn = StoreConnection(ws)
    try:
        return [tuple(r) for r in conn.execute(sql).fetchall()]
    finally:
        conn.close()


def test_a_queued_remember_is_seen_by_every_later_request(
    make_workspace: Callable[..., Workspace], open_app: Callable[[Workspace], tuple[Runtime, TestClient]]
) -> None:
    rt, client = open_app(held_workspace(make_workspace))
    assert rt.intake is not None
    r = client.post("/api/memory/remember", json={"content": "the build uses uv, not poetry", "tags": ["tooling"]})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["queued"] is True and body["deduped"] is False and body["tags"] == ["tooling"]
    assert rt.intake.pending == 1  # committed, not yet a memory
    assert rows(rt.workspace, "SELECT COUNT(*) FROM memories") == [(0,)]

    again = client.post("/api/memory/remember", json={"content": "the build uses uv, not poetry"}).json()
    assert again["id"] == body["id"] and again["deduped"] is True  # a duplicate of the waiting row
    assert rt.intake.pending == 1

    got = client.get(f"/api/memory/{body['id']}")  # waits for the intake, then finds it
    assert got.status_code == 200, got.text
    assert got.json()["content"] == "the build uses uv, not poetry"
    assert PENDING_HEADER.decode() not in got.headers
    assert rt.intake.pending == 0
    hits = client.post("/api/memory/recall", json={"query": "which build tool, uv or poetry?"}).json()["results"]
    assert [h["id"] for h in hits] == [body["id"]]
    stored = client.post("/api/memory/remember", json={"content": "the build uses uv, not poetry"}).json()
    assert stored["id"] == body["id"] and stored["deduped"] is True and stored["queued"] is False
    st = client.get("/api/status").json()["intake"]
    assert st["state"] == "on" and st["pending"] == 0 and st["accepted"] == 1 and st["stored"] == 1
    assert rows(rt.workspace, "SELECT COUNT(*) FROM memory_intake") == [(0,)]
    events = rows(rt.workspace, f"SELECT event FROM memory_history WHERE memory_id = '{body['id']}'")
    assert events == [("created",)]


def test_modify_and_forget_of_an_id_just_returned_wait_for_it(
    make_workspace: Callable[..., Workspace], open_app: Callable[[Workspace], tuple[Runtime, TestClient]]
) -> None:
    _rt, client = open_app(held_workspace(make_workspace))
    mid = client.post("/api/memory/remember", json={"content": "deploys go out on Tuesdays"}).json()["id"]
    r = client.patch(f"/api/memory/{mid}", json={"content": "deploys go out on Thursdays", "reason": "moved"})
    assert r.status_code == 200, r.text
    mid2 = client.post("/api/memory/remember", json={"content": "a memory to forget at once"}).json()["id"]
    assert client.delete(f"/api/memory/{mid2}", params={"reason": "test"}).status_code == 200
    listed = {m["id"]: m for m in client.get("/api/memories").json()["items"]}
    assert listed[mid]["content"] == "deploys go out on Thursdays" and mid2 not in listed


def test_a_request_that_cannot_wait_says_what_it_may_not_see(
    make_workspace: Callable[..., Workspace], open_app: Callable[[Workspace], tuple[Runtime, TestClient]]
) -> None:
    rt, client = open_app(held_workspace(make_workspace, read_wait_s=0))
    client.post("/api/memory/remember", json={"content": "first of two"})
    client.post("/api/memory/remember", json={"content": "second of two"})
    r = client.get("/api/memories")
    assert r.status_code == 200
    assert r.headers[PENDING_HEADER.decode()] == "2"
    assert rt.intake is not None and rt.intake.wait_stored(30)
    r = client.get("/api/memories")
    assert PENDING_HEADER.decode() not in r.headers and r.json()["total"] == 2


def test_status_and_health_do_not_wait(
    make_workspace: Callable[..., Workspace], open_app: Callable[[Workspace], tuple[Runtime, TestClient]]
) -> None:
    rt, client = open_app(held_workspace(make_workspace))
    client.post("/api/memory/remember", json={"content": "status does not wait for this"})
    assert client.get("/health").status_code == 200
    st = client.get("/api/status").json()
    assert st["intake"]["pending"] == 1 and st["memories"]["total"] == 0
    assert rt.intake is not None and rt.intake.pending == 1


def test_rows_left_by_a_stopped_daemon_are_stored_at_the_next_start(
    make_workspace: Callable[..., Workspace], open_app: Callable[[Workspace], tuple[Runtime, TestClient]]
) -> None:
    ws = held_workspace(make_workspace)
    rt, client = open_app(ws)
    ids = [
        client.post("/api/memory/remember", json={"content": f"left waiting {i}", "project": "p"}).json()["id"]
        for i in range(5)
    ]
    client.__exit__(None, None, None)
    rt.stop()  # the rows stay committed
    assert rows(ws, "SELECT COUNT(*) FROM memory_intake") == [(5,)]
    assert rows(ws, "SELECT COUNT(*) FROM memories") == [(0,)]

    rt2 = start_runtime(ws)
    try:
        assert rt2.intake is not None and rt2.intake.wait_stored(30)
        stored = rows(ws, "SELECT id, project FROM memories ORDER BY seq")
        assert stored == [(i, "p") for i in ids]  # the accepted ids, in the order accepted
        assert rows(ws, "SELECT COUNT(*) FROM memory_intake") == [(0,)]
    finally:
        rt2.stop()


def intake_row(mem_id: str, content: str | None, content_hash: str) -> dict[str, object]:
    """A memory as the intake keeps it (``content`` None: a row missing its text)."""
    mem: dict[str, object] = {
        "id": mem_id,
        "content": content,
        "normalized_content": "",
        "content_hash": content_hash,
        "type": "fact",
        "importance": 0.8,
        "pinned": 0,
        "tags": "[]",
        "who": None,
        "why": None,
        "project": None,
        "source_type": None,
        "source_id": None,
        "created_at": "2026-11-27T00:00:00Z",
        "updated_at": "2026-11-27T00:00:00Z",
        "agent_id": "default",
        "visibility": "global",
    }
    if content is None:
        del mem["content"]
    return mem


def left_waiting(ws: Workspace, mems: list[dict[str, object]]) -> None:
    """Rows a previous run accepted and did not store (written behind the daemon's back)."""
    conn = StoreConnection(ws)
    try:
        for mem in mems:
            conn.execute(
                "INSERT INTO memory_intake (id, content_hash, agent_id, project_key, payload, accepted_at)"
                " VALUES (?, ?, 'default', '', ?, '2026-11-27T00:00:00Z')",
                (mem["id"], mem["content_hash"], json.dumps({"mem": mem, "changed_by": "test"})),
            )
    finally:
        conn.close()


def test_a_row_that_cannot_be_stored_is_set_aside_with_its_error(make_workspace: Callable[..., Workspace]) -> None:
    ws = held_workspace(make_workspace)
    start_runtime(ws).stop()  # migrated
    bad = intake_row("00000000-0000-4000-8000-000000000001", None, "h-bad")
    good = intake_row("00000000-0000-4000-8000-000000000002", "a good row after a bad one", "h-good")
    left_waiting(ws, [bad, good])
    rt = start_runtime(ws)
    try:
        assert rt.intake is not None and rt.intake.wait_stored(30)
        assert rows(ws, "SELECT id FROM memories") == [(good["id"],)]
        failed = rows(ws, "SELECT id, error FROM memory_intake_failed")
        assert len(failed) == 1 and failed[0][0] == bad["id"] and "content" in str(failed[0][1])
        st = rt.service.status(str(ws.root), str(rt.db_path))
        assert st.intake is not None and st.intake.failed == 1
        assert any("memory_intake_failed" in w for w in st.warnings)
    finally:
        rt.stop()


def test_a_row_whose_insert_fails_is_set_aside_and_its_batch_still_stored(
    make_workspace: Callable[..., Workspace],
) -> None:
    """The batch's transaction fails on one row: the rows are stored one by one instead."""
    ws = held_workspace(make_workspace)
    rt = start_runtime(ws)
    taken = rt.service.remember(RememberRequest(content="a memory whose id a row reuses")).id
    rt.stop()
    first = intake_row("00000000-0000-4000-8000-00000000000a", "stored before the clash", "h-a")
    clash = intake_row(taken, "another text under a stored memory's id", "h-clash")
    last = intake_row("00000000-0000-4000-8000-00000000000c", "stored after the clash", "h-c")
    left_waiting(ws, [first, clash, last])
    rt = start_runtime(ws)
    try:
        assert rt.intake is not None and rt.intake.wait_stored(30)
        ids = {r[0] for r in rows(ws, "SELECT id FROM memories")}
        assert ids == {taken, first["id"], last["id"]}
        failed = rows(ws, "SELECT id, error FROM memory_intake_failed")
        assert [f[0] for f in failed] == [taken] and "conflicts" in str(failed[0][1])
        assert rows(ws, "SELECT COUNT(*) FROM memory_intake") == [(0,)]
        st = rt.intake.status()
        assert st.failed == 1 and st.stored == 2
    finally:
        rt.stop()


def test_the_same_text_accepted_twice_at_once_is_one_memory(make_workspace: Callable[..., Workspace]) -> None:
    rt = start_runtime(held_workspace(make_workspace))
    try:
        intake = rt.intake
        assert intake is not None
        req = RememberRequest(content="two clients said this at the same moment")

        async def both() -> list[str]:
            out = await asyncio.gather(*(intake.accept(req, changed_by="t") for _ in range(8)))
            return [r.id for r in out]

        ids = asyncio.run(both())
        assert len(set(ids)) == 1
        assert intake.wait_stored(30)
        assert rows(rt.workspace, "SELECT id FROM memories") == [(ids[0],)]
    finally:
        rt.stop()


def test_a_text_stored_first_by_another_write_merges_the_waiting_row(make_workspace: Callable[..., Workspace]) -> None:
    rt = start_runtime(held_workspace(make_workspace))
    try:
        intake = rt.intake
        assert intake is not None
        req = RememberRequest(content="stored by the pipeline while it waited")
        waiting = asyncio.run(intake.accept(req, changed_by="t"))
        direct = rt.service.remember(req)  # another write path, not through the HTTP barrier
        assert direct.id != waiting.id and not direct.deduped
        assert intake.wait_stored(30)
        assert rows(rt.workspace, "SELECT id FROM memories") == [(direct.id,)]
        st = intake.status()
        assert st.merged == 1 and st.stored == 1 and st.pending == 0
    finally:
        rt.stop()


def test_with_the_intake_off_a_remember_is_stored_before_its_answer(
    make_workspace: Callable[..., Workspace], open_app: Callable[[Workspace], tuple[Runtime, TestClient]]
) -> None:
    rt, client = open_app(make_workspace(embedding="none", memory={"intake": {"enabled": False}}))
    assert rt.intake is None
    body = client.post("/api/memory/remember", json={"content": "stored at once"}).json()
    assert body["queued"] is False
    assert rows(rt.workspace, "SELECT id FROM memories") == [(body["id"],)]
    assert client.get("/api/status").json()["intake"] is None


def test_an_out_of_scope_remember_is_refused_before_it_is_queued(
    make_workspace: Callable[..., Workspace],
) -> None:
    from signet.errors import Forbidden
    from signet.store.scope import ReadScope

    rt = start_runtime(held_workspace(make_workspace))
    try:
        intake = rt.intake
        assert intake is not None
        scope = ReadScope(project="mine")
        with pytest.raises(Forbidden):
            asyncio.run(intake.accept(RememberRequest(content="x", project="theirs"), changed_by="t", scope=scope))
        assert intake.pending == 0
        assert rows(rt.workspace, "SELECT COUNT(*) FROM memory_intake") == [(0,)]
    finally:
        rt.stop()


def test_by_default_only_overlapping_remembers_are_queued(make_workspace: Callable[..., Workspace]) -> None:
    ws = make_workspace(embedding="none", memory={"intake": {"quiet_ms": 60_000, "max_lag_s": 3600}})
    rt = start_runtime(ws)
    try:
        intake = rt.intake
        assert intake is not None

        async def one(text: str) -> bool:
            return (await intake.accept(RememberRequest(content=text), changed_by="t")).queued

        assert asyncio.run(one("a remember alone is stored before its answer")) is False
        assert rows(ws, "SELECT COUNT(*) FROM memories") == [(1,)]

        async def burst() -> list[bool]:
            return list(await asyncio.gather(*(one(f"burst remember {i}") for i in range(20))))

        queued = asyncio.run(burst())
        assert queued[0] is False and all(queued[1:])  # the first found none in flight
        assert asyncio.run(one("while rows wait, a remember joins them")) is True
        assert intake.wait_stored(30)
        assert rows(ws, "SELECT COUNT(*) FROM memories") == [(22,)]
    finally:
        rt.stop()


def test_past_max_pending_a_remember_waits_for_its_own_storing(
    make_workspace: Callable[..., Workspace], open_app: Callable[[Workspace], tuple[Runtime, TestClient]]
) -> None:
    rt, client = open_app(held_workspace(make_workspace, max_pending=2))
    answers = [client.post("/api/memory/remember", json={"content": f"backlog {i}"}).json() for i in range(3)]
    assert [a["queued"] for a in answers] == [True, True, False]
    assert rt.intake is not None and rt.intake.pending == 2
    assert rows(rt.workspace, "SELECT id FROM memories") == [(answers[2]["id"],)]
    assert client.get("/api/memories").json()["total"] == 3


def test_a_project_token_stays_in_its_project_through_the_intake(
    make_workspace: Callable[..., Workspace], open_app: Callable[[Workspace], tuple[Runtime, TestClient]]
) -> None:
    from signet.auth.tokens import issue, load_secret

    ws = held_workspace(make_workspace)
    write_config(ws, auth={"mode": "team", "rateLimits": {"default": 1_000_000, "operations": {}}})
    rt, client = open_app(ws)
    tok, _ = issue(load_secret(ws.root), sub="alpha-agent", role="agent", ttl_s=3600, project="alpha")
    headers = {"Authorization": f"Bearer {tok}"}
    out = client.post("/api/memory/remember", headers=headers, json={"content": "escape to beta", "project": "beta"})
    assert out.status_code == 403 and out.json()["code"] == "forbidden", out.text
    assert rt.intake is not None and rt.intake.pending == 0
    assert rows(ws, "SELECT COUNT(*) FROM memory_intake") == [(0,)]
    inside = client.post("/api/memory/remember", headers=headers, json={"content": "stays in alpha"})
    assert inside.status_code == 200 and inside.json()["queued"] is True, inside.text
    assert rt.intake.wait_stored(30)
    assert rows(ws, "SELECT project FROM memories") == [("alpha",)]
