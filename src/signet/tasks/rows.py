"""Rows of ``tasks`` and ``task_runs`` (migrations 19 and 29, signet.store.schema_tasks)."""

from __future__ import annotations

import json
from typing import Any

from signet.store.liveness import orphaned
from signet.store.sqlite import Connection
from signet.tasks.models import TaskRun

TASK_COLUMNS = (
    "id, name, schedule, command, harness, prompt, cwd, timeout_s, enabled, created_at, updated_at, next_run_at, "
    "secrets"
)
JSON_COLUMNS = ("command", "secrets")
RUN_COLUMNS = (
    "id, task_id, trigger, status, scheduled_for, started_at, finished_at, exit_code, output, truncated, error"
)


def task_dict(row: Any) -> dict[str, Any]:
    keys = [k.strip() for k in TASK_COLUMNS.split(",")]
    data = dict(zip(keys, row, strict=True))
    data["command"] = json.loads(data["command"])
    data["secrets"] = json.loads(data["secrets"])
    data["enabled"] = bool(data["enabled"])
    return data


def insert_task(conn: Connection, task: dict[str, Any]) -> None:
    conn.execute(
        f"INSERT INTO tasks({TASK_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            task["id"],
            task["name"],
            task["schedule"],
            json.dumps(task["command"]),
            task["harness"],
            task["prompt"],
            task["cwd"],
            task["timeout_s"],
            int(task["enabled"]),
            task["created_at"],
            task["updated_at"],
            task["next_run_at"],
            json.dumps(task.get("secrets") or []),
        ),
    )


def update_task(conn: Connection, task_id: str, fields: dict[str, Any]) -> None:
    values = {k: json.dumps(v) if k in JSON_COLUMNS else int(v) if k == "enabled" else v for k, v in fields.items()}
    sets = ", ".join(f"{k} = ?" for k in values)
    conn.execute(f"UPDATE tasks SET {sets} WHERE id = ?", (*values.values(), task_id))


def get_task(conn: Connection, task_id: str) -> dict[str, Any] | None:
    row = conn.execute(f"SELECT {TASK_COLUMNS} FROM tasks WHERE id = ?", (task_id,)).fetchone()
    return None if row is None else task_dict(row)


def all_tasks(conn: Connection) -> list[dict[str, Any]]:
    return [task_dict(r) for r in conn.execute(f"SELECT {TASK_COLUMNS} FROM tasks ORDER BY created_at, id")]


def delete_task(conn: Connection, task_id: str) -> bool:
    conn.execute("DELETE FROM task_runs WHERE task_id = ?", (task_id,))
    return bool(conn.execute("DELETE FROM tasks WHERE id = ?", (task_id,)).rowcount)


def insert_run(conn: Connection, run: TaskRun, keep: int, runner: str | None = None) -> None:
    """Record a run; ``runner`` is the store node of the daemon running it (a ``running`` run)."""
    conn.execute(
        f"INSERT INTO task_runs({RUN_COLUMNS}, runner) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            run.id,
            run.task_id,
            run.trigger,
            run.status,
            run.scheduled_for,
            run.started_at,
            run.finished_at,
            run.exit_code,
            run.output,
            int(run.truncated),
            run.error,
            runner,
        ),
    )
    conn.execute(
        "DELETE FROM task_runs WHERE task_id = ? AND seq NOT IN "
        "(SELECT seq FROM task_runs WHERE task_id = ? ORDER BY seq DESC LIMIT ?)",
        (run.task_id, run.task_id, keep),
    )


def update_run(conn: Connection, run_id: str, fields: dict[str, Any]) -> None:
    values = {k: int(v) if k == "truncated" else v for k, v in fields.items()}
    sets = ", ".join(f"{k} = ?" for k in values)
    conn.execute(f"UPDATE task_runs SET {sets} WHERE id = ?", (*values.values(), run_id))


def _run(row: Any) -> TaskRun:
    keys = [k.strip() for k in RUN_COLUMNS.split(",")]
    data = dict(zip(keys, row, strict=True))
    data["truncated"] = bool(data["truncated"])
    return TaskRun.model_validate(data)


def get_run(conn: Connection, run_id: str) -> TaskRun | None:
    row = conn.execute(f"SELECT {RUN_COLUMNS} FROM task_runs WHERE id = ?", (run_id,)).fetchone()
    return None if row is None else _run(row)


def runs_of(conn: Connection, task_id: str, limit: int, offset: int) -> tuple[list[TaskRun], int]:
    rows = conn.execute(
        f"SELECT {RUN_COLUMNS} FROM task_runs WHERE task_id = ? ORDER BY seq DESC LIMIT ? OFFSET ?",
        (task_id, limit, offset),
    ).fetchall()
    total = int(conn.execute("SELECT COUNT(*) FROM task_runs WHERE task_id = ?", (task_id,)).fetchone()[0])
    return [_run(r) for r in rows], total


INTERRUPTED = "status = 'interrupted', finished_at = ?, error = 'the daemon stopped before this run finished'"


def interrupt_orphans(conn: Connection, at: str, me: str) -> int:
    """Mark as interrupted the runs left ``running`` by daemons that are gone (at start: this
    one's previous run's; another live daemon's are left alone)."""
    cur = conn.execute(
        f"UPDATE task_runs SET {INTERRUPTED} WHERE status = 'running' AND {orphaned(conn, 'runner')}",
        (at, me),
    )
    return int(cur.rowcount or 0)


def interrupt_mine(conn: Connection, at: str, me: str) -> int:
    """Mark as interrupted the runs this daemon left ``running`` (at stop)."""
    cur = conn.execute(f"UPDATE task_runs SET {INTERRUPTED} WHERE status = 'running' AND runner = ?", (at, me))
    return int(cur.rowcount or 0)


def running_elsewhere(conn: Connection, task_id: str, me: str) -> bool:
    """Whether another live daemon is running this task now (several daemons on one store)."""
    row = conn.execute(
        f"SELECT 1 FROM task_runs WHERE task_id = ? AND status = 'running' AND runner <> ? "
        f"AND NOT {orphaned(conn, 'runner')} LIMIT 1",
        (task_id, me, me),
    ).fetchone()
    return row is not None


def advance(conn: Connection, task_id: str, due: str, nxt: str) -> bool:
    """Move a task's next run from ``due`` to ``nxt``, only if it still says ``due``: of several
    daemons finding the same run due, exactly one advances it and fires it."""
    cur = conn.execute("UPDATE tasks SET next_run_at = ? WHERE id = ? AND next_run_at = ?", (nxt, task_id, due))
    return bool(cur.rowcount)
