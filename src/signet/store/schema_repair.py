"""The repair audit trail (signet.ops.repair_gate): one row per repair asked for, run or refused.

Its own table, not ``memory_history``: the spec writes repair events there under
``memory_id = 'system'``, which mixes daemon bookkeeping into every memory's history and makes
"what did the maintenance worker do this week" a scan of the whole history.
"""

from __future__ import annotations

REPAIR_AUDIT_SCHEMA = """
CREATE TABLE IF NOT EXISTS repair_audit (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    at TEXT NOT NULL,
    action TEXT NOT NULL,
    actor TEXT NOT NULL,
    actor_type TEXT NOT NULL,
    outcome TEXT NOT NULL,
    details TEXT NOT NULL DEFAULT '{}'
);
CREATE INDEX IF NOT EXISTS idx_repair_audit_at ON repair_audit(at);
CREATE INDEX IF NOT EXISTS idx_repair_audit_action ON repair_audit(action, at);
"""
