"""Ollama and OpenAI-compatible embedders against a fake server speaking their protocols."""

from __future__ import annotations

import asyncio
import re
import threading
import time
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from signet.config import EmbeddingSettings
from signet.daemon.app import create_app
from signet.embedding.base import EmbeddingError
from signet.embedding.remote import OllamaEmbedder, OpenAIEmbedder
from signet.embedding.service import QueryEmbeddingPaused
from signet.models import ModifyPatch, ModifyRequest, RecallRequest, RememberRequest
from signet.runtime import Runtime
from signet.sdk import AsyncSignetClient
from signet.workspace import Workspace
from tests.conftest import start_runtime, write_config
from tests.core.fake_embedder import FakeEmbeddingServer


@pytest.fixture
def fake() -> Any:
    with FakeEmbeddingServer() as srv:
        yield srv


@pytest.mark.parametrize("cls", [OllamaEmbedder, OpenAIEmbedder])
def test_protocols_and_failures(fake: FakeEmbeddingServer, cls: Any) -> None:
    emb = cls.from_settings(EmbeddingSettings(provider=cls.provider, model="m", base_url=fake.url, timeout=1.0))
    vecs = emb.embed(["alpha beta", "gamma"])
    assert vecs.shape == (2, fake.dims) and abs(float((vecs[0] ** 2).sum()) - 1.0) < 1e-5
    fake.mode = "down500"
    with pytest.raises(EmbeddingError, match="HTTP 500"):
        emb.embed(["x"])
    fake.mode = "garbage"
    with pytest.raises(EmbeddingError, match="invalid JSON"):
        emb.embed(["x"])
    fake.mode = "hang"
    with pytest.raises(EmbeddingError, match="timed out"):
        emb.embed(["x"])
    down = cls.from_settings(EmbeddingSettings(provider=cls.provider, model="m", base_url="http://127.0.0.1:9"))
    with pytest.raises(EmbeddingError, match="unreachable"):
        down.embed(["x"])


def test_runtime_with_ollama_never_reembeds_and_detects_model_change(
    fake: FakeEmbeddingServer, make_workspace: Callable[..., Workspace]
) -> None:
    ws = make_workspace(embedding="ollama")
    write_config(ws, embedding={"provider": "ollama", "model": "nomic-embed-text", "base_url": fake.url})
    rt = start_runtime(ws)
    try:
        svc = rt.service
        a = svc.remember(RememberRequest(content="apples and pears grow in the orchard"))
        svc.remember(RememberRequest(content="the server room is cold"))
        assert rt.embeddings.wait_idle(30)
        assert len([t for t in fake.embedded if t != "signet"]) == 2
        assert svc.recall(RecallRequest(query="orchard apples")).results[0].id == a.id
        count = len([t for t in fake.embedded if t != "signet"])  # + the query
        # the same text again (after a delete) reuses the stored vector: no new embedding call
        svc.delete(a.id, reason="test")
        again = svc.remember(RememberRequest(content="Apples and pears grow in the orchard."))
        assert again.embedding == "ready"
        assert rt.embeddings.wait_idle(30)
        assert len([t for t in fake.embedded if t != "signet"]) == count
    finally:
        rt.stop()
    # switch the model: the daemon sees vectors of another model and re-embeds them
    write_config(ws, embedding={"model": "other-model"})
    rt = start_runtime(ws)
    try:
        st = rt.service.status(str(ws.root), str(rt.db_path))
        assert rt.embeddings.wait_idle(30)
        st = rt.service.status(str(ws.root), str(rt.db_path))
        assert st.embedding.stale_model == 0 and st.embedding.coverage == 1.0
        docs = [t for t in fake.embedded if t not in ("signet", "orchard apples")]
        assert len(docs) == 4  # the two live texts, once per model
    finally:
        rt.stop()


