"""Secret exec runs (migration 17): one row per command run with secrets, the audit trail and
the job a caller polls (``GET /api/secrets/exec/{job_id}``).

Its own table, not ``repair_audit``: a run has a life (queued, running, finished) and output
to keep, which an append-only audit row has not. The secret *values* are never written here:
``secrets`` holds names, ``command``, ``stdout`` and ``stderr`` are stored redacted
(signet.secrets.redact), so the row can be shown to anyone allowed to see the run.
"""

from __future__ import annotations

SECRETS_SCHEMA = """
CREATE TABLE IF NOT EXISTS secret_exec_runs (
    id TEXT PRIMARY KEY,
    created_at TEXT NOT NULL,
    started_at TEXT,
    finished_at TEXT,
    actor TEXT NOT NULL,
    origin TEXT NOT NULL,
    secrets TEXT NOT NULL,
    command TEXT NOT NULL,
    status TEXT NOT NULL,
    exit_code INTEGER,
    stdout TEXT NOT NULL DEFAULT '',
    stderr TEXT NOT NULL DEFAULT '',
    truncated INTEGER NOT NULL DEFAULT 0,
    redactions INTEGER NOT NULL DEFAULT 0,
    error TEXT
);
CREATE INDEX IF NOT EXISTS idx_secret_exec_runs_created ON secret_exec_runs(created_at);
CREATE INDEX IF NOT EXISTS idx_secret_exec_runs_status ON secret_exec_runs(status);
"""
