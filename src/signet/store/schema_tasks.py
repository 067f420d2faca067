"""Scheduled tasks (migration 19): the tasks and their run history (signet.tasks); migration
29: the secrets each task names."""

from __future__ import annotations

TASKS_SCHEMA = """
CREATE TABLE IF NOT EXISTS tasks (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    schedule TEXT NOT NULL,
    command TEXT NOT NULL,
    harness TEXT,
    prompt TEXT,
    cwd TEXT NOT NULL,
    timeout_s REAL,
    enabled INTEGER NOT NULL DEFAULT 1,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    next_run_at TEXT
);
CREATE TABLE IF NOT EXISTS task_runs (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    task_id TEXT NOT NULL,
    trigger TEXT NOT NULL,
    status TEXT NOT NULL,
    scheduled_for TEXT,
    started_at TEXT,
    finished_at TEXT,
    exit_code INTEGER,
    output TEXT NOT NULL DEFAULT '',
    truncated INTEGER NOT NULL DEFAULT 0,
    error TEXT
);
CREATE INDEX IF NOT EXISTS idx_task_runs_task ON task_runs(task_id, seq);
"""

TASK_SECRETS_SCHEMA = """
ALTER TABLE tasks ADD COLUMN secrets TEXT NOT NULL DEFAULT '[]';
"""
"""Migration 29: the names of the secrets a task's runs get in their environment (a JSON list;
values stay in the secret store)."""
