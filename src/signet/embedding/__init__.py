"""Embedding providers (one interface) and the background service that fills vectors in."""
