"""Migration 22: signal watermarks (docs/lifecycle.md, Signals).

One row per consumer (a harness session, or any name a client picks): the ``seq`` of the last
memory delivered to it. Signals are the memories above the importance threshold with a higher
``seq``; delivering them advances the row in the same transaction, so each is delivered once.
"""

SIGNALS_SCHEMA = """
CREATE TABLE IF NOT EXISTS signal_watermarks (
    consumer TEXT PRIMARY KEY,
    last_seq INTEGER NOT NULL,
    delivered INTEGER NOT NULL DEFAULT 0,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
"""