def test_embedder_sweeps_the_store_once_then_follows_new_and_edited_memories(
    fake: FakeEmbeddingServer, make_workspace: Callable[..., Workspace]
) -> None:
    """The first pass walks the store by a cursor (batches of 4 here); after it, only memories
    with no vector yet are looked at (migration 9's index), and each text is embedded once."""
    ws = make_workspace(embedding="none")
    with Runtime(ws) as rt:  # stored while no embedder runs
        ids = [rt.service.remember(RememberRequest(content=f"sweep test memory number {i}")).id for i in range(10)]
    write_config(
        ws, embedding={"provider": "ollama", "model": "nomic-embed-text", "base_url": fake.url, "batch_size": 1}
    )
    rt = start_runtime(ws)
    try:
        assert rt.embeddings.wait_idle(30)
        assert rt.embeddings._swept
        docs = lambda: sorted(t for t in fake.embedded if t.startswith("sweep") or t.startswith("edited"))  # noqa: E731
        assert docs() == sorted(f"sweep test memory number {i}" for i in range(10))
        rt.service.remember(RememberRequest(content="sweep test memory, a new one"))
        rt.service.modify(
            ModifyRequest(patches=[ModifyPatch(id=ids[3], content="edited text of memory three")], reason="test")
        )
        assert rt.embeddings.wait_idle(30)
        assert len(docs()) == 12 and docs().count("edited text of memory three") == 1
        assert rt.embeddings.pending_count() == 0
        assert all(mid in rt.index for mid in ids)
        full = rt.db.read(
            lambda c: c.execute(
                "SELECT COUNT(*) FROM memories m LEFT JOIN embeddings e ON e.content_hash = m.content_hash "
                "WHERE m.is_deleted = 0 AND (e.content_hash IS NULL OR e.model IS NOT ?)",
                (rt.embeddings.model_key,),
            ).fetchone()[0]
        )
        assert full == 0
    finally:
        rt.stop()


def test_unreachable_provider_is_loud(make_workspace: Callable[..., Workspace]) -> None:
    ws = make_workspace(embedding="ollama")
    write_config(ws, embedding={"provider": "ollama", "base_url": "http://127.0.0.1:9", "timeout": 0.5})
    rt = start_runtime(ws, wait=False)
    try:
        rt.embeddings.wait_idle(5)
        rec = rt.service.remember(RememberRequest(content="still saved while vectors are down"))
        assert rec.embedding == "unavailable"
        out = rt.service.recall(RecallRequest(query="saved vectors"))
        assert out.results and out.method == "fts" and out.vector_search.available is False
        assert "unreachable" in (out.vector_search.reason or "")
        st = rt.service.status(str(ws.root), str(rt.db_path))
        assert st.status == "degraded" and any("VECTOR SEARCH IS OFF" in w for w in st.warnings)
    finally:
        rt.stop()


def _ollama_runtime(fake: FakeEmbeddingServer, make_workspace: Callable[..., Workspace]) -> Runtime:
    """A started runtime whose embedder is the fake Ollama server (1 s timeout)."""
    ws = make_workspace(embedding="ollama")
    write_config(
        ws, embedding={"provider": "ollama", "model": "nomic-embed-text", "base_url": fake.url, "timeout": 1.0}
    )
    return start_runtime(ws)


@pytest.mark.parametrize(
    ("outage", "why"),
    [
        ("down500", "HTTP 500"),
        ("garbage", "invalid JSON"),
        ("hang", "timed out"),
        ("refused", "unreachable"),
    ],
)
def test_recall_falls_back_to_keywords_when_the_query_embedding_fails(
    fake: FakeEmbeddingServer, make_workspace: Callable[..., Workspace], outage: str, why: str
) -> None:
    """The provider was up at start-up and dies later: recall answers 200 with keyword hits, not 500.

    Every route that recalls goes through the same path: POST /api/memory/recall, GET
    /api/memory/search and the async SDK client the MCP tools call (over the real app).
    """
    rt = _ollama_runtime(fake, make_workspace)
    try:
        orchard = rt.service.remember(RememberRequest(content="apples and pears grow in the orchard")).id
        rt.service.remember(RememberRequest(content="the server room is cold"))
        assert rt.embeddings.wait_idle(30)
        healthy = rt.service.recall(RecallRequest(query="orchard apples"))
        assert healthy.method == "hybrid" and healthy.results[0].id == orchard
        if outage == "refused":
            fake.server.shutdown()
            fake.server.server_close()  # nothing listens on the port any more
        else:
            fake.mode = outage
        app = create_app(rt, manage_runtime=False)

        async def every_recall_route() -> list[dict[str, Any]]:
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:3850") as c:
                posted = await c.post("/api/memory/recall", json={"query": "pears in the orchard"})
                got = await c.get("/api/memory/search", params={"q": "orchard pears"})
                assert posted.status_code == 200, posted.text
                assert got.status_code == 200, got.text
            async with AsyncSignetClient("http://127.0.0.1:3850", transport=transport) as sdk:
                via_sdk = await sdk.recall("which orchard has pears")
            return [posted.json(), got.json(), via_sdk.model_dump()]

        first, *after = asyncio.run(every_recall_route())
        for out in (first, *after):
            assert out["method"] == "fts"
            assert [r["id"] for r in out["results"]] == [orchard]
            assert out["results"][0]["source"] == "fts"
            state = out["vector_search"]
            assert state["available"] is False
            assert why in state["reason"] and state["reason"].endswith("; keyword results only")
        assert first["vector_search"]["reason"].startswith("query embedding failed: ")
        for out in after:  # the breaker is open: no second call to the failing provider
            assert out["vector_search"]["reason"].startswith("embedding provider failed ")
    finally:
        rt.stop()


