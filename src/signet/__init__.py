"""Signet: a local-first memory layer for AI agents.

The flow, from the outside in::

    harness hooks / CLI / MCP / SDK  ->  HTTP daemon  ->  MemoryService  ->  store + search + pipeline

Importing this package is cheap on purpose: hooks import it on every prompt, so nothing
here touches the database, the network or the embedding model stack.
"""

__version__ = "0.1.0"

__all__ = ["__version__"]
