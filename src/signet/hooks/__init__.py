"""Session hooks: what a harness gets at session start and before each prompt, and what is
kept when a session ends.

``budget`` and ``identity`` are stdlib-only on purpose: the ``signet hook`` command imports
them to answer from the static identity files when the daemon is down, and it must start
in a few tens of milliseconds.
"""
