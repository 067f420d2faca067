"""Migration 13: the local telemetry event log and the opt-in recall QA ledger (signet.ops.telemetry,
signet.ops.search_ledger).

``telemetry_events`` holds counts and timings only (an event name and a JSON object of allowed
properties, never prompts or memory content); it is bounded by ``maxEvents`` and
``retentionDays``. ``memory_search_telemetry`` is the spec's recall QA ledger (migration 066
there): it stores query text and result snapshots, so it is written only when
``memory.pipelineV2.telemetry.memorySearchQaEnabled`` is on. The table exists either way (an
empty table costs nothing and keeps the schema one shape)."""

TELEMETRY_SCHEMA = """
CREATE TABLE IF NOT EXISTS telemetry_events (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    event TEXT NOT NULL,
    at TEXT NOT NULL,
    properties TEXT NOT NULL DEFAULT '{}'
);
CREATE INDEX IF NOT EXISTS idx_telemetry_events_at ON telemetry_events(at);
CREATE INDEX IF NOT EXISTS idx_telemetry_events_event ON telemetry_events(event, at);
CREATE TABLE IF NOT EXISTS memory_search_telemetry (
    id TEXT PRIMARY KEY,
    created_at TEXT NOT NULL,
    route TEXT NOT NULL,
    agent_id TEXT,
    session_key TEXT,
    project TEXT,
    query TEXT NOT NULL,
    keyword_query TEXT,
    filters_json TEXT NOT NULL DEFAULT '{}',
    method TEXT NOT NULL,
    result_count INTEGER NOT NULL,
    top_score REAL,
    no_hits INTEGER NOT NULL,
    duration_ms REAL NOT NULL,
    timings_json TEXT NOT NULL DEFAULT '{}',
    results_json TEXT NOT NULL DEFAULT '[]',
    sources_json TEXT NOT NULL DEFAULT '{}'
);
CREATE INDEX IF NOT EXISTS idx_memory_search_telemetry_created ON memory_search_telemetry(created_at);
CREATE INDEX IF NOT EXISTS idx_memory_search_telemetry_agent ON memory_search_telemetry(agent_id, created_at);
"""
