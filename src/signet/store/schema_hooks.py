"""Migration 4: harness sessions, lossless transcript turns, injected-memory log, handoffs,
and the ingest ledger.
"""

from __future__ import annotations

HOOKS_SCHEMA = """
CREATE TABLE IF NOT EXISTS hook_sessions (
    session_key TEXT PRIMARY KEY,
    harness TEXT NOT NULL,
    project TEXT,
    agent_id TEXT NOT NULL DEFAULT 'default',
    turn INTEGER NOT NULL DEFAULT 0,
    started_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);

CREATE TABLE IF NOT EXISTS hook_injections (
    session_key TEXT NOT NULL,
    memory_id TEXT NOT NULL,
    turn INTEGER NOT NULL,
    event TEXT NOT NULL,
    injected_at TEXT NOT NULL,
    PRIMARY KEY (session_key, memory_id)
);

CREATE TABLE IF NOT EXISTS transcript_turns (
    session_key TEXT NOT NULL,
    turn_index INTEGER NOT NULL,
    role TEXT NOT NULL,
    content TEXT NOT NULL,
    created_at TEXT,
    PRIMARY KEY (session_key, turn_index)
);
CREATE INDEX IF NOT EXISTS idx_transcript_turns_created ON transcript_turns(created_at);

CREATE TABLE IF NOT EXISTS session_handoffs (
    id TEXT PRIMARY KEY,
    session_key TEXT NOT NULL UNIQUE,
    harness TEXT NOT NULL,
    project TEXT,
    agent_id TEXT NOT NULL DEFAULT 'default',
    kind TEXT NOT NULL,
    content TEXT NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS idx_handoffs_project ON session_handoffs(project, created_at);

CREATE TABLE IF NOT EXISTS ingested_files (
    content_hash TEXT PRIMARY KEY,
    path TEXT NOT NULL,
    adapter TEXT NOT NULL,
    session_key TEXT NOT NULL,
    turns INTEGER NOT NULL,
    ingested_at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS idx_ingested_path ON ingested_files(path);
"""
