"""The job queue: atomic leasing under races, dedup, retry / dead-letter, reaper, backoff."""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from signet.pipeline import queue
from signet.pipeline.worker import backoff_seconds
from signet.store.database import Database, connect

N_JOBS = 300


def fill(db: Database, n: int = N_JOBS) -> None:
    def write(conn: Any) -> None:
        for i in range(n):
            queue.enqueue(conn, "extract", memory_id=f"m{i}")

    db.write(write)


def race(lease_fns: list[Callable[[], str | None]]) -> list[list[str]]:
    """Run each lease function in its own thread until the queue is empty."""
    got: list[list[str]] = [[] for _ in lease_fns]
    barrier = threading.Barrier(len(lease_fns))

    def run(i: int) -> None:
        barrier.wait()
        while True:
            jid = lease_fns[i]()
            if jid is None:
                return
            got[i].append(jid)
            time.sleep(0.0002)  # let the other worker in: both must actually contend

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(lease_fns))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    return got


def naive_lease(conn: Any) -> str | None:
    """A lease that is NOT atomic (select, then update): the control the race test must catch."""
    row = conn.execute(
        "SELECT id FROM memory_jobs WHERE status = 'pending' ORDER BY created_at, rowid LIMIT 1"
    ).fetchone()
    if row is None:
        return None
    time.sleep(0.0005)
    conn.execute("UPDATE memory_jobs SET status = 'leased', attempts = attempts + 1 WHERE id = ?", (row[0],))
    return str(row[0])


def check_disjoint(got: list[list[str]], total: int) -> None:
    flat = [j for g in got for j in g]
    assert len(flat) == len(set(flat)), f"{len(flat) - len(set(flat))} jobs leased twice"
    assert len(flat) == total
    assert all(g for g in got), "one worker never got a job: the race did not happen"


def test_two_databases_on_one_file_never_lease_the_same_job(tmp_path: Path) -> None:
    path = tmp_path / "q.db"
    with Database(path) as a, Database(path) as b:
        fill(a)
        got = race([lambda: _id(a.write(queue.lease)), lambda: _id(b.write(queue.lease))])
        check_disjoint(got, N_JOBS)
        rows = a.read(lambda c: c.execute("SELECT status, attempts FROM memory_jobs").fetchall())
        assert {tuple(r) for r in rows} == {("leased", 1)}


def _id(job: queue.Job | None) -> str | None:
    return job.id if job is not None else None


def test_autocommit_connections_race_and_the_naive_lease_fails(tmp_path: Path) -> None:
    """Raw autocommit connections (no surrounding transaction, as two processes would have):
    the single-statement lease stays disjoint, while the select-then-update control leases
    jobs twice - so this test would catch a non-atomic lease."""
    path = tmp_path / "q.db"
    with Database(path) as db:
        fill(db)
    conns = [connect(path) for _ in range(2)]
    try:
        got = race([lambda c=c: _id(queue.lease(c)) for c in conns])  # type: ignore[misc]
        check_disjoint(got, N_JOBS)
        for c in conns:
            c.execute("UPDATE memory_jobs SET status = 'pending', attempts = 0")
        dup = race([lambda c=c: naive_lease(c) for c in conns])  # type: ignore[misc]
        flat = [j for g in dup for j in g]
        assert len(flat) > len(set(flat)), "the non-atomic control should have double-leased"
    finally:
        for c in conns:
            c.close()


