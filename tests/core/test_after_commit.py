"""The in-memory vector index follows the database: it changes only after a write commits,
and a write that rolls back leaves it as it was (real runtime, real SQLite, the bundled model)."""

from __future__ import annotations

import numpy as np
import pytest

from signet.models import ModifyPatch, RememberRequest
from signet.runtime import Runtime
from signet.store import vector_blob
from signet.store.sqlite import Connection


class Boom(RuntimeError):
    pass


def _unit(seed: int, dims: int) -> np.ndarray:
    v = np.random.default_rng(seed).standard_normal(dims).astype(np.float32)
    return v / np.linalg.norm(v)


def _fail_after(fn: object) -> object:
    def write(conn: Connection) -> None:
        fn(conn)  # type: ignore[operator]
        raise Boom("rolled back after the change")

    return write


def test_rolled_back_writes_leave_the_index_unchanged(runtime: Runtime) -> None:
    svc, index = runtime.service, runtime.index
    kept = svc.remember(RememberRequest(content="The deploy key lives in the team vault")).id
    runtime.embeddings.wait_idle(60)
    before = index.vector_of(kept)
    assert before is not None and len(index) == 1
    dims = before.shape[0]

    new_ids: list[str] = []

    def add(conn: Connection) -> None:
        row, _ = svc.remember_in(
            conn, RememberRequest(content="Lunch is at noon on Fridays"), changed_by="test", vector=_unit(1, dims)
        )
        new_ids.append(row["id"])

    cases = {
        "remember with a vector": add,
        "modify with a new vector": lambda conn: svc.modify_in(
            conn,
            ModifyPatch(id=kept, content="The deploy key moved to the ops vault"),
            reason="test",
            changed_by="test",
            vector=_unit(2, dims),
        ),
        "delete": lambda conn: svc.delete_in(conn, kept, reason="test", changed_by="test"),
        "move to another project": lambda conn: svc.modify_in(
            conn, ModifyPatch(id=kept, project="elsewhere"), reason="test", changed_by="test"
        ),
    }
    for name, change in cases.items():
        with pytest.raises(Boom):
            runtime.db.write(_fail_after(change))  # type: ignore[arg-type]
        after = index.vector_of(kept)
        assert after is not None and np.array_equal(after, before), name
        assert len(index) == 1 and not any(i in index for i in new_ids), name
        assert index.search(before, 5, project="elsewhere") == [], name  # the project move did not land
        got = svc.get(kept)
        assert (got.version, got.project) == (1, None), name

    # The same changes committed do reach the index, right after the commit.
    runtime.db.write(
        lambda conn: svc.modify_in(
            conn,
            ModifyPatch(id=kept, content="The deploy key moved to the ops vault"),
            reason="test",
            changed_by="test",
            vector=_unit(2, dims),
        )
    )
    after = index.vector_of(kept)
    assert after is not None and np.array_equal(after, vector_blob.as_stored(_unit(2, dims)))  # as stored
    runtime.db.write(lambda conn: svc.delete_in(conn, kept, reason="test", changed_by="test"))
    assert kept not in index


def test_after_commit_is_only_for_write_functions(runtime: Runtime) -> None:
    with pytest.raises(RuntimeError, match="writer thread"):
        runtime.db.after_commit(lambda: None)
