"""Migration 25: LLM use per provider and clock hour, for the budgets (docs/pipeline.md).

``llm_calls`` is a diagnostic log pruned to its newest rows, so it cannot answer "how many
calls and tokens today"; this table keeps one small row per provider and UTC hour (about
9,000 rows a year per provider), which the budget reads at start and adds to after each call.
Jobs that wait for a provider or a budget need no schema change: ``memory_jobs.status`` is
free text, and ``waiting_for_provider`` is a status the queue sets and clears.
"""

from __future__ import annotations

LLM_USAGE_SCHEMA = """
CREATE TABLE IF NOT EXISTS llm_usage (
    provider TEXT NOT NULL,
    hour TEXT NOT NULL,
    calls INTEGER NOT NULL DEFAULT 0,
    tokens INTEGER NOT NULL DEFAULT 0,
    refused INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (provider, hour)
);
CREATE INDEX IF NOT EXISTS idx_jobs_waiting ON memory_jobs(job_type, created_at) WHERE status = 'waiting_for_provider';
"""
