"""Retrieval benchmarks (LoCoMo, LongMemEval) and a latency benchmark, run through the real recall path."""
