"""The daemon starts its index loaders once it listens (Runtime.defer_loaders): a runtime told
to defer starts neither the embedder's thread nor the keyword index's until asked, once; and a
real daemon still gets both ready after it answers /health."""

from __future__ import annotations

from collections.abc import Callable

from signet.runtime import Runtime
from signet.workspace import Workspace
from tests.conftest import DaemonProcess, wait_embedder


def test_a_deferring_runtime_loads_only_when_asked(make_workspace: Callable[..., Workspace]) -> None:
    rt = Runtime(make_workspace())
    rt.defer_loaders = True
    rt.start()
    try:
        assert rt.embeddings._thread is None and rt.keywords is not None and rt.keywords._thread is None
        assert rt.embeddings.state == "loading" and rt.keywords.state() != "ready"  # what /api/status says meanwhile
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