@pytest.mark.parametrize(("outage", "recovers"), [("down500", True), ("hang", True), ("refused", False)])
def test_modify_keeps_working_when_the_embedder_fails(
    fake: FakeEmbeddingServer, make_workspace: Callable[..., Workspace], outage: str, recovers: bool
) -> None:
    """A content edit while the remote embedder is down is saved without its vector (200, not 500).

    The memory is left pending, exactly like a fresh remember, and the background embedder
    gives it the vector of its *new* content once the provider answers again.
    """
    rt = _ollama_runtime(fake, make_workspace)
    try:
        one = rt.service.remember(RememberRequest(content="apples and pears grow in the orchard")).id
        two = rt.service.remember(RememberRequest(content="the server room is cold")).id
        assert rt.embeddings.wait_idle(30)
        if outage == "refused":
            fake.server.shutdown()
            fake.server.server_close()
        else:
            fake.mode = outage
        app = create_app(rt, manage_runtime=False)

        async def edit() -> list[httpx.Response]:
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:3850") as c:
                patched = await c.patch(
                    f"/api/memory/{one}",
                    json={"content": "plums and cherries ripen in the walled garden", "reason": "corrected"},
                )
                batch = await c.post(
                    "/api/memory/modify",
                    json={
                        "reason": "corrected",
                        "patches": [{"id": two, "content": "the server room is kept at eighteen degrees"}],
                    },
                )
            return [patched, batch]

        patched, batch = asyncio.run(edit())
        assert patched.status_code == 200, patched.text
        assert batch.status_code == 200, batch.text
        results = [patched.json(), batch.json()["results"][0]]
        for res in results:
            assert res["status"] == "updated" and res["content_changed"] is True and res["embedded"] is False
        for mid in (one, two):
            assert mid not in rt.index  # no stale vector of the old text stays searchable
            assert rt.service.get(mid).embedding_model is None
        assert rt.embeddings.pending_count() == 2
        if recovers:
            fake.mode = "ok"
            rt.embeddings.notify()
            assert rt.embeddings.wait_idle(30)
            assert one in rt.index and two in rt.index
            assert "plums and cherries ripen in the walled garden" in fake.embedded
            out = rt.service.recall(RecallRequest(query="cherries in the walled garden"))
            assert out.method == "hybrid" and out.results[0].id == one and out.results[0].source == "hybrid"
    finally:
        rt.stop()


def test_edits_skip_a_hanging_provider_while_the_breaker_is_open(
    fake: FakeEmbeddingServer, make_workspace: Callable[..., Workspace]
) -> None:
    """Only the first content edit against a hanging embedder waits for its timeout; the next
    ones are saved at once without a vector (the background embedder fills them in later), and
    recall skips the provider too."""
    rt = _ollama_runtime(fake, make_workspace)
    try:
        ids = [rt.service.remember(RememberRequest(content=f"note {i} about the orchard")).id for i in range(5)]
        assert rt.embeddings.wait_idle(30)
        fake.mode = "hang"
        app = create_app(rt, manage_runtime=False)

        async def edit(mid: str, text: str) -> tuple[httpx.Response, float]:
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:3850") as c:
                started = time.perf_counter()
                r = await c.patch(f"/api/memory/{mid}", json={"content": text, "reason": "edit"})
                return r, time.perf_counter() - started

        first, took = asyncio.run(edit(ids[0], "pears grow in the walled garden"))
        assert first.status_code == 200 and first.json()["embedded"] is False and took >= 0.9
        for mid, text in ((ids[1], "plums grow by the gate"), (ids[2], "cherries grow on the hill")):
            r, took = asyncio.run(edit(mid, text))  # without the breaker: another 1 s timeout each
            assert r.status_code == 200 and r.json()["embedded"] is False and took < 0.9, (r.text, took)
        assert rt.embeddings.query_paused() is not None  # recall skips the provider as well

        async def similar(mid: str) -> dict[str, Any]:
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:3850") as c:
                r = await c.get("/memory/similar", params={"id": mid})
                assert r.status_code == 200, r.text
                return dict(r.json())

        # Neighbours come from stored vectors: the open breaker does not make them "unavailable".
        kept = asyncio.run(similar(ids[3]))
        assert kept["vector_search"]["available"] is True and kept["vector_search"]["reason"] is None
        assert kept["results"] and kept["method"] == "hybrid"
        edited = asyncio.run(similar(ids[0]))  # its new text has no vector yet
        assert edited["vector_search"]["available"] is False and "no vector yet" in edited["vector_search"]["reason"]
    finally:
        rt.stop()


