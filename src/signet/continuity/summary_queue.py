"""The ``summary_jobs`` queue (spec 001): one job per session end or compaction.

Lifecycle: ``pending`` -> ``leased`` -> ``completed``. A job whose LLM answered badly goes back
to ``pending`` while attempts remain, else ``dead``. A job that found no LLM (none configured,
or it did not answer) is ``waiting_for_provider``: that attempt is not counted, so a missing
provider never kills a job; it is tried again after ``not_before``, and at once when a
provider is configured. Every function runs inside the caller's ``db.write``/``db.read``.
"""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

from signet.store import locking
from signet.store.locking import skip_locked
from signet.store.records import now_iso
from signet.store.sqlite import Connection

TRIGGERS = ("session_end", "compaction")
WAITING = ("waiting_for_provider", "waiting_for_budget")
OPEN = ("pending", "leased", *WAITING)
STATUSES = ("pending", "leased", *WAITING, "completed", "dead")


def enqueue(
    conn: Connection,
    *,
    session_key: str,
    session_id: str | None,
    harness: str,
    project: str | None,
    agent_id: str,
    trigger: str,
    started_at: str | None = None,
    ended_at: str | None = None,
    turns: int | None = None,
    max_attempts: int = 3,
) -> tuple[str, bool]:
    """Queue a summary; an open job for the same session and trigger is reused (its end moves).

    A session end sent again with the same number of turns (a retried hook) reuses the job that
    already summarized them, done or not: no second summary file for the same session."""
    if trigger not in TRIGGERS:
        raise ValueError(f"unknown summary trigger {trigger!r}")
    now = now_iso()
    if turns is not None:
        same = conn.execute(
            "SELECT id FROM summary_jobs WHERE session_key = ? AND trigger = ? AND turns = ?"
            " AND status != 'dead' ORDER BY created_at DESC LIMIT 1",
            (session_key, trigger, turns),
        ).fetchone()
        if same is not None:
            return str(same[0]), False
    row = conn.execute(
        "SELECT id FROM summary_jobs WHERE session_key = ? AND trigger = ? AND status IN ('pending',"
        " 'waiting_for_provider', 'waiting_for_budget')",
        (session_key, trigger),
    ).fetchone()
    if row is not None:
        conn.execute(
            "UPDATE summary_jobs SET ended_at = COALESCE(?, ended_at), turns = COALESCE(?, turns), updated_at = ?"
            " WHERE id = ?",
            (ended_at, turns, now, row[0]),
        )
        return str(row[0]), False
    jid = str(uuid.uuid4())
    conn.execute(
        "INSERT INTO summary_jobs(id, session_key, session_id, harness, project, agent_id, trigger, turns, status,"
        " max_attempts, captured_at, started_at, ended_at, created_at, updated_at)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'pending', ?, ?, ?, ?, ?, ?)",
        (jid, session_key, session_id, harness, project, agent_id, trigger, turns, max_attempts, now, started_at,
         ended_at, now, now),
    )  # fmt: skip
    return jid, True


def lease(conn: Connection, owner: str | None = None) -> Any:
    """Take the oldest runnable job (pending, or waiting whose ``not_before`` has passed), recording
    who took it (``owner``: signet.pipeline.queue.release_at_start)."""
    now = now_iso()
    return conn.execute(
        "UPDATE summary_jobs SET status = 'leased', attempts = attempts + 1, leased_at = ?, leased_by = ?,"
        " updated_at = ?"
        " WHERE id = (SELECT id FROM summary_jobs WHERE (status = 'pending' AND attempts < max_attempts)"
        " OR (status IN ('waiting_for_provider', 'waiting_for_budget') AND (not_before IS NULL OR not_before <= ?))"
        f" ORDER BY created_at, rowid LIMIT 1{skip_locked(conn)})"
        " AND status != 'leased' AND status != 'completed' AND status != 'dead'"
        " RETURNING *",
        (now, owner, now, now),
    ).fetchone()


def complete(conn: Connection, job_id: str, attempt: int, result: dict[str, Any]) -> bool:
    now = now_iso()
    cur = conn.execute(
        "UPDATE summary_jobs SET status = 'completed', result = ?, error = NULL, completed_at = ?, updated_at = ?,"
        " leased_at = NULL WHERE id = ? AND status = 'leased' AND attempts = ?",
        (json.dumps(result, sort_keys=True), now, now, job_id, attempt),
    )
    return bool(cur.rowcount)


