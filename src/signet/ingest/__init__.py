"""Transcript ingestion: adapters that turn a harness's session files (or plain notes) into
user/assistant turns, and the ``signet ingest`` pipeline that stores them once.

Adapters are plugins (``register_transcript_adapters``); they use only the standard
library, so the hook command can parse a transcript without loading the daemon's stack.
"""
