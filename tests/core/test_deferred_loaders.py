"""The daemon starts its index loaders once it listens (Runtime.defer_loaders): a runtime told
to defer starts neither the embedder's thread nor the keyword index's until asked, once; and a
real daemon still gets both ready after it answers /health. The keyword index is built after
the vector index has loaded (KeywordMirror._wait_for), not beside it, however that load ends."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path

from signet.runtime import Runtime
from signet.search.keyword_mirror import KeywordMirror
from signet.store.database import Database
from signet.workspace import Workspace
from tests.conftest import DaemonProcess, start_runtime, wait_embedder, write_config
from tests.core.fake_embedder import FakeEmbeddingServer


def test_a_deferring_runtime_loads_only_when_asked(make_workspace: Callable[..., Workspace]) -> None:
    rt = Runtime(make_workspace())
    rt.defer_loaders = True
    rt.start()
    try:
        assert rt.embeddings._thread is None and rt.keywords is not None and rt.keywords._thread is None
        assert (
            rt.embeddings.state == "loading" and rt.keywords.state().state != "ready"
        )  # what /api/status says meanwhile
        rt.start_loaders()
        first = rt.embeddings._thread
        rt.start_loaders()  # once
        assert first is not None and rt.embeddings._thread is first
        wait_embedder(rt)
        assert rt.keywords.wait_ready(30)
    finally:
        rt.stop()


def test_the_daemon_loads_its_indexes_after_it_listens(daemon: DaemonProcess) -> None:
    daemon.wait_embedder()
    text = daemon.log.read_text(errors="replace")
    assert text.index("Uvicorn running on") < text.index("keyword index ready"), text[-2000:]
    assert text.index("embedder local:") < text.index("keyword index ready"), text[-2000:]


def test_the_keyword_build_waits_for_its_event_and_gives_up_waiting_on_stop(tmp_path: Path) -> None:
    db = Database(tmp_path / "memories.db").open()
    try:
        loaded = threading.Event()
        mirror = KeywordMirror(db)
        mirror.start(after=loaded)
        time.sleep(0.5)
        assert not mirror.ready and mirror.state().state == "building"
        loaded.set()
        assert mirror.wait_ready(10)
        mirror.stop()

        waiting = KeywordMirror(db)
        waiting.start(after=threading.Event())  # never set
        started = time.monotonic()
        waiting.stop()
        assert time.monotonic() - started < 5 and not waiting.ready
    finally:
        db.close()


def test_a_provider_that_cannot_load_does_not_hold_the_keyword_index_back(
    make_workspace: Callable[..., Workspace],
) -> None:
    with FakeEmbeddingServer() as emb:
        emb.mode = "down500"
        ws = make_workspace(embedding="none")
        write_config(
            ws, embedding={"provider": "ollama", "model": "nomic-embed-text", "base_url": emb.url, "timeout": 1}
        )
        rt = start_runtime(ws, wait=False)
        try:
            assert rt.keywords is not None and rt.keywords.wait_ready(30)
            assert rt.embeddings.state == "unavailable" and rt.embeddings.loaded.is_set()
        finally:
            rt.stop()
