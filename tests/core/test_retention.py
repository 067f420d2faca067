"""The retention sweep purges in order, only what is past its window, and repair endpoints work."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient

from signet.daemon.app import create_app
from signet.runtime import Runtime
from signet.store import entity_links
from signet.store import thread_context as context
from signet.workspace import Workspace
from tests.conftest import start_runtime
from tests.fts_damage import unindex


def test_sweep_purges_expired_tombstones_and_their_links(api: TestClient, runtime: Runtime) -> None:
    old = api.post("/api/memory/remember", json={"content": "old deleted memory about Zeta"}).json()["id"]
    fresh = api.post("/api/memory/remember", json={"content": "recently deleted memory"}).json()["id"]
    live = api.post("/api/memory/remember", json={"content": "live memory about Zeta"}).json()["id"]
    assert runtime.embeddings.wait_idle(60)
    now = datetime.now(UTC).isoformat()

    def graph(conn: Any) -> None:
        # This test's own graph, not the one the write-time extractor built (signet.knowledge).
        conn.execute("DELETE FROM entities")
        conn.execute(
            "INSERT INTO entities(id, name, canonical_name, mentions, created_at, updated_at)"
            " VALUES ('e1', 'Zeta', 'zeta', 2, ?, ?)",
            (now, now),
        )
        conn.execute(
            "INSERT INTO entities(id, name, canonical_name, mentions, created_at, updated_at)"
            " VALUES ('e2', 'Only', 'only', 1, ?, ?)",
            (now, now),
        )
        for mid, eid in ((old, "e1"), (live, "e1"), (old, "e2")):
            assert entity_links.link(conn, mid, eid, None, None, now) == 1

    runtime.db.write(graph)
    for mid in (old, fresh):
        assert api.delete(f"/api/memory/{mid}", params={"reason": "test"}).status_code == 200
    long_ago = (datetime.now(UTC) - timedelta(days=31)).isoformat()
    runtime.db.write(lambda c: c.execute("UPDATE memories SET deleted_at = ? WHERE id = ?", (long_ago, old)))
    runtime.db.write(
        lambda c: c.execute(
            "UPDATE memory_history SET created_at = ? WHERE memory_id = ? AND event = 'created'",
            ((datetime.now(UTC) - timedelta(days=200)).isoformat(), live),
        )
    )

    report = api.post("/api/repair/retention-sweep").json()
    assert report["tombstones"] == 1 and report["graph_links"] == 2 and report["orphaned_entities"] == 1
    assert report["embeddings"] == 1 and report["history"] == 1
    assert api.get(f"/api/memory/{old}").status_code == 404
    assert api.get(f"/api/memory/{fresh}").json()["is_deleted"] is True  # still within the window
    assert api.post(f"/api/memory/{fresh}/recover", json={"reason": "keep"}).status_code == 200

    def check(conn: Any) -> tuple[Any, ...]:
        return (
            conn.execute("SELECT mentions FROM entities WHERE id = 'e1'").fetchone()[0],
            conn.execute("SELECT COUNT(*) FROM entities WHERE id = 'e2'").fetchone()[0],
            conn.execute("SELECT COUNT(*) FROM embeddings").fetchone()[0],
        )

    assert runtime.db.read(check) == (1, 0, 2)
    assert api.post("/api/repair/retention-sweep").json()["tombstones"] == 0


@pytest.mark.sqlite_only("the FTS5 index and its repair")
def test_fts_check_and_rebuild(api: TestClient, runtime: Runtime) -> None:
    api.post("/api/memory/remember", json={"content": "indexed text about otters"})
    assert api.post("/api/repair/check-fts").json()["consistent"] is True
    runtime.db.write(
        lambda c: c.execute(
            "INSERT INTO memories_fts(memories_fts, rowid, content) VALUES "
            "('delete', (SELECT seq FROM memories LIMIT 1), 'indexed text about otters')"
        )
    )
    bad = api.post("/api/repair/check-fts").json()
    assert bad["consistent"] is False and bad["rebuilt"] is False
    fixed = api.post("/api/repair/check-fts", json={"repair": True}).json()
    assert fixed["consistent"] is True and fixed["rebuilt"] is True
    assert api.post("/api/memory/recall", json={"query": "otters"}).json()["results"]
    gaps = api.get("/api/repair/embedding-gaps").json()
    assert gaps["provider"] == "local" and gaps["pending"] >= 0


async def _remember_trip_thread(c: httpx.AsyncClient) -> str:
    """A question and its answer in one thread; returns the answer's id (findable by its context)."""
    thread = {"source_type": "session", "source_id": "trip-chat"}
    await c.post("/api/memory/remember", json={"content": "where did you go on your road trip?", **thread})
    r = await c.post("/api/memory/remember", json={"content": "Woodhaven, a small town in the Midwest", **thread})
    return str(r.json()["id"])


