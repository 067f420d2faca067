"""Migration 34: which daemon runs a task run (``task_runs.runner``).

A daemon starting or stopping marks the runs it finds ``running`` as interrupted: on SQLite
they can only be its own previous run's. On PostgreSQL several daemons share the scheduler's
tables, and before this column a starting daemon marked another daemon's live runs as
interrupted (and a stopping one did the same), while a run on one daemon did not keep another
from starting the same task. ``runner`` is the store node of the daemon running it
(signet.store.liveness tells whether that daemon is still there).
"""

from __future__ import annotations

TASK_RUNNER_SCHEMA = """
ALTER TABLE task_runs ADD COLUMN runner TEXT;
"""

PG_TASK_RUNNER_SCHEMA = """
ALTER TABLE "task_runs" ADD COLUMN "runner" TEXT;
"""
