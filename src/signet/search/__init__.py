"""Retrieval: FTS5 keyword search, the in-memory vector index, and their fusion."""
