"""A write that loses a lock race to another daemon's transaction is run again and lands; one
that keeps losing is a 503 "retry", never a 500: real deadlocks on a real PostgreSQL between
the store's writer and another connection."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import psycopg

from signet.daemon.errors import database_error
from signet.errors import StorageBusy
from signet.store import group_writer
from signet.store.pg_url import resolve
from signet.store.postgres import PostgresDatabase
from signet.store.sqlite import sqlite3


def test_a_write_that_loses_a_deadlock_is_run_again_and_lands(pg_url: str) -> None:
    with PostgresDatabase(resolve(pg_url, "env:SIGNET_TEST_NO_SUCH_VAR")) as db:
        db.write(lambda c: c.execute("CREATE TABLE duel (id INTEGER PRIMARY KEY, v INTEGER)"))
        db.write(lambda c: c.execute("INSERT INTO duel VALUES (1, 0), (2, 0)"))
        other = psycopg.connect(pg_url, autocommit=False)  # another daemon's transaction
        runs: list[int] = []
        try:
            other.execute("UPDATE duel SET v = 1 WHERE id = 1")  # it holds row 1
            waiting = threading.Event()

            def crosswise(c: Any) -> str:
                runs.append(1)
                c.execute("UPDATE duel SET v = 2 WHERE id = 2")  # the writer holds row 2 ...
                waiting.set()
                c.execute("UPDATE duel SET v = 2 WHERE id = 1")  # ... and waits for row 1
                return "landed"

            outcome: list[object] = []

            def write() -> None:
                try:
                    outcome.append(db.write(crosswise))
                except sqlite3.Error as exc:  # what the store raises for psycopg's errors
                    outcome.append(exc)

            t = threading.Thread(target=write)
            t.start()
            assert waiting.wait(10)
            time.sleep(0.2)  # the writer waits first, so its deadlock check (after 1 s) runs first
            other.execute("UPDATE duel SET v = 1 WHERE id = 2")  # the cycle: PostgreSQL breaks it
            other.commit()  # the winner commits; the writer's retry then finds both rows free
            t.join(30)
        finally:
            other.close()
        assert outcome == ["landed"], outcome
        assert len(runs) == 2, "the writer was expected to be the deadlock's victim, then to run again"
        rows = db.read(lambda c: c.execute("SELECT id, v FROM duel ORDER BY id").fetchall())
        assert [tuple(r) for r in rows] == [(1, 2), (2, 2)]  # the retry's writes, after the winner's


def test_a_write_that_keeps_losing_is_storage_busy_and_alone(pg_url: str, tmp_path: Path) -> None:
    """PostgreSQL raising 40P01 every time (a real error of the server, raised on purpose): the
    write runs 1 + WRITE_RETRIES times, then its caller gets the error, which the daemon answers
    503 "retry"; a write of the same group that did not lose lands once."""
    with PostgresDatabase(resolve(pg_url, "env:SIGNET_TEST_NO_SUCH_VAR")) as db:
        db.write(lambda c: c.execute("CREATE TABLE tally (n INTEGER)"))
        with psycopg.connect(pg_url, autocommit=True) as admin:
            admin.execute(
                "CREATE FUNCTION lose() RETURNS INTEGER LANGUAGE plpgsql AS"
                " $$ BEGIN RAISE EXCEPTION 'lost again' USING ERRCODE = '40P01'; END $$"
            )
        runs: list[int] = []

        def always_loses(c: Any) -> None:
            runs.append(1)
            c.execute("INSERT INTO tally VALUES (1)")
            c.execute("SELECT lose()")

        gate = threading.Event()
        blocker = db.submit(lambda c: gate.wait(10))  # holds the writer so the next two share a group
        loser = db.submit(always_loses)
        winner = db.submit(lambda c: c.execute("INSERT INTO tally VALUES (2)"))
        gate.set()
        blocker.result(10)
        winner.result(10)
        err = loser.exception(30)
        assert isinstance(err, sqlite3.Error) and getattr(err, "sqlstate", None) == "40P01"
        assert len(runs) == 1 + group_writer.WRITE_RETRIES
        assert db.read(lambda c: [r[0] for r in c.execute("SELECT n FROM tally").fetchall()]) == [2]
        answer = database_error(err, tmp_path / "unused.db")
        assert isinstance(answer, StorageBusy) and answer.status == 503 and "retry" in answer.message
        db.write(lambda c: c.execute("INSERT INTO tally VALUES (3)"))  # the writer goes on
        assert db.read(lambda c: c.execute("SELECT COUNT(*) FROM tally").fetchone()[0]) == 2
