"""A write committed alone (GroupWriter.write(alone=True): remember_batch) is its own transaction
with no savepoint: it lands whole or not at all, writes queued around it keep their own groups,
and a batch that fails stores nothing (real SQLite store)."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from signet.store.database import Database


class Boom(RuntimeError):
    pass


def test_alone_lands_whole_or_not_at_all_and_the_writer_goes_on(tmp_path: Path) -> None:
    with Database(tmp_path / "s.db") as db:
        db.write(lambda c: c.execute("CREATE TABLE t (v INTEGER)"))

        def many(c: Any) -> int:
            for i in range(500):
                c.execute("INSERT INTO t VALUES (?)", (i,))
            return 500

        def half_then_fail(c: Any) -> None:
            for i in range(250):
                c.execute("INSERT INTO t VALUES (?)", (1000 + i,))
            raise Boom("a bad item in the batch")

        gate = threading.Event()
        blocker = db.submit(lambda c: gate.wait(10))  # the next writes queue up behind it
        results: list[Any] = []
        threads = [
            threading.Thread(target=lambda: results.append(db.write(lambda c: c.execute("INSERT INTO t VALUES (-1)")))),
            threading.Thread(target=lambda: results.append(db.write(many, alone=True))),
        ]
        for t in threads:
            t.start()
        gate.set()
        blocker.result(10)
        for t in threads:
            t.join(10)
        with pytest.raises(Boom):
            db.write(half_then_fail, alone=True)
        db.write(lambda c: c.execute("INSERT INTO t VALUES (-2)"))  # the writer goes on
        values = db.read(lambda c: sorted(r[0] for r in c.execute("SELECT v FROM t")))
    assert values == [-2, -1, *range(500)]  # the failed batch left nothing behind
    assert 500 in results