BREAKER_REASON = re.compile(
    r"^embedding provider failed \d+\.\d s ago \(.*timed out.*\); retrying after \d+\.\d s; keyword results only$"
)


def test_query_embedding_breaker_skips_a_hanging_provider_then_closes(
    fake: FakeEmbeddingServer, make_workspace: Callable[..., Workspace]
) -> None:
    """Only the first recall against a hanging embedder waits for its timeout.

    The next ones answer keyword results at once, saying when the provider failed and when
    it is retried; status and diagnostics show the degradation. After the cool-down (moved by
    the injectable clock) one recall probes: a failed probe reopens the breaker, a recovered
    provider closes it and recall is hybrid again.
    """
    ws = make_workspace(embedding="ollama")
    write_config(
        ws,
        embedding={
            "provider": "ollama",
            "model": "nomic-embed-text",
            "base_url": fake.url,
            "timeout": 1.0,
            "query_cooldown": 30,
        },
    )
    rt = start_runtime(ws)
    now = [1000.0]
    rt.embeddings.clock = lambda: now[0]
    app = create_app(rt, manage_runtime=False)
    transport = httpx.ASGITransport(app=app)

    async def call(method: str, path: str, **kw: Any) -> tuple[dict[str, Any], float]:
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:3850") as c:
            started = time.perf_counter()
            r = await c.request(method, path, **kw)
            assert r.status_code == 200, r.text
            return r.json(), time.perf_counter() - started

    def recall(query: str) -> tuple[dict[str, Any], float]:
        return asyncio.run(call("POST", "/api/memory/recall", json={"query": query}))

    try:
        orchard = rt.service.remember(RememberRequest(content="apples and pears grow in the orchard")).id
        rt.service.remember(RememberRequest(content="the server room is cold"))
        assert rt.embeddings.wait_idle(30)
        assert recall("orchard apples")[0]["method"] == "hybrid"

        fake.mode = "hang"
        out, took = recall("pears in the orchard")
        assert took >= 0.9 and out["method"] == "fts"  # the one recall that pays the timeout
        assert out["vector_search"]["reason"].startswith("query embedding failed: ")
        asked = fake.requests
        now[0] += 5
        for query in ("which orchard has pears", "orchard pears", "pears and apples in the orchard"):
            out, took = recall(query)
            assert took < 0.9, took
            assert out["method"] == "fts" and [r["id"] for r in out["results"]] == [orchard]
            reason = out["vector_search"]["reason"]
            assert BREAKER_REASON.match(reason), reason
            assert "failed 5.0 s ago" in reason and "retrying after 25.0 s" in reason
        searched, took = asyncio.run(call("GET", "/api/memory/search", params={"q": "orchard pears"}))
        assert took < 0.9 and searched["method"] == "fts" and BREAKER_REASON.match(searched["vector_search"]["reason"])
        assert fake.requests == asked  # nothing more was sent to the hanging provider

        status, _ = asyncio.run(call("GET", "/api/status"))
        assert status["status"] == "degraded" and status["vector_search"]["available"] is False
        assert any("embedding provider failed" in w for w in status["warnings"]), status["warnings"]
        provider, _ = asyncio.run(call("GET", "/api/diagnostics/provider"))
        assert provider["status"] == "degraded"
        assert BREAKER_REASON.match(provider["metrics"]["embedding"]["query_paused"] + "; keyword results only")

        # Cool-down over, provider still failing: one probe, which reopens the breaker.
        fake.mode = "down500"
        now[0] += 30
        out, _ = recall("orchard pears again")
        assert out["method"] == "fts" and "HTTP 500" in out["vector_search"]["reason"]
        assert fake.requests == asked + 1
        out, took = recall("pears in the orchard, still")
        assert took < 0.9 and "retrying after 30.0 s" in out["vector_search"]["reason"]
        assert fake.requests == asked + 1

        # Recovered: the probe after the next cool-down succeeds and closes the breaker.
        fake.mode = "ok"
        now[0] += 31
        out, _ = recall("which orchard grows pears")
        assert out["method"] == "hybrid" and out["vector_search"] == {
            **out["vector_search"],
            "available": True,
            "reason": None,
        }
        assert out["results"][0]["id"] == orchard and out["results"][0]["source"] == "hybrid"
        assert recall("apples in the orchard")[0]["method"] == "hybrid"
        status, _ = asyncio.run(call("GET", "/api/status"))
        assert status["status"] == "ok" and status["vector_search"]["available"] is True
        assert rt.embeddings.query_paused() is None
    finally:
        rt.stop()


