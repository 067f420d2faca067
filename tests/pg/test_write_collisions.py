"""A write that loses a deadlock to another daemon's transaction is a 503 "retry", never a 500:
a real deadlock on a real PostgreSQL between the store's writer and another connection."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import psycopg

from signet.daemon.errors import database_error
from signet.errors import StorageBusy
from signet.store.pg_url import resolve
from signet.store.postgres import PostgresDatabase
from signet.store.sqlite import sqlite3


def test_a_write_that_loses_a_deadlock_is_storage_busy(pg_url: str, tmp_path: Path) -> None:
    with PostgresDatabase(resolve(pg_url, "env:SIGNET_TEST_NO_SUCH_VAR")) as db:
        db.write(lambda c: c.execute("CREATE TABLE duel (id INTEGER PRIMARY KEY, v INTEGER)"))
        db.write(lambda c: c.execute("INSERT INTO duel VALUES (1, 0), (2, 0)"))
        other = psycopg.connect(pg_url, autocommit=False)  # another daemon's transaction
        try:
            other.execute("UPDATE duel SET v = 1 WHERE id = 1")  # it holds row 1
            waiting = threading.Event()

            def crosswise(c: Any) -> None:
                c.execute("UPDATE duel SET v = 2 WHERE id = 2")  # the writer holds row 2 ...
                waiting.set()
                c.execute("UPDATE duel SET v = 2 WHERE id = 1")  # ... and waits for row 1

            failed: list[BaseException] = []

            def write() -> None:
                try:
                    db.write(crosswise)
                except sqlite3.Error as exc:  # what the store raises for psycopg's errors
                    failed.append(exc)

            t = threading.Thread(target=write)
            t.start()
            assert waiting.wait(10)
            time.sleep(0.2)  # the writer waits first, so its deadlock check (after 1 s) runs first
            other.execute("UPDATE duel SET v = 1 WHERE id = 2")  # the cycle: PostgreSQL breaks it
            other.commit()
            t.join(30)
        finally:
            other.close()
        assert len(failed) == 1, "the writer was expected to be the deadlock's victim"
        assert getattr(failed[0], "sqlstate", None) == "40P01"
        answer = database_error(failed[0], tmp_path / "unused.db")
        assert isinstance(answer, StorageBusy) and answer.status == 503 and "retry" in answer.message
        # the writer goes on: the next write lands
        db.write(lambda c: c.execute("UPDATE duel SET v = 3 WHERE id = 2"))
        assert db.read(lambda c: c.execute("SELECT v FROM duel WHERE id = 2").fetchone()[0]) == 3
