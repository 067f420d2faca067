"""Background work one daemon does for all on a shared PostgreSQL store (store.exclusive).

Retention sweeps, maintenance cycles and scheduled consolidation run on every daemon's timer;
on one store only one daemon at a time does each (a session advisory lock, which the server
drops with a dead daemon's session), and a scheduled consolidation is made once per fire time.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from signet.config import RetentionSettings
from signet.memory.retention import RetentionWorker
from signet.runtime import Runtime
from signet.store.pg_url import resolve
from signet.store.postgres import PostgresDatabase
from signet.workspace import Workspace
from tests.pg.conftest import NO_PASSWORD


def test_one_daemon_at_a_time_and_never_waiting(stores: Callable[[], PostgresDatabase]) -> None:
    a, b = stores(), stores()
    with a.exclusive("retention") as mine:
        assert mine
        started = time.monotonic()
        with b.exclusive("retention") as theirs:
            assert not theirs
        assert time.monotonic() - started < 2.0  # refused at once, not after a wait
        with b.exclusive("maintenance") as other:
            assert other  # another name is another lock
    with b.exclusive("retention") as now_theirs:
        assert now_theirs  # released at the end of the block


def test_a_killed_holder_frees_the_work(pg_url: str, stores: Callable[[], PostgresDatabase]) -> None:
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time\n"
            "from signet.store.pg_url import resolve\n"
            "from signet.store.postgres import PostgresDatabase\n"
            f"db = PostgresDatabase(resolve(sys.argv[1], {NO_PASSWORD!r})).open()\n"
            "with db.exclusive('retention') as mine:\n"
            "    print('held' if mine else 'refused', flush=True)\n"
            "    time.sleep(600)\n",
            pg_url,
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        b = stores()
        with b.exclusive("retention") as mine:
            assert not mine
        os.kill(holder.pid, signal.SIGKILL)
        holder.wait(timeout=10)
        deadline = time.monotonic() + 10
        while True:  # the server ends the dead session's backend as soon as it sees the socket close
            with b.exclusive("retention") as mine:
                if mine:
                    break
            assert time.monotonic() < deadline, "the dead daemon's lock was never released"
            time.sleep(0.05)
    finally:
        holder.kill()
        holder.wait(timeout=10)


def test_a_retention_sweep_is_skipped_while_another_daemon_sweeps(stores: Callable[[], PostgresDatabase]) -> None:
    a, b = stores(), stores()
    worker = RetentionWorker(b, RetentionSettings())
    with a.exclusive("retention"):
        assert worker.sweep_if_mine() is None
        assert worker.last_run is None
    assert worker.sweep_if_mine() is not None
    assert worker.last_run is not None


def test_a_scheduled_consolidation_is_made_once_per_fire_time(
    pg_url: str, make_workspace: Callable[..., Workspace]
) -> None:
    runtimes = [
        Runtime(make_workspace(embedding="none"), storage=PostgresDatabase(resolve(pg_url, NO_PASSWORD))).start()
        for _ in range(2)
    ]
    try:
        a, b = (rt.consolidation for rt in runtimes)
        fire = datetime.now(UTC) - timedelta(seconds=1)
        with runtimes[0].db.exclusive("consolidation"):
            assert b.scheduled_run(fire) is None  # a consolidates now
        made = a.scheduled_run(fire)
        assert made is not None and made.trigger == "scheduled"
        assert b.scheduled_run(fire) is None  # this fire time's run exists
        later = b.scheduled_run(datetime.now(UTC))
        assert later is not None and later.id != made.id  # the next fire time is run again
        count = runtimes[0].db.read(
            lambda c: c.execute("SELECT COUNT(*) FROM consolidation_runs WHERE trigger = 'scheduled'").fetchone()[0]
        )
        assert count == 2
    finally:
        for rt in runtimes:
            rt.stop()