def test_query_breaker_lets_one_probe_through_and_can_be_turned_off(
    fake: FakeEmbeddingServer, make_workspace: Callable[..., Workspace]
) -> None:
    """While the probe is under way other recalls keep skipping; ``query_cooldown: 0`` disables the breaker."""
    ws = make_workspace(embedding="ollama")
    write_config(
        ws,
        embedding={
            "provider": "ollama",
            "model": "nomic-embed-text",
            "base_url": fake.url,
            "timeout": 1.0,
            "query_cooldown": 10,
        },
    )
    rt = start_runtime(ws)
    now = [50.0]
    emb = rt.embeddings
    emb.clock = lambda: now[0]
    try:
        fake.mode = "down500"
        with pytest.raises(EmbeddingError, match="HTTP 500"):
            emb.embed_query("first")
        with pytest.raises(QueryEmbeddingPaused, match=r"retrying after 10\.0 s"):
            emb.embed_query("second")
        now[0] += 10
        fake.mode = "hang"  # the probe takes a while: meanwhile the others do not join it
        probe_errors: list[EmbeddingError] = []

        def run_probe() -> None:
            try:
                emb.embed_query("probe")
            except EmbeddingError as exc:
                probe_errors.append(exc)

        probe = threading.Thread(target=run_probe)
        probe.start()
        deadline = time.monotonic() + 5
        while "under way" not in (emb.query_paused() or "") and time.monotonic() < deadline:
            time.sleep(0.01)
        assert "a retry is under way" in (emb.query_paused() or "")
        with pytest.raises(QueryEmbeddingPaused, match="under way"):
            emb.embed_query("concurrent")
        probe.join(10)
        assert len(probe_errors) == 1 and "timed out" in str(probe_errors[0])
        assert "retrying after 10.0 s" in (emb.query_paused() or "")  # the probe timed out: open again

        emb.settings.query_cooldown = 0
        assert emb.query_paused() is None
        fake.mode = "ok"
        assert emb.embed_query("every call reaches the provider") is not None
    finally:
        rt.stop()


