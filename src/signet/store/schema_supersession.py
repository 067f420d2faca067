"""Migration 30: when an attribute was superseded, and whether it can be.

The LLM knowledge builder (signet.pipeline.knowledge) writes attributes whose claim can change
("Alice lives in Berlin", then "Alice moved to Paris") and attributes that happened once and stay
true ("Alice visited Rome in 2022"). ``claim_type`` tells them apart: a ``state`` is superseded by
a newer value of the same claim key, an ``event`` never is. ``superseded_at`` is when a state was
superseded (``superseded_by`` already names its successor); the row itself is kept, never deleted,
so the history of a claim can be read back. The index serves the one lookup supersession does: the
agent's active attributes of a claim key.
"""

from __future__ import annotations

SUPERSESSION_SCHEMA = """
ALTER TABLE entity_attributes ADD COLUMN claim_type TEXT NOT NULL DEFAULT 'state'
    CHECK (claim_type IN ('state', 'event'));
ALTER TABLE entity_attributes ADD COLUMN superseded_at TEXT;
CREATE INDEX IF NOT EXISTS idx_entity_attributes_claim_status ON entity_attributes(agent_id, claim_key, status);
CREATE INDEX IF NOT EXISTS idx_entity_attributes_successor ON entity_attributes(superseded_by);
"""
