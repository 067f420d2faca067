"""Migration 2 (auth + agents): the revocation list and the agent roster."""

AUTH_SCHEMA = """
CREATE TABLE IF NOT EXISTS auth_revocations (
    token_id TEXT PRIMARY KEY,
    sub TEXT,
    expires_at INTEGER NOT NULL,
    revoked_at INTEGER NOT NULL,
    reason TEXT
);
CREATE TABLE IF NOT EXISTS agents (
    name TEXT PRIMARY KEY,
    read_policy TEXT NOT NULL DEFAULT 'shared' CHECK (read_policy IN ('isolated', 'shared', 'group')),
    agent_group TEXT NOT NULL DEFAULT '[]',
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
"""
