"""A daemon asked to stop while it loads a big store's indexes stops at once.

Loading the vector and keyword indexes reads every memory (minutes at a million); before,
``signet stop`` meanwhile waited for each load to finish or for its 30 s join to give up, and
then closed the database under a thread still reading it. The loads now ask whether the daemon
is stopping as they read, and give up.
"""

from __future__ import annotations

import pytest

from signet.embedding.service import EmbeddingService
from signet.errors import Stopping, until_stopped
from signet.models import RememberRequest
from signet.runtime import Runtime
from signet.search.keyword_mirror import KeywordMirror
from signet.search.vectors import VectorIndex
from signet.workspace import Workspace
from tests.conftest import wait_embedder


def test_until_stopped_yields_every_row_until_asked_to_stop() -> None:
    assert list(until_stopped(range(1000), lambda: False, every=7)) == list(range(1000))
    asked = {"stop": False}
    seen = []
    with pytest.raises(Stopping):
        for row in until_stopped(range(1000), lambda: asked["stop"], every=10):
            seen.append(row)
            asked["stop"] = asked["stop"] or row == 25
    assert seen == list(range(30))  # the next check, at row 30, raised


def _remember(rt: Runtime, n: int) -> None:
    rt.service.remember_batch(
        [RememberRequest(content=f"note {i} about the harbour ferry timetable") for i in range(n)]
    )
    wait_embedder(rt)
    assert rt.embeddings.wait_idle(120)  # every memory has its vector


def test_the_loads_give_up_when_stopping_and_leave_their_index_as_it_was(runtime: Runtime) -> None:
    _remember(runtime, 12)
    emb = EmbeddingService(runtime.db, runtime.settings.embedding, VectorIndex())
    emb._stop.set()
    with pytest.raises(Stopping):
        emb._load()  # the model loads; reading the vectors gives up
    assert emb.state == "loading" and len(emb.index) == 0  # type: ignore[arg-type]

    mirror = KeywordMirror(runtime.db)
    with pytest.raises(Stopping):
        mirror.build(stopping=lambda: True)  # as its thread builds once the daemon stops
    assert not mirror.ready and len(mirror.index) == 0
    mirror.stop()
    mirror.build()  # a caller's own build (a repair) completes even then
    assert mirror.ready and len(mirror.index) == 12
    # Not stopping: the same loads complete.
    emb = EmbeddingService(runtime.db, runtime.settings.embedding, VectorIndex())
    emb._load()
    assert emb.state == "ready" and len(emb.index) == 12  # type: ignore[arg-type]
    fresh = KeywordMirror(runtime.db)
    fresh.build()
    assert fresh.ready and len(fresh.index) == 12


def test_a_runtime_stopped_while_its_loaders_run_leaves_no_thread_behind(workspace: Workspace) -> None:
    with Runtime(workspace) as rt:
        rt.service.remember_batch([RememberRequest(content=f"memory {i}: pier {i % 97}") for i in range(20000)])
    rt = Runtime(workspace).start()
    rt.start_loaders()
    threads = [rt.embeddings._thread, rt.keywords._thread if rt.keywords is not None else None]
    rt.stop()
    assert all(t is None or not t.is_alive() for t in threads)
    with Runtime(workspace) as again:
        assert again.db.read(lambda c: c.execute("SELECT COUNT(*) FROM memories").fetchone()[0]) == 20000
