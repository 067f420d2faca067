"""Migration 27: ``umap_cache``, the embedding map's projection cache (signet.embedding.projection).

One row per dimension count (2 or 3); ``embedding_count`` is the number of embedded live memories
when it was computed, and a request that sees another count recomputes it (spec 001's table).
"""

UMAP_CACHE_SCHEMA = """
CREATE TABLE IF NOT EXISTS umap_cache (
    id INTEGER PRIMARY KEY,
    dimensions INTEGER NOT NULL UNIQUE CHECK (dimensions IN (2, 3)),
    embedding_count INTEGER NOT NULL,
    result_json TEXT NOT NULL,
    cached_at TEXT NOT NULL
);
"""
