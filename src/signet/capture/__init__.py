"""Live transcript capture: follow harness session files as they grow (docs/harnesses.md)."""