@pytest.mark.sqlite_only("the FTS5 index and its repair")
def test_fts_repair_rebuilds_the_thread_context_index(make_workspace: Callable[..., Workspace]) -> None:
    """Recall's keyword leg reads memories_ctx_fts; emptied, recall finds nothing until the repair.

    No embedder, so recall is the keyword leg alone; the answer is only findable through its
    thread context (the question one turn earlier), so a repair that restored content but not
    context would still fail.
    """
    rt = start_runtime(make_workspace(embedding="none"))
    app = create_app(rt, manage_runtime=False)

    async def scenario() -> None:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1:3850") as c:
            answer = await _remember_trip_thread(c)

            async def recalled() -> list[str]:
                r = await c.post("/api/memory/recall", json={"query": "road trip"})
                assert r.status_code == 200 and r.json()["method"] == "fts", r.text
                return [hit["id"] for hit in r.json()["results"]]

            assert answer in await recalled()
            assert (await c.post("/api/repair/check-fts")).json() == {
                "memories": 2,
                "indexed": 2,
                "context_indexed": 2,
                "consistent": True,
                "rebuilt": False,
            }

            rt.db.write(lambda conn: unindex(conn, "1"))
            assert await recalled() == []
            index = (await c.get("/api/diagnostics")).json()["domains"]["index"]
            assert index["metrics"]["context_fts_rows"] == 0
            assert any("thread-context FTS index has 0 rows" in f for f in index["findings"]), index
            checked = (await c.post("/api/repair/check-fts")).json()
            assert checked == {"memories": 2, "indexed": 2, "context_indexed": 0, "consistent": False, "rebuilt": False}
            assert await recalled() == []  # checking alone repairs nothing

            fixed = (await c.post("/api/repair/check-fts", json={"repair": True})).json()
            assert fixed == {"memories": 2, "indexed": 2, "context_indexed": 2, "consistent": True, "rebuilt": True}
            assert answer in await recalled()

    try:
        asyncio.run(scenario())
    finally:
        rt.stop()