def fail(
    conn: Connection,
    job_id: str,
    attempt: int,
    error: str,
    *,
    wait_s: float | None = None,
    waiting: str = "waiting_for_provider",
) -> str | None:
    """Record a failed run. ``wait_s``: no provider answered (or its budget refused the call);
    the job waits that long as ``waiting``, the attempt uncounted. Otherwise ``pending`` while
    attempts remain, else ``dead``."""
    now = now_iso()
    row = conn.execute("SELECT attempts, max_attempts, status FROM summary_jobs WHERE id = ?", (job_id,)).fetchone()
    if row is None or row["status"] != "leased" or int(row["attempts"]) != attempt:
        return None
    if wait_s is not None:
        until = (datetime.now(UTC) + timedelta(seconds=wait_s)).isoformat(timespec="microseconds")
        conn.execute(
            "UPDATE summary_jobs SET status = ?, attempts = attempts - 1, error = ?,"
            " not_before = ?, leased_at = NULL, updated_at = ? WHERE id = ?",
            (waiting if waiting in WAITING else WAITING[0], error[:2000], until, now, job_id),
        )
        return waiting
    status = "dead" if int(row["attempts"]) >= int(row["max_attempts"]) else "pending"
    conn.execute(
        "UPDATE summary_jobs SET status = ?, error = ?, leased_at = NULL, updated_at = ? WHERE id = ?",
        (status, error[:2000], now, job_id),
    )
    return status


def has_pending(conn: Connection) -> bool:
    return conn.execute("SELECT 1 FROM summary_jobs WHERE status = 'pending' LIMIT 1").fetchone() is not None


def park(conn: Connection, reason: str, status: str = "waiting_for_provider") -> int:
    """No call may be made (no provider, unreachable, budget spent): every pending job waits as
    ``status``, with the reason (status shows it)."""
    return int(
        conn.execute(
            "UPDATE summary_jobs SET status = ?, error = ?, not_before = NULL, updated_at = ? WHERE status = 'pending'",
            (status if status in WAITING else WAITING[0], reason[:2000], now_iso()),
        ).rowcount
    )


def release(conn: Connection, lease_timeout_ms: int, *, owner: str | None = None) -> int:
    """Leases older than the timeout (a worker died mid-job) back to ``pending``; with ``owner``,
    only the leases it took. The attempt counts: a job that kills its worker every time goes
    ``dead``, not round forever."""
    cut = (datetime.now(UTC) - timedelta(milliseconds=lease_timeout_ms)).isoformat(timespec="microseconds")
    now = now_iso()
    dead = conn.execute(
        "UPDATE summary_jobs SET status = 'dead', error = COALESCE(error, 'lease expired on the last attempt'),"
        " leased_at = NULL, updated_at = ? WHERE status = 'leased' AND leased_at <= ? AND attempts >= max_attempts"
        " AND (? IS NULL OR leased_by = ?)",
        (now, cut, owner, owner),
    ).rowcount
    back = conn.execute(
        "UPDATE summary_jobs SET status = 'pending', leased_at = NULL, updated_at = ?"
        " WHERE status = 'leased' AND leased_at <= ? AND (? IS NULL OR leased_by = ?)",
        (now, cut, owner, owner),
    ).rowcount
    return int(dead) + int(back)


def release_at_start(conn: Connection, lease_timeout_ms: int, owner: str) -> int:
    """What a starting daemon releases (signet.store.locking.release_at_start)."""
    return locking.release_at_start(conn, release, lease_timeout_ms, owner)


def stats(conn: Connection) -> dict[str, Any]:
    counts = {s: 0 for s in STATUSES}
    for r in conn.execute("SELECT status, COUNT(*) FROM summary_jobs GROUP BY status"):
        counts[str(r[0])] = int(r[1])
    last = conn.execute(
        "SELECT error FROM summary_jobs WHERE error IS NOT NULL AND status IN ('waiting_for_provider',"
        " 'waiting_for_budget', 'pending', 'dead') ORDER BY updated_at DESC LIMIT 1"
    ).fetchone()
    return {"by_status": counts, "last_error": last[0] if last else None}


def requeue_dead(conn: Connection, *, limit: int = 50, job_id: str | None = None) -> list[str]:
    """Dead summary jobs back to ``pending`` with a fresh budget of attempts (``signet pipeline
    requeue``), as the extraction queue does (signet.pipeline.queue.requeue_dead): ``attempts``
    keeps counting, since it fences a late completion from a lease taken before the job died."""
    if job_id is not None:
        rows = conn.execute("SELECT id FROM summary_jobs WHERE id = ? AND status = 'dead'", (job_id,))
    else:
        rows = conn.execute(
            "SELECT id FROM summary_jobs WHERE status = 'dead' ORDER BY updated_at, rowid LIMIT ?", (limit,)
        )
    ids = [str(r[0]) for r in rows]
    now = now_iso()
    for jid in ids:
        conn.execute(
            "UPDATE summary_jobs SET status = 'pending', max_attempts = attempts + max_attempts, leased_at = NULL,"
            " updated_at = ? WHERE id = ?",
            (now, jid),
        )
    return ids


def get_job(conn: Connection, job_id: str) -> Any:
    return conn.execute("SELECT * FROM summary_jobs WHERE id = ?", (job_id,)).fetchone()