def test_pipeline_fact_embedding_catches_embedder_failures_only(
    fake: FakeEmbeddingServer, make_workspace: Callable[..., Workspace], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The pipeline writes facts without vectors when the provider fails (EmbeddingError), but a
    bug in the embedding path (any other exception) is not swallowed: the job records it."""
    from signet.pipeline.writes import Writer, WriteReport

    rt = _ollama_runtime(fake, make_workspace)
    try:
        writer = Writer(rt.service, rt.settings.memory.pipeline)
        report = WriteReport()
        vecs = writer._embed(["Alice leads the payments team"], report)
        assert vecs is not None and len(vecs) == 1 and report.embedding_errors == []
        fake.mode = "down500"
        assert writer._embed(["Bob runs the billing service"], report) is None
        assert len(report.embedding_errors) == 1 and "HTTP 500" in report.embedding_errors[0]
        # The failure opened the breaker: within the cool-down facts are written without
        # vectors at once, without asking the provider again (and no new error to report).
        asked = fake.requests
        assert writer._embed(["Dana runs the support desk"], report) is None
        assert fake.requests == asked and len(report.embedding_errors) == 1
        later = time.monotonic() + 3600
        rt.embeddings.clock = lambda: later  # cool-down over: the provider is tried again

        def broken(texts: list[str]) -> Any:
            raise TypeError("a bug, not an outage")

        assert rt.embeddings.embedder is not None
        monkeypatch.setattr(rt.embeddings.embedder, "embed", broken)
        with pytest.raises(TypeError, match="a bug"):
            writer._embed(["Carol"], report)
    finally:
        rt.stop()


def test_local_model_failures_are_embedding_errors() -> None:
    """torch reports allocation and kernel failures as RuntimeError; the local embedder turns
    them into EmbeddingError, the one failure every caller handles (Embedder contract)."""
    from signet.embedding.local import LocalEmbedder

    class FailingModel:
        def encode(self, texts: list[str], **kw: Any) -> Any:
            raise RuntimeError("[enforce fail at alloc_cpu.cpp:117] DefaultCPUAllocator: not enough memory")

    emb = LocalEmbedder()
    emb._st = FailingModel()
    with pytest.raises(EmbeddingError, match=r"local embedding failed: RuntimeError: .*not enough memory"):
        emb.embed(["anything"])


def test_background_embedder_survives_database_errors_and_reports_a_crash(
    make_workspace: Callable[..., Workspace], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A database error in a batch is retried (the memory still gets its vector); a bug that
    kills the background thread shows in status as degraded with the reason, instead of a
    "ready" embedder that silently never embeds again."""
    from signet.embedding.service import EmbeddingService
    from signet.store.sqlite import sqlite3 as sqlite

    real = EmbeddingService._embed_pending_batch
    calls = {"n": 0}

    def flaky(self: EmbeddingService) -> bool:
        calls["n"] += 1
        if calls["n"] == 1:
            raise sqlite.OperationalError("database or disk is full")
        return real(self)

    monkeypatch.setattr(EmbeddingService, "_embed_pending_batch", flaky)
    rt = start_runtime(make_workspace(embedding="local"))
    try:
        rt.service.remember(RememberRequest(content="otters hold hands while they sleep"))
        assert rt.embeddings.wait_idle(60) and calls["n"] >= 2
        assert rt.embeddings.last_batch_error is None  # cleared by the successful retry
        assert rt.service.status("ws", "db").status == "ok"

        def broken(self: EmbeddingService) -> bool:
            raise KeyError("a bug")

        monkeypatch.setattr(EmbeddingService, "_embed_pending_batch", broken)
        rt.service.remember(RememberRequest(content="a memory the dead thread never embeds"))
        deadline = time.monotonic() + 30
        while rt.embeddings.stopped_error is None and time.monotonic() < deadline:
            time.sleep(0.05)
        status = rt.service.status("ws", "db")
        assert status.status == "degraded"
        assert any("background embedder stopped: KeyError('a bug')" in w for w in status.warnings)
        # Recall still uses the vectors it has.
        assert rt.service.recall(RecallRequest(query="sea mammals sleeping")).method == "hybrid"
    finally:
        rt.stop()


def test_migration_9_indexes_exactly_the_memories_without_a_vector(tmp_path: Any) -> None:
    """The partial index behind the embedder's steady state lists live memories whose
    ``embedding_model`` is NULL, on a store created before it (migrations 1-8 applied)."""
    from signet.store.migrations import MIGRATIONS, migrate
    from signet.store.sqlite import sqlite3

    conn = sqlite3.connect(str(tmp_path / "m.db"), isolation_level=None)
    migrate(conn, [m for m in MIGRATIONS if m.version <= 8])
    for i, (model, deleted) in enumerate([(None, 0), ("ollama:x", 0), (None, 1), (None, 0)]):
        conn.execute(
            "INSERT INTO memories(id, content, normalized_content, content_hash, created_at, updated_at,"
            " embedding_model, is_deleted) VALUES (?, ?, ?, ?, 't', 't', ?, ?)",
            (f"m{i}", f"text {i}", f"text {i}", f"h{i}", model, deleted),
        )
    assert migrate(conn, [m for m in MIGRATIONS if m.version <= 9]) == [9]
    from signet.embedding.service import _NEW_SQL

    plan = " ".join(str(r) for r in conn.execute("EXPLAIN QUERY PLAN " + _NEW_SQL, (10,)))
    assert "idx_memories_unembedded" in plan
    assert [r[1] for r in conn.execute(_NEW_SQL, (10,))] == ["m0", "m3"]
