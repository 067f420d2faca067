"""Migration 5: agent ratings of recalled memories (signet.memory.feedback)."""

FEEDBACK_SCHEMA = """
CREATE TABLE IF NOT EXISTS agent_feedback (
    id TEXT PRIMARY KEY,
    memory_id TEXT NOT NULL,
    session_id TEXT NOT NULL,
    feedback_type TEXT NOT NULL CHECK (feedback_type IN ('positive', 'negative', 'correction')),
    correction_text TEXT,
    actor TEXT NOT NULL,
    agent_id TEXT NOT NULL DEFAULT 'default',
    created_at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS idx_agent_feedback_session ON agent_feedback(session_id, created_at);
CREATE INDEX IF NOT EXISTS idx_agent_feedback_memory ON agent_feedback(memory_id, created_at);
"""
