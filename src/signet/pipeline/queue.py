"""The durable job queue on ``memory_jobs`` (spec 001 "Job Queue", 004 "Job Queue").

Lifecycle: ``pending`` -> ``leased`` -> ``completed``; a failure goes back to ``pending``
while attempts remain, else to ``dead``. A job that needs an LLM which is not there (none
configured, unreachable) or whose budget is spent waits as ``waiting_for_provider`` /
``waiting_for_budget`` (:func:`park`, :func:`wait`) and goes back to ``pending`` when it
can run (:func:`unpark`): waiting never spends an attempt, so it never leads to ``dead``. Every function here takes a connection and is
meant to run inside ``db.write`` (or, for the stats, ``db.read``): they are short SQL
statements and never wait on anything else.

Leasing is one ``UPDATE … WHERE id = (SELECT …) AND status = 'pending' RETURNING *``
statement. SQLite runs a write statement under the database's write lock, so two workers
(even in two processes with their own connections) cannot both move the same row out of
``pending``: the second one's sub-select no longer sees it. On PostgreSQL (several daemons,
one table) the sub-select also skips rows another transaction has locked (:func:`lease`), and a
starting daemon releases only expired leases and its own (``leased_by``: :func:`release_at_start`).
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from signet.store import locking
from signet.store.locking import skip_locked
from signet.store.records import now_iso
from signet.store.sqlite import Connection

JOB_TYPES = ("extract", "document_ingest", "hints")
WAITING_FOR_PROVIDER = "waiting_for_provider"
WAITING_FOR_BUDGET = "waiting_for_budget"
WAITING = (WAITING_FOR_PROVIDER, WAITING_FOR_BUDGET)
LIVE = ("pending", "leased", *WAITING)
STATUSES = ("pending", "leased", *WAITING, "completed", "failed", "dead")


@dataclass(frozen=True)
class Job:
    id: str
    job_type: str
    memory_id: str | None
    payload: dict[str, Any]
    attempts: int
    max_attempts: int
    leased_at: str | None

    @classmethod
    def from_row(cls, row: Any) -> Job:
        try:
            payload = json.loads(row["payload"]) if row["payload"] else {}
        except ValueError:
            payload = {"_unparseable": str(row["payload"])[:200]}
        return cls(
            id=row["id"],
            job_type=row["job_type"],
            memory_id=row["memory_id"],
            payload=payload if isinstance(payload, dict) else {"value": payload},
            attempts=int(row["attempts"]),
            max_attempts=int(row["max_attempts"]),
            leased_at=row["leased_at"],
        )


def enqueue(
    conn: Connection,
    job_type: str,
    *,
    memory_id: str | None = None,
    payload: dict[str, Any] | None = None,
    max_attempts: int = 3,
    document_id: str | None = None,
) -> tuple[str, bool]:
    """Insert a pending job; returns (job id, created).

    A job for the same target (``memory_id``, or the payload's ``session_key``) and type
    that is still pending or leased is reused instead (spec: duplicates are dropped).
    """
    if job_type not in JOB_TYPES:
        raise ValueError(f"unknown job type {job_type!r}")
    payload = payload or {}
    existing = None
    live = "('pending', 'leased', 'waiting_for_provider', 'waiting_for_budget')"
    if memory_id is not None:
        existing = conn.execute(
            f"SELECT id FROM memory_jobs WHERE memory_id = ? AND job_type = ? AND status IN {live}",
            (memory_id, job_type),
        ).fetchone()
    elif payload.get("session_key") is not None:
        existing = conn.execute(
            f"SELECT id FROM memory_jobs WHERE memory_id IS NULL AND job_type = ? AND status IN {live}"
            " AND json_extract(payload, '$.session_key') = ?",
            (job_type, payload["session_key"]),
        ).fetchone()
    if existing is not None:
        return str(existing[0]), False
    jid = str(uuid.uuid4())
    now = now_iso()
    conn.execute(
        "INSERT INTO memory_jobs(id, memory_id, job_type, status, payload, attempts, max_attempts, document_id,"
        " created_at, updated_at) VALUES (?, ?, ?, 'pending', ?, 0, ?, ?, ?, ?)",
        (jid, memory_id, job_type, json.dumps(payload), max_attempts, document_id, now, now),
    )
    return jid, True


def release_at_start(conn: Connection, lease_timeout_ms: int, owner: str) -> int:
    """What a starting daemon releases (signet.store.locking.release_at_start)."""
    return locking.release_at_start(conn, reap_stale, lease_timeout_ms, owner)


def lease(conn: Connection, job_types: tuple[str, ...] = JOB_TYPES, owner: str | None = None) -> Job | None:
    """Atomically take the oldest pending job with attempts left (status leased, attempts+1),
    recording who took it (``owner``: :func:`release_at_start`).

    On PostgreSQL the candidate is locked with ``FOR UPDATE SKIP LOCKED`` (signet.store.locking):
    several daemons lease at once in READ COMMITTED, and two plain sub-selects would pick the
    same oldest row, the second ``UPDATE`` wait for the first's row lock and then find it no
    longer pending, leasing nothing though other jobs wait. Skipping rows another transaction
    holds gives each worker a different job; the outer ``status = 'pending'`` still makes a
    job leased at most once."""
    now = now_iso()
    marks = ",".join("?" for _ in job_types)
    row = conn.execute(
        "UPDATE memory_jobs SET status = 'leased', attempts = attempts + 1, leased_at = ?, leased_by = ?,"
        " updated_at = ? WHERE id = (SELECT id FROM memory_jobs WHERE status = 'pending' AND attempts < max_attempts"
        f" AND job_type IN ({marks}) ORDER BY created_at, rowid LIMIT 1{skip_locked(conn)}) AND status = 'pending'"
        " RETURNING *",
        (now, owner, now, *job_types),
    ).fetchone()
    return Job.from_row(row) if row is not None else None


def heartbeat(conn: Connection, job_id: str) -> bool:
    """Renew a lease (``leased_at = now``) so a long job is not taken for a dead worker's."""
    now = now_iso()
    cur = conn.execute(
        "UPDATE memory_jobs SET leased_at = ?, updated_at = ? WHERE id = ? AND status = 'leased'", (now, now, job_id)
    )
    return bool(cur.rowcount)


def complete(conn: Connection, job_id: str, result: dict[str, Any], *, attempt: int | None = None) -> bool:
    """Mark a leased job completed; False when the lease was lost.

    ``attempt`` is the ``attempts`` value the caller's lease returned. It fences off a worker
    whose lease expired: the reaper put the job back and another worker leased it again
    (``attempts + 1``), so the job is ``leased`` again but no longer by this caller, and only
    the current holder may complete it. Without ``attempt`` any lease is accepted.
    """
    now = now_iso()
    cur = conn.execute(
        "UPDATE memory_jobs SET status = 'completed', result = ?, completed_at = ?, updated_at = ?, error = NULL"
        " WHERE id = ? AND status = 'leased' AND (? IS NULL OR attempts = ?)",
        (json.dumps(result, sort_keys=True), now, now, job_id, attempt, attempt),
    )
    return bool(cur.rowcount)


def fail(
    conn: Connection, job_id: str, error: str, *, permanent: bool = False, attempt: int | None = None
) -> str | None:
    """Record a failure: back to ``pending`` while attempts remain, else ``dead``.

    ``permanent`` errors (a job that can never succeed, e.g. its memory is gone) go to
    ``dead`` at once. Returns the new status, or None when the job was not leased (by the
    caller's lease, when ``attempt`` is given: see :func:`complete`).
    """
    now = now_iso()
    row = conn.execute("SELECT attempts, max_attempts, status FROM memory_jobs WHERE id = ?", (job_id,)).fetchone()
    if row is None or row["status"] != "leased" or (attempt is not None and int(row["attempts"]) != attempt):
        return None
    status = "dead" if permanent or int(row["attempts"]) >= int(row["max_attempts"]) else "pending"
    conn.execute(
        "UPDATE memory_jobs SET status = ?, error = ?, failed_at = ?, updated_at = ?, leased_at = NULL WHERE id = ?",
        (status, error[:2000], now, now, job_id),
    )
    return status


def park(conn: Connection, job_types: tuple[str, ...], status: str) -> int:
    """Every pending job of these types waits as ``status`` (a provider or a budget is missing)."""
    if status not in WAITING:
        raise ValueError(f"not a waiting status: {status!r}")
    marks = ",".join("?" for _ in job_types)
    return int(
        conn.execute(
            f"UPDATE memory_jobs SET status = ?, updated_at = ? WHERE status = 'pending' AND job_type IN ({marks})",
            (status, now_iso(), *job_types),
        ).rowcount
    )


def unpark(conn: Connection, job_types: tuple[str, ...]) -> int:
    """Waiting jobs of these types are pending again: the provider (and its budget) can take them."""
    marks = ",".join("?" for _ in job_types)
    return int(
        conn.execute(
            "UPDATE memory_jobs SET status = 'pending', updated_at = ?"
            f" WHERE status IN ('waiting_for_provider', 'waiting_for_budget') AND job_type IN ({marks})",
            (now_iso(), *job_types),
        ).rowcount
    )


def wait(conn: Connection, job_id: str, status: str, reason: str, *, attempt: int | None = None) -> bool:
    """A leased job whose LLM call could not be made (provider gone, budget spent) waits as
    ``status``; False when the lease was lost (see :func:`complete`).

    The attempt its lease took is given back by raising ``max_attempts`` by one rather than by
    lowering ``attempts``: the attempt number fences completions, so it only ever grows (as in
    :func:`requeue_dead`)."""
    if status not in WAITING:
        raise ValueError(f"not a waiting status: {status!r}")
    now = now_iso()
    cur = conn.execute(
        "UPDATE memory_jobs SET status = ?, max_attempts = max_attempts + 1, error = ?, leased_at = NULL,"
        " updated_at = ? WHERE id = ? AND status = 'leased' AND (? IS NULL OR attempts = ?)",
        (status, reason[:2000], now, job_id, attempt, attempt),
    )
    return bool(cur.rowcount)


def reap_stale(conn: Connection, lease_timeout_ms: int, *, owner: str | None = None) -> int:
    """Release leases older than the timeout (a worker died mid-job) back to ``pending``; with
    ``owner``, only the leases it took.

    A job whose attempts are used up goes to ``dead`` instead, so a job that kills its
    worker every time cannot loop forever.
    """
    cut = (datetime.now(UTC) - timedelta(milliseconds=lease_timeout_ms)).isoformat(timespec="microseconds")
    now = now_iso()
    dead = conn.execute(
        "UPDATE memory_jobs SET status = 'dead', error = COALESCE(error, 'lease expired on the last attempt'),"
        " failed_at = ?, updated_at = ?, leased_at = NULL"
        " WHERE status = 'leased' AND leased_at < ? AND attempts >= max_attempts AND (? IS NULL OR leased_by = ?)",
        (now, now, cut, owner, owner),
    ).rowcount
    released = conn.execute(
        "UPDATE memory_jobs SET status = 'pending', leased_at = NULL, updated_at = ?,"
        " error = COALESCE(error, 'lease expired')"
        " WHERE status = 'leased' AND leased_at < ? AND (? IS NULL OR leased_by = ?)",
        (now, cut, owner, owner),
    ).rowcount
    return int(dead) + int(released)


def release_leases(conn: Connection, lease_timeout_ms: int) -> int:
    """Operator action (``POST /api/repair/release-leases``): same as the reaper, now."""
    return reap_stale(conn, lease_timeout_ms)


def requeue_dead(conn: Connection, *, limit: int = 50, job_id: str | None = None) -> list[str]:
    """Dead jobs back to ``pending`` with a fresh budget of attempts (at most ``limit`` per call).

    ``attempts`` keeps counting (the budget is added to ``max_attempts`` instead of resetting
    ``attempts`` to 0): the attempt number fences completions (:func:`complete`), and a reset
    would let a worker still holding a lease from before the job died match a new lease's
    number and complete it.
    """
    if job_id is not None:
        ids = [r[0] for r in conn.execute("SELECT id FROM memory_jobs WHERE id = ? AND status = 'dead'", (job_id,))]
    else:
        ids = [
            r[0]
            for r in conn.execute(
                "SELECT id FROM memory_jobs WHERE status = 'dead' ORDER BY failed_at, rowid LIMIT ?", (limit,)
            )
        ]
    now = now_iso()
    for jid in ids:
        conn.execute(
            "UPDATE memory_jobs SET status = 'pending', max_attempts = attempts + max_attempts, leased_at = NULL,"
            " updated_at = ? WHERE id = ?",
            (now, jid),
        )
    return [str(i) for i in ids]


def stats(conn: Connection) -> dict[str, Any]:
    """Depth by status and by type, oldest pending, dead count: for ``/api/pipeline/status``."""
    by_status = {s: 0 for s in STATUSES}
    by_type: dict[str, dict[str, int]] = {}
    for r in conn.execute("SELECT job_type, status, COUNT(*) FROM memory_jobs GROUP BY job_type, status"):
        by_status[r[1]] = by_status.get(r[1], 0) + int(r[2])
        by_type.setdefault(r[0], {})[r[1]] = int(r[2])
    oldest = conn.execute("SELECT MIN(created_at) FROM memory_jobs WHERE status = 'pending'").fetchone()[0]
    age = None
    if oldest is not None:
        age = round((datetime.now(UTC) - datetime.fromisoformat(oldest)).total_seconds(), 3)
    last_error = conn.execute(
        "SELECT error FROM memory_jobs WHERE error IS NOT NULL AND status IN ('pending', 'dead')"
        " ORDER BY updated_at DESC LIMIT 1"
    ).fetchone()
    return {
        "by_status": by_status,
        "by_type": by_type,
        "oldest_pending": oldest,
        "oldest_pending_age_s": age,
        "waiting": sum(by_status.get(w, 0) for w in WAITING),
        "dead": by_status.get("dead", 0),
        "last_error": last_error[0] if last_error else None,
    }


def list_jobs(
    conn: Connection,
    *,
    status: str | None = None,
    job_type: str | None = None,
    memory_id: str | None = None,
    limit: int = 50,
    offset: int = 0,
) -> tuple[int, list[Any]]:
    """(total matching, one page of rows newest first) for ``GET /api/pipeline/jobs``."""
    clauses, params = [], []
    for col, val in (("status", status), ("job_type", job_type), ("memory_id", memory_id)):
        if val is not None:
            clauses.append(f"{col} = ?")
            params.append(val)
    where = " AND ".join(clauses) or "1=1"
    total = conn.execute(f"SELECT COUNT(*) FROM memory_jobs WHERE {where}", params).fetchone()[0]
    rows = list(
        conn.execute(
            f"SELECT * FROM memory_jobs WHERE {where} ORDER BY created_at DESC, rowid DESC LIMIT ? OFFSET ?",
            (*params, limit, offset),
        )
    )
    return int(total), rows


def get_job(conn: Connection, job_id: str) -> Any:
    """The job's row, or None."""
    return conn.execute("SELECT * FROM memory_jobs WHERE id = ?", (job_id,)).fetchone()
