"""Migration 21: store-time reinforcement and the retirement ledger (docs/lifecycle.md).

``confirmations`` counts the restatements a memory absorbed (each one is a ``reinforced``
history event carrying its wording); ``last_reinforced_at`` is the latest. The ledger holds
the content hash of every memory retired with ``persist``: a write of the same text for the
same owner (agent, project) is refused, whichever path it comes through.
"""

LIFECYCLE_SCHEMA = """
ALTER TABLE memories ADD COLUMN confirmations INTEGER NOT NULL DEFAULT 0;
ALTER TABLE memories ADD COLUMN last_reinforced_at TEXT;
CREATE TABLE IF NOT EXISTS memory_retirements (
    content_hash TEXT NOT NULL,
    agent_id TEXT NOT NULL,
    project TEXT NOT NULL DEFAULT '',
    memory_id TEXT,
    content TEXT,
    reason TEXT,
    retired_by TEXT,
    retired_at TEXT NOT NULL,
    PRIMARY KEY (content_hash, agent_id, project)
);
"""
