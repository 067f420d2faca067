"""Fixed texts the hooks hand to agents (stdlib only: the hook command uses them offline)."""

PRE_COMPACTION = (
    "Before compacting, keep in the summary: decisions made and why, the user's stated preferences, "
    "open tasks and their next step, file paths and commands that matter, and errors still unresolved. "
    "Drop tool output and dead ends. Anything worth keeping across sessions can be saved with "
    '`signet remember "..."` (or the memory_store tool).'
)

DAEMON_DOWN = (
    "Signet daemon is not reachable at {address}: only the identity files are loaded, no memories. "
    "Start it with `signet start`."
)