def test_enqueue_dedup_retry_dead_and_requeue(tmp_path: Path) -> None:
    with Database(tmp_path / "q.db") as db:
        first = db.write(lambda c: queue.enqueue(c, "extract", memory_id="m1", max_attempts=2))
        again = db.write(lambda c: queue.enqueue(c, "extract", memory_id="m1"))
        assert first[1] is True and again == (first[0], False)
        other_type = db.write(lambda c: queue.enqueue(c, "document_ingest", memory_id="m1"))
        assert other_type[1] is True
        job = db.write(lambda c: queue.lease(c, ("extract",)))
        assert job is not None and job.id == first[0] and job.attempts == 1
        # Leased still counts as live: no duplicate.
        assert db.write(lambda c: queue.enqueue(c, "extract", memory_id="m1"))[1] is False
        assert db.write(lambda c: queue.fail(c, first[0], "boom")) == "pending"
        job = db.write(lambda c: queue.lease(c, ("extract",)))
        assert job is not None and job.attempts == 2
        assert db.write(lambda c: queue.fail(c, first[0], "boom again")) == "dead"
        assert db.write(lambda c: queue.lease(c, ("extract",))) is None
        # Dead: a new enqueue for the same memory is allowed again.
        assert db.write(lambda c: queue.enqueue(c, "extract", memory_id="m1"))[1] is True
        st = db.read(queue.stats)
        assert st["dead"] == 1 and st["by_type"]["extract"] == {"dead": 1, "pending": 1}
        assert st["last_error"] == "boom again"
        assert db.write(lambda c: queue.requeue_dead(c)) == [first[0]]
        row = db.read(
            lambda c: c.execute(
                "SELECT status, attempts, max_attempts FROM memory_jobs WHERE id = ?", (first[0],)
            ).fetchone()
        )
        assert tuple(row) == ("pending", 2, 4)  # a fresh budget of 2; the count goes on
        # Completing needs the lease.
        assert db.write(lambda c: queue.complete(c, first[0], {})) is False
        # A worker still holding attempt 2 (from before the job died) cannot complete the new lease.
        job = db.write(lambda c: queue.lease(c, ("extract",)))
        assert job is not None and job.id == first[0] and job.attempts == 3
        assert db.write(lambda c: queue.complete(c, first[0], {}, attempt=2)) is False
        assert db.write(lambda c: queue.complete(c, first[0], {}, attempt=3)) is True


def test_reaper_releases_stale_leases(tmp_path: Path) -> None:
    with Database(tmp_path / "q.db") as db:
        a = db.write(lambda c: queue.enqueue(c, "extract", memory_id="a"))[0]
        b = db.write(lambda c: queue.enqueue(c, "extract", memory_id="b", max_attempts=1))[0]
        db.write(queue.lease)
        db.write(queue.lease)
        old = (datetime.now(UTC) - timedelta(minutes=10)).isoformat()
        db.write(lambda c: c.execute("UPDATE memory_jobs SET leased_at = ? WHERE id = ?", (old, a)))
        assert db.write(lambda c: queue.reap_stale(c, 300_000)) == 1  # a is stale, b is fresh
        st = dict(db.read(lambda c: c.execute("SELECT id, status FROM memory_jobs").fetchall()))
        assert st == {a: "pending", b: "leased"}
        db.write(lambda c: c.execute("UPDATE memory_jobs SET leased_at = ? WHERE id = ?", (old, b)))
        assert db.write(lambda c: queue.release_leases(c, 300_000)) == 1
        st = dict(db.read(lambda c: c.execute("SELECT id, status FROM memory_jobs").fetchall()))
        assert st == {a: "pending", b: "dead"}  # b had no attempts left


def test_backoff_schedule() -> None:
    rng = random.Random(1)
    assert backoff_seconds(0, 1000, 30_000) == 0
    for n, base in ((1, 1.0), (2, 2.0), (3, 4.0), (5, 16.0), (6, 30.0), (10, 30.0)):
        d = backoff_seconds(n, 1000, 30_000, rng)
        assert base <= d <= base + 0.5, (n, d)


def test_heartbeat_keeps_a_long_job_from_the_reaper(tmp_path: Path) -> None:
    with Database(tmp_path / "q.db") as db:
        jid = db.write(lambda c: queue.enqueue(c, "extract", memory_id="long"))[0]
        db.write(queue.lease)
        old = (datetime.now(UTC) - timedelta(minutes=10)).isoformat()
        db.write(lambda c: c.execute("UPDATE memory_jobs SET leased_at = ?", (old,)))
        assert db.write(lambda c: queue.heartbeat(c, jid)) is True
        assert db.write(lambda c: queue.reap_stale(c, 60_000)) == 0
        db.write(lambda c: queue.complete(c, jid, {}))
        assert db.write(lambda c: queue.heartbeat(c, jid)) is False  # not leased any more
