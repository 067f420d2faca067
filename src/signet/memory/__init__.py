"""Memory semantics: content rules, the service every surface calls, decay."""
