"""LLM providers behind one interface (:class:`~signet.pipeline.llm.base.LlmProvider`)."""
