"""Installed skills' metadata (migration 20): where each came from, and how much it is used.

The spec's ``skill_meta`` (procedural memory for skills): the folder under ``skills/`` is the
truth for which skills exist; a row keeps what the folder cannot say: the source it was
installed from, how often it was used and when last, and its decay rate (signet.skills).
"""

from __future__ import annotations

SKILLS_SCHEMA = """
CREATE TABLE IF NOT EXISTS skill_meta (
    skill_name TEXT PRIMARY KEY,
    source TEXT,
    installed_at TEXT NOT NULL,
    use_count INTEGER NOT NULL DEFAULT 0,
    last_used_at TEXT,
    decay_rate REAL NOT NULL DEFAULT 0.99,
    role_classification TEXT,
    filesystem_path TEXT NOT NULL
);
"""
