"""Migration 3: the LLM call log (one outcome row per provider call) and the queue indexes
the lease and dedup queries need."""

from __future__ import annotations

PIPELINE_SCHEMA = """
CREATE TABLE IF NOT EXISTS llm_calls (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    provider TEXT NOT NULL,
    model TEXT NOT NULL,
    purpose TEXT NOT NULL,
    outcome TEXT NOT NULL,
    latency_ms REAL NOT NULL,
    error TEXT,
    job_id TEXT,
    created_at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS idx_llm_calls_created ON llm_calls(created_at);
CREATE INDEX IF NOT EXISTS idx_jobs_lease ON memory_jobs(status, attempts, created_at);
CREATE INDEX IF NOT EXISTS idx_jobs_type_memory ON memory_jobs(memory_id, job_type, status);
"""
