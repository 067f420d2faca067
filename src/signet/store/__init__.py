"""Persistence: one writer thread, reads on their own connections, numbered migrations."""
