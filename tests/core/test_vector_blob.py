"""Vectors stored in half precision (signet.store.vector_blob): what is stored reads back as the
index holds it, stores written before (float32) still read, exports keep float32, and the
embeddings table takes about half the pages. Real SQLite files, the real local model."""

from __future__ import annotations

import base64
import contextlib
import json
import sqlite3 as std_sqlite3
import time
from collections.abc import Callable

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from signet.memory.exporter import export_lines
from signet.models import RecallRequest, RememberRequest
from signet.runtime import Runtime
from signet.store import vector_blob
from signet.workspace import Workspace
from tests.conftest import start_runtime

finite = st.floats(-60000, 60000, allow_nan=False, width=32)


@given(hnp.arrays(np.float32, st.integers(1, 1024), elements=finite))
def test_a_stored_vector_reads_back_as_the_index_holds_it(v: np.ndarray) -> None:
    blob = vector_blob.encode(v)
    assert len(blob) == 2 * len(v)
    back = vector_blob.decode(blob, len(v))
    assert back.dtype == np.float32
    assert np.array_equal(back, vector_blob.as_stored(v))
    # Half precision: 11 significant bits (and a subnormal floor near zero).
    assert np.all(np.abs(back - v) <= np.abs(v) * 2.0**-11 + 2.0**-24)


@given(hnp.arrays(np.float32, st.integers(1, 512), elements=finite))
def test_vectors_stored_before_half_precision_still_read_exactly(v: np.ndarray) -> None:
    assert np.array_equal(vector_blob.decode(v.astype("<f4").tobytes(), len(v)), v)
    assert vector_blob.float32_bytes(v.astype("<f4").tobytes(), len(v)) == v.astype("<f4").tobytes()


def test_the_dimensions_say_which_layout_a_blob_has() -> None:
    blob = np.arange(384, dtype="<f4").tobytes()  # 1,536 bytes: also 768 half-precision values
    assert np.array_equal(vector_blob.decode(blob, 384), np.arange(384, dtype=np.float32))
    assert vector_blob.decode(blob, 768).shape == (768,)
    with pytest.raises(ValueError, match="cannot hold 100 values"):
        vector_blob.decode(blob, 100)
    assert vector_blob.float32_bytes(b"\x00" * 7, 384) == b"\x00" * 7  # damaged: left for the import to refuse


def test_many_rows_of_mixed_layouts_and_sizes() -> None:
    rng = np.random.default_rng(3)
    a, b, c = (rng.standard_normal(8).astype(np.float32) for _ in range(3))
    other = rng.standard_normal(4).astype(np.float32)
    blobs = [
        vector_blob.encode(a),
        b.astype("<f4").tobytes(),
        b"\x01\x02\x03",
        vector_blob.encode(other),
        vector_blob.encode(c),
    ]
    mat, kept = vector_blob.decode_many(blobs, [8, 8, 8, 4, 8])
    assert kept == [0, 1, 4]  # the damaged row and the other model's are left out
    assert np.array_equal(mat, np.stack([vector_blob.as_stored(a), b, vector_blob.as_stored(c)]))
    uniform, kept = vector_blob.decode_many([vector_blob.encode(a), vector_blob.encode(c)], [8, 8])
    assert kept == [0, 1] and uniform.flags.writeable and uniform.dtype == np.float32
    empty, kept = vector_blob.decode_many([], [])
    assert empty.shape == (0, 0) and kept == []


def _settled(rt: Runtime) -> None:
    deadline = time.monotonic() + 60
    while rt.embeddings.pending_count() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert rt.embeddings.pending_count() == 0


@pytest.mark.sqlite_only("reads the SQLite file's pages")
def test_a_store_holds_half_precision_and_reads_its_older_rows(make_workspace: Callable[..., Workspace]) -> None:
    ws = make_workspace()
    topics = ["sailing", "compilers", "sourdough", "glaciers", "chess", "violins", "volcanoes", "beekeeping"]
    texts = [
        f"Note {i}: a long talk about {topics[i % len(topics)]}, turn {i}, " + "and more words " * 20
        for i in range(240)
    ]
    rt = start_runtime(ws)
    try:
        rt.service.remember_batch([RememberRequest(content=t, project="p") for t in texts], changed_by="test")
        _settled(rt)
        old = rt.service.remember(RememberRequest(content="The harbour freezes every January.", project="p"))
        _settled(rt)

        extra = rt.db.read(
            lambda c: {int(r[0]) for r in c.execute("SELECT length(vector) - 2 * dimensions FROM embeddings")}
        )
        assert extra == {0}  # every vector in 2 bytes a value
        # The table's pages, by the standard library's SQLite (its build has dbstat; pysqlite3's has not).
        with contextlib.closing(std_sqlite3.connect(str(ws.database_path()))) as conn:
            pages, n = conn.execute(
                "SELECT (SELECT SUM(pgsize) FROM dbstat WHERE name = 'embeddings'), (SELECT COUNT(*) FROM embeddings)"
            ).fetchone()
        assert pages / n < 1200, pages / n  # four rows to a 4 KiB page (float32: two, ~2,050 bytes a row)

        # What a store written before half precision holds: float32 bytes of the same values.
        def legacy(conn: object) -> None:
            blob, dims = conn.execute(  # type: ignore[attr-defined]
                "SELECT e.vector, e.dimensions FROM embeddings e JOIN memories m ON m.content_hash = e.content_hash"
                " WHERE m.id = ?",
                (old.id,),
            ).fetchone()
            conn.execute(  # type: ignore[attr-defined]
                "UPDATE embeddings SET vector = ? WHERE vector = ?",
                (vector_blob.decode(blob, int(dims)).astype("<f4").tobytes(), blob),
            )

        rt.db.write(legacy)
    finally:
        rt.stop()
    rt = start_runtime(ws)
    try:
        assert len(rt.index) == len(texts) + 1  # both layouts loaded
        hits = rt.service.recall(RecallRequest(query="does the harbour freeze in winter?", project="p", limit=3))
        assert hits.results[0].id == old.id
        hits = rt.service.recall(RecallRequest(query="beekeeping talk", project="p", limit=5))
        assert hits.results and all("beekeeping" in h.content for h in hits.results)
    finally:
        rt.stop()
    lines = [
        json.loads(x)
        for x in export_lines(ws.database_path(), vectors=True, deleted=False, agent=None, embedding_model=None)
    ]
    vectors = [x["vector"] for x in lines if x.get("kind") == "memory"]
    assert len(vectors) == len(texts) + 1
    assert all(len(base64.b64decode(v["data"])) == 4 * v["dimensions"] for v in vectors)  # the format: float32
