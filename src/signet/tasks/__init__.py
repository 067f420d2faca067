"""Scheduled tasks: commands and harness prompts (``claude -p "…"``) the daemon runs on a
cron expression or an interval, with a timeout, captured output, a run history, a live output
stream, no two runs of one task at once, and runs missed while the daemon was down reported.

* :mod:`signet.schedule` cron expressions (croniter) and intervals
* :mod:`signet.tasks.models`   the API's shapes
* :mod:`signet.tasks.rows`     the ``tasks`` and ``task_runs`` rows (migration 19)
* :mod:`signet.tasks.stream`   live output to subscribers (the SSE route)
* :mod:`signet.tasks.service`  CRUD, run now, and the scheduler thread
"""
