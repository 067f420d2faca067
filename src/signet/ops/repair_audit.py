"""The repair audit trail: who asked for which repair, when, and what came of it.

One row per repair asked for: run (``ok``: it changed something, ``noop``: nothing to do),
``failed`` (it raised) or ``refused`` by the gate (with why and when to retry). The table is
``repair_audit`` (migration 14, signet.store.schema_repair); it keeps the newest
:data:`KEEP_ROWS` rows, so a caller hammering a refused repair cannot grow it without bound.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from signet.store.records import now_iso
from signet.store.sqlite import Connection

KEEP_ROWS = 10_000

Outcome = str
"""``ok``, ``noop``, ``failed`` or ``refused``."""


@dataclass(frozen=True)
class AuditEntry:
    id: int
    at: str
    action: str
    actor: str
    actor_type: str
    outcome: str
    details: dict[str, Any]


def record(
    conn: Connection, action: str, actor: str, actor_type: str, outcome: Outcome, details: dict[str, Any]
) -> int:
    """Append one row (and trim the oldest beyond :data:`KEEP_ROWS`); returns its id."""
    # RETURNING, not cursor.lastrowid: PostgreSQL's driver has no lastrowid (docs/team.md)
    row = conn.execute(
        "INSERT INTO repair_audit(at, action, actor, actor_type, outcome, details) VALUES (?, ?, ?, ?, ?, ?) "
        "RETURNING id",
        (now_iso(), action, actor[:200], actor_type, outcome, json.dumps(details, sort_keys=True, default=str)),
    ).fetchone()
    rid = int(row[0])
    if rid > KEEP_ROWS and rid % 100 == 0:  # amortised: one trim per 100 rows
        conn.execute("DELETE FROM repair_audit WHERE id <= ?", (rid - KEEP_ROWS,))
    return rid


def entries(
    conn: Connection,
    *,
    limit: int = 50,
    action: str | None = None,
    outcome: str | None = None,
    actor_type: str | None = None,
    since: str | None = None,
) -> list[AuditEntry]:
    """Newest first, filtered."""
    clauses, params = [], []
    for col, val in (("action", action), ("outcome", outcome), ("actor_type", actor_type)):
        if val is not None:
            clauses.append(f"{col} = ?")
            params.append(val)
    if since is not None:
        clauses.append("at >= ?")
        params.append(since)
    where = " AND ".join(clauses) or "1=1"
    rows = conn.execute(
        f"SELECT id, at, action, actor, actor_type, outcome, details FROM repair_audit WHERE {where}"
        " ORDER BY id DESC LIMIT ?",
        (*params, limit),
    ).fetchall()
    out = []
    for r in rows:
        try:
            details = json.loads(r["details"])
        except ValueError:
            details = {"unparseable": str(r["details"])[:500]}
        out.append(
            AuditEntry(
                int(r["id"]),
                str(r["at"]),
                str(r["action"]),
                str(r["actor"]),
                str(r["actor_type"]),
                str(r["outcome"]),
                details if isinstance(details, dict) else {"value": details},
            )
        )
    return out
