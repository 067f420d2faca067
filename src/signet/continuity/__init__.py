"""Session continuity: session summaries as files, MEMORY.md synthesis, checkpoints and
continuity scores (docs/pipeline.md, docs/harnesses.md)."""
