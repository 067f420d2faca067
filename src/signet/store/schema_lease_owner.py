"""Migration 33: which daemon holds a job's lease (``leased_by``).

A worker that dies mid-job leaves its lease; the job must go back to ``pending`` for another
run. On SQLite a starting daemon is the store's only daemon, so every lease it finds was left by
its own previous run and it releases them all. On PostgreSQL several daemons share the queues,
and another daemon's lease looks like a dead one's: before this column a restarted daemon could
only wait for its own old leases to time out (``leaseTimeoutMs``, 5 minutes). ``leased_by`` is
the lease owner of the daemon's workspace (signet.store.choose.lease_owner: stable across
restarts), so a starting daemon releases its own leases at once and leaves the others' alone.
"""

from __future__ import annotations

LEASE_OWNER_SCHEMA = """
ALTER TABLE memory_jobs ADD COLUMN leased_by TEXT;
ALTER TABLE summary_jobs ADD COLUMN leased_by TEXT;
"""

PG_LEASE_OWNER_SCHEMA = """
ALTER TABLE "memory_jobs" ADD COLUMN "leased_by" TEXT;
ALTER TABLE "summary_jobs" ADD COLUMN "leased_by" TEXT;
"""
