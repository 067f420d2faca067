"""Scheduled tasks with several daemons on one PostgreSQL store (signet.tasks.service).

Two task schedulers, each on its own store of one database (as two daemons are), run the
same tasks: each due run is fired exactly once between them, a run on one keeps the other
from starting the task, and neither marks the other's live run as interrupted when it starts
or stops; a run left by a daemon that is gone is.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from signet.config import TasksSettings
from signet.errors import Conflict
from signet.store.pg_url import resolve
from signet.store.postgres import PostgresDatabase
from signet.tasks import rows
from signet.tasks.models import TaskCreate, TaskRun
from signet.tasks.service import TaskService

SH = shutil.which("sh") or "/bin/sh"
SETTINGS = TasksSettings.model_validate({"allow": [SH]})


@pytest.fixture
def two_daemons(pg_url: str, tmp_path: Path) -> Iterator[Callable[[], TaskService]]:
    """A factory of started task schedulers, each on its own store of the one database."""
    made: list[tuple[TaskService, PostgresDatabase]] = []

    def make() -> TaskService:
        db = PostgresDatabase(resolve(pg_url, "env:SIGNET_TEST_NO_SUCH_VAR")).open()
        svc = TaskService(db, SETTINGS, tmp_path)
        svc.start()
        made.append((svc, db))
        return svc

    yield make
    for svc, db in reversed(made):
        svc.stop()
        db.close()


def all_runs(svc: TaskService, task_id: str) -> list[TaskRun]:
    runs, _ = svc.db.read(lambda c: rows.runs_of(c, task_id, 1000, 0))
    return runs


def wait_for(check: Callable[[], bool], timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def test_each_due_run_fires_once_across_two_daemons(two_daemons: Callable[[], TaskService]) -> None:
    a, b = two_daemons(), two_daemons()
    task = a.create(TaskCreate(name="tick", schedule="every 1s", command=[SH, "-c", "echo tick"]))
    b._wake.set()  # b's scheduler read the task list before it existed: look again now
    wait_for(lambda: len([r for r in all_runs(a, task.id) if r.status == "done"]) >= 6)
    a.stop()
    b.stop()
    runs = [r for r in all_runs(a, task.id) if r.trigger == "schedule"]
    due = [r.scheduled_for for r in runs]
    assert len(due) == len(set(due)), sorted(due)  # no fire time run twice
    assert {r.status for r in runs} <= {"done", "running", "interrupted"}, runs
    runners = a.db.read(
        lambda c: {r[0] for r in c.execute("SELECT runner FROM task_runs WHERE task_id = ?", (task.id,)).fetchall()}
    )
    assert runners <= {a.db.node, b.db.node}


def test_a_run_on_one_daemon_is_live_to_the_other(two_daemons: Callable[[], TaskService]) -> None:
    a = two_daemons()
    task = a.create(TaskCreate(name="long", schedule="every 1d", command=[SH, "-c", "sleep 30"], enabled=True))
    run = a.run_now(task.id)
    b = two_daemons()  # starts while a's run goes on: must not mark it interrupted
    assert [r.status for r in all_runs(b, task.id) if r.id == run.id] == ["running"]
    with pytest.raises(Conflict, match="another daemon"):
        b.run_now(task.id)
    b.stop()  # stopping marks only b's own runs
    assert [r.status for r in all_runs(a, task.id) if r.id == run.id] == ["running"]
    a.stop()  # its own run is killed as it stops
    assert [r.status for r in all_runs(a, task.id) if r.id == run.id] == ["cancelled"]


def test_a_gone_daemons_run_is_interrupted_and_frees_the_task(two_daemons: Callable[[], TaskService]) -> None:
    a = two_daemons()
    task = a.create(TaskCreate(name="left", schedule="every 1d", command=[SH, "-c", "echo again"]))
    left = TaskRun(
        id="left-by-a-dead-daemon",
        task_id=task.id,
        trigger="schedule",
        status="running",
        scheduled_for=None,
        started_at="2026-01-01T00:00:00+00:00",
        finished_at=None,
        exit_code=None,
        output="",
        truncated=False,
        error=None,
    )
    a.db.write(lambda c: rows.insert_run(c, left, 100, runner="signet-000000dead00"))
    # Left behind by a node with no session: a live daemon neither waits for it nor is refused.
    rerun = a.run_now(task.id)
    wait_for(lambda: [r.status for r in all_runs(a, task.id) if r.id == rerun.id] == ["done"])
    b = two_daemons()  # a starting daemon marks the dead node's run interrupted
    assert [r.status for r in all_runs(b, task.id) if r.id == left.id] == ["interrupted"]
