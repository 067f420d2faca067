"""Migration 26: session continuity (spec 001 ``summary_jobs``, ``memory_artifacts``,
``memory_artifact_tombstones``, session checkpoints, continuity scores).

``summary_jobs`` is its own queue, not ``memory_jobs``: a summary is written once per session
end or compaction, has its own ``waiting_for_provider`` state and never competes with
extraction for a lease. ``memory_artifacts`` is a derived index of the summary files under
``memory/``; it can be dropped and rebuilt from them, and the tombstones keep a removed
session's history from coming back on a rebuild. ``session_scores`` is the table the
analytics continuity endpoints already read.
"""

from __future__ import annotations

CONTINUITY_SCHEMA = """
CREATE TABLE IF NOT EXISTS summary_jobs (
    id TEXT PRIMARY KEY,
    session_key TEXT NOT NULL,
    session_id TEXT,
    harness TEXT NOT NULL,
    project TEXT,
    agent_id TEXT NOT NULL DEFAULT 'default',
    trigger TEXT NOT NULL,
    turns INTEGER,
    status TEXT NOT NULL DEFAULT 'pending',
    attempts INTEGER NOT NULL DEFAULT 0,
    max_attempts INTEGER NOT NULL DEFAULT 3,
    error TEXT,
    result TEXT,
    not_before TEXT,
    captured_at TEXT NOT NULL,
    started_at TEXT,
    ended_at TEXT,
    leased_at TEXT,
    completed_at TEXT,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS idx_summary_jobs_status ON summary_jobs(status, created_at);
CREATE INDEX IF NOT EXISTS idx_summary_jobs_session ON summary_jobs(session_key);

CREATE TABLE IF NOT EXISTS memory_artifacts (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    agent_id TEXT NOT NULL DEFAULT 'default',
    source_path TEXT NOT NULL UNIQUE,
    source_sha256 TEXT NOT NULL,
    source_kind TEXT NOT NULL,
    session_id TEXT,
    session_key TEXT,
    session_token TEXT NOT NULL,
    project TEXT,
    harness TEXT,
    captured_at TEXT,
    started_at TEXT,
    ended_at TEXT,
    manifest_path TEXT,
    memory_sentence TEXT,
    memory_sentence_quality TEXT,
    content TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS idx_memory_artifacts_token ON memory_artifacts(agent_id, session_token);
CREATE INDEX IF NOT EXISTS idx_memory_artifacts_captured ON memory_artifacts(agent_id, captured_at);

CREATE TABLE IF NOT EXISTS memory_artifact_tombstones (
    agent_id TEXT NOT NULL,
    session_token TEXT NOT NULL,
    removed_at TEXT NOT NULL,
    reason TEXT,
    removed_paths TEXT NOT NULL DEFAULT '[]',
    PRIMARY KEY (agent_id, session_token)
);

CREATE TABLE IF NOT EXISTS session_checkpoints (
    id TEXT PRIMARY KEY,
    session_key TEXT NOT NULL,
    harness TEXT NOT NULL,
    project TEXT,
    agent_id TEXT NOT NULL DEFAULT 'default',
    trigger TEXT NOT NULL,
    turn INTEGER NOT NULL DEFAULT 0,
    content TEXT NOT NULL,
    state TEXT NOT NULL DEFAULT '{}',
    created_at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS idx_checkpoints_session ON session_checkpoints(session_key, created_at);
CREATE INDEX IF NOT EXISTS idx_checkpoints_project ON session_checkpoints(project, created_at);

CREATE TABLE IF NOT EXISTS session_scores (
    id TEXT PRIMARY KEY,
    session_key TEXT NOT NULL,
    project TEXT,
    harness TEXT,
    agent_id TEXT NOT NULL DEFAULT 'default',
    score REAL NOT NULL,
    memories_recalled INTEGER NOT NULL,
    memories_used INTEGER NOT NULL,
    novel_context_count INTEGER NOT NULL,
    reasoning TEXT,
    created_at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS idx_session_scores_project ON session_scores(project, created_at);
"""
