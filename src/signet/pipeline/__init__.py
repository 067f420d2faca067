"""Pipeline V2: the durable job queue, LLM providers, extraction, decisions and graph writes.

:class:`signet.pipeline.runtime.Pipeline` is built by the composition root (signet.runtime).
"""
