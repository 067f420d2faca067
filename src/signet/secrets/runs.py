"""Rows of ``secret_exec_runs`` (migration 17, signet.store.schema_secrets): every run asked for,
refused runs included, and the state a caller polls. Only redacted text reaches these functions."""

from __future__ import annotations

import json
from typing import Any

from signet.secrets.models import ExecRun
from signet.store.sqlite import Connection

KEEP_ROWS = 10_000
"""Newest rows kept: a caller hammering exec cannot grow the table without bound."""

_COLUMNS = (
    "id, status, command, secrets, actor, origin, created_at, started_at, finished_at, exit_code, "
    "stdout, stderr, truncated, redactions, error"
)


def insert(conn: Connection, run: ExecRun) -> None:
    conn.execute(
        f"INSERT INTO secret_exec_runs({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            run.id,
            run.status,
            json.dumps(run.command),
            json.dumps(run.secrets),
            run.actor[:200],
            run.origin,
            run.created_at,
            run.started_at,
            run.finished_at,
            run.exit_code,
            run.stdout,
            run.stderr,
            int(run.truncated),
            run.redactions,
            run.error,
        ),
    )
    seq = conn.execute("SELECT COUNT(*) FROM secret_exec_runs").fetchone()[0]
    if int(seq) > KEEP_ROWS:
        conn.execute(
            "DELETE FROM secret_exec_runs WHERE id IN (SELECT id FROM secret_exec_runs ORDER BY created_at LIMIT ?)",
            (int(seq) - KEEP_ROWS,),
        )


def update(conn: Connection, run_id: str, **fields: Any) -> None:
    if "truncated" in fields:
        fields["truncated"] = int(fields["truncated"])
    sets = ", ".join(f"{k} = ?" for k in fields)
    conn.execute(f"UPDATE secret_exec_runs SET {sets} WHERE id = ?", (*fields.values(), run_id))


def get(conn: Connection, run_id: str) -> ExecRun | None:
    row = conn.execute(f"SELECT {_COLUMNS} FROM secret_exec_runs WHERE id = ?", (run_id,)).fetchone()
    if row is None:
        return None
    return ExecRun(
        id=row[0],
        status=row[1],
        command=json.loads(row[2]),
        secrets=json.loads(row[3]),
        actor=row[4],
        origin=row[5],
        created_at=row[6],
        started_at=row[7],
        finished_at=row[8],
        exit_code=row[9],
        stdout=row[10],
        stderr=row[11],
        truncated=bool(row[12]),
        redactions=int(row[13]),
        error=row[14],
    )


def interrupt_unfinished(conn: Connection, at: str) -> int:
    """Runs the daemon had queued or started when it stopped: marked, never silently left running."""
    cur = conn.execute(
        "UPDATE secret_exec_runs SET status = 'interrupted', finished_at = ?, "
        "error = 'the daemon stopped before this run finished' "
        "WHERE origin = 'daemon' AND status IN ('queued', 'running')",
        (at,),
    )
    return int(cur.rowcount or 0)
