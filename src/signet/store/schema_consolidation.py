"""Migration 24: consolidation runs and provenance (docs/lifecycle.md, Consolidation).

A run records its plan exactly as it was applied (``plan``, JSON), so the run *is* the list
of changes it made: what undo walks, and what a dry-run is compared with (``created``: the
ids the merged memories got when it was applied). A dry-run is a run
in state ``planned``; applying it changes its state, never its plan. ``memory_sources`` links a
memory written by consolidation (an LLM merge) to each memory it was made from; the links
stay after an undo (the history of what was tried), the run then says ``undone``.
"""

CONSOLIDATION_SCHEMA = """
CREATE TABLE IF NOT EXISTS consolidation_runs (
    id TEXT PRIMARY KEY,
    status TEXT NOT NULL CHECK (status IN ('planned', 'applied', 'undone')),
    trigger TEXT NOT NULL,
    actor TEXT NOT NULL,
    agent_scope TEXT,
    plan TEXT NOT NULL,
    tier2 TEXT NOT NULL,
    created TEXT NOT NULL DEFAULT '{}',
    created_at TEXT NOT NULL,
    applied_at TEXT,
    undone_at TEXT,
    undone_by TEXT
);
CREATE INDEX IF NOT EXISTS idx_consolidation_runs_created ON consolidation_runs(created_at);
CREATE TABLE IF NOT EXISTS memory_sources (
    memory_id TEXT NOT NULL,
    source_id TEXT NOT NULL,
    run_id TEXT NOT NULL,
    created_at TEXT NOT NULL,
    PRIMARY KEY (memory_id, source_id)
);
CREATE INDEX IF NOT EXISTS idx_memory_sources_source ON memory_sources(source_id);
"""
