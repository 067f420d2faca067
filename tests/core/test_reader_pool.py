"""The database's read connections are a small pool, not one per thread: a server with 40
worker threads must not hold 40 connections with 40 page caches (RSS that never comes back)."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

from signet.store.database import MAX_READERS, Database
from signet.store.sqlite import sqlite3


def test_forty_threads_share_a_bounded_pool_and_each_read_is_one_snapshot(tmp_path: Path) -> None:
    db = Database(tmp_path / "memories.db").open()
    try:
        db.write(lambda c: c.execute("CREATE TABLE t(x INTEGER)"))
        db.write(lambda c: c.execute("INSERT INTO t VALUES (1)"))
        errors: list[Exception] = []

        def reader() -> None:
            def read(c: Any) -> int:
                time.sleep(0.005)  # hold the connection while other threads want one
                return int(c.execute("SELECT COUNT(*) FROM t").fetchone()[0])

            try:
                for _ in range(20):
                    assert db.read(read) >= 1
            except (AssertionError, RuntimeError, sqlite3.Error) as exc:  # asserted empty below
                errors.append(exc)

        threads = [threading.Thread(target=reader) for _ in range(40)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert not errors
        assert len(db._readers) <= MAX_READERS

        # A read inside a read (same thread) runs in the outer one's snapshot, on its connection.
        def outer(c: Any) -> tuple[int, int, bool]:
            before = int(c.execute("SELECT COUNT(*) FROM t").fetchone()[0])
            db.write(lambda w: w.execute("INSERT INTO t VALUES (2)"))
            inner = db.read(lambda c2: (int(c2.execute("SELECT COUNT(*) FROM t").fetchone()[0]), c2 is c))
            return before, inner[0], inner[1]

        before, inner, same = db.read(outer)
        assert same and inner == before  # the write after the snapshot began is not seen
        assert db.read(lambda c: int(c.execute("SELECT COUNT(*) FROM t").fetchone()[0])) == before + 1
    finally:
        db.close()