@pytest.mark.sqlite_only("the FTS5 index and its repair")
def test_forced_fts_rebuild_fixes_drift_the_check_cannot_see(make_workspace: Callable[..., Workspace]) -> None:
    """``force: true`` rebuilds both keyword indexes even when the check reports them consistent.

    The drift here keeps every row count and passes FTS5's integrity check: one memory's thread
    context in memories_ctx_fts is emptied, so recall's keyword leg misses the answer.
    ``repair`` alone leaves it broken; ``force`` restores it, and rebuilds memories_fts (the
    content index) in the same write: seen in its storage, which a rebuild writes as one
    segment where the two remembers wrote one segment each.
    """
    rt = start_runtime(make_workspace(embedding="none"))
    app = create_app(rt, manage_runtime=False)

    async def scenario() -> None:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1:3850") as c:
            answer = await _remember_trip_thread(c)
            seq = rt.db.read(
                lambda conn: conn.execute("SELECT seq FROM memories WHERE id = ?", (answer,)).fetchone()[0]
            )
            context_before = rt.db.read(lambda conn: context.context_of(conn, seq))
            assert context_before and "road trip" in context_before

            async def recalled() -> list[str]:
                r = await c.post("/api/memory/recall", json={"query": "road trip"})
                assert r.status_code == 200 and r.json()["method"] == "fts", r.text
                return [hit["id"] for hit in r.json()["results"]]

            async def legacy(q: str) -> list[str]:
                r = await c.get("/memory/search", params={"q": q})
                assert r.status_code == 200, r.text
                return [hit["id"] for hit in r.json()["results"]]

            assert answer in await recalled() and await legacy("Woodhaven") == [answer]

            def segments(conn: Any) -> int:
                return int(conn.execute("SELECT COUNT(*) FROM memories_fts_data WHERE id > 10").fetchone()[0])

            assert rt.db.read(segments) == 2
            rt.db.write(lambda conn: unindex(conn, f"m.seq = {seq}"))
            rt.db.write(
                lambda conn: conn.execute(
                    "INSERT INTO memories_ctx_fts(rowid, content, context)"
                    " SELECT seq, content, '' FROM memories WHERE seq = ?",
                    (seq,),
                )
            )
            consistent = {"memories": 2, "indexed": 2, "context_indexed": 2, "consistent": True}
            assert answer not in await recalled()
            assert (await c.post("/api/repair/check-fts")).json() == {**consistent, "rebuilt": False}
            assert (await c.post("/api/repair/check-fts", json={"repair": True})).json() == {
                **consistent,
                "rebuilt": False,
            }
            assert answer not in await recalled() and rt.db.read(segments) == 2

            forced = (await c.post("/api/repair/check-fts", json={"force": True})).json()
            assert forced == {**consistent, "rebuilt": True}
            assert rt.db.read(lambda conn: context.context_of(conn, seq)) == context_before
            assert answer in await recalled() and await legacy("Woodhaven") == [answer]
            assert rt.db.read(segments) == 1

            for bad in ({"force": "maybe"}, {"forse": True}):
                r = await c.post("/api/repair/check-fts", json=bad)
                assert r.status_code == 422 and r.json()["code"] == "invalid_request", r.text

    try:
        asyncio.run(scenario())
    finally:
        rt.stop()


def test_sweep_trims_the_keyword_log_when_nothing_else_does(
    make_workspace: Callable[..., Workspace], monkeypatch: Any
) -> None:
    """With the in-memory keyword index off nobody consumes the change log the context
    triggers write; the sweep keeps only its newest entries (the newest one always)."""
    from signet.memory import retention

    monkeypatch.setattr(retention, "KEEP_LOG", 5)
    rt = start_runtime(make_workspace(embedding="none", search={"keyword_index": False}))
    try:
        assert rt.keywords is None
        for i in range(12):
            rt.db.write(
                lambda c, i=i: c.execute(  # type: ignore[misc]
                    "INSERT INTO memories(id, content, normalized_content, content_hash, created_at, updated_at)"
                    " VALUES (?, ?, ?, ?, 't', 't')",
                    (f"m{i}", f"text {i}", f"text {i}", f"h{i}"),
                )
            )

        # One entry per insert (and on SQLite migration 15's "everything changed" first).
        def ids() -> list[int]:
            return rt.db.read(lambda c: [int(r[0]) for r in c.execute("SELECT id FROM keyword_changes ORDER BY id")])

        before = ids()
        assert len(before) >= 12
        kept = [i for i in before if i >= before[-1] - 5]  # the newest, and the 5 ids before it
        assert rt.retention.sweep().keyword_log == len(before) - len(kept)
        assert ids() == kept and len(kept) == 6
        assert rt.retention.sweep().keyword_log == 0
    finally:
        rt.stop()
