"""The retention sweep: purge what has outlived its window, in the spec's mandatory order.

1. graph links of expired tombstones (entity mention counts decremented, orphans removed)
2. their embeddings (unless another memory still uses the same text)
3. the tombstones themselves (the FTS trigger cleans the index) and the pipeline jobs queued
   for them (they could only fail: their memory is gone)
4. history events older than ``retention.history_days``
5. completed jobs older than ``retention.completed_job_days``
6. dead jobs older than ``retention.dead_job_days``
7. the keyword change log (signet.search.keyword_mirror) beyond its newest entries: the
   in-memory keyword index trims what it has applied, but nothing does when it is off
8. the pages all that freed go back to the file system: the keyword indexes merge away a bounded
   part of their delete markers (FTS5 keeps deleted postings until its segments merge), then
   free pages are given back (signet.store.space.reclaim; stores made before incremental
   auto-vacuum keep them for reuse until ``signet repair --vacuum``)

Each step is its own short write transaction capped at ``retention.batch_limit`` rows, so a
sweep never holds the write lock for long; what is left is taken by the next sweep.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta

from signet.config import RetentionSettings
from signet.search.keyword_mirror import LOG_KEEP
from signet.store import entity_links, space
from signet.store.database import Database
from signet.store.records import to_iso
from signet.store.sqlite import Connection

log = logging.getLogger(__name__)

KEEP_LOG = 2 * LOG_KEEP
"""Keyword change-log entries the sweep keeps (the mirror itself trims to :data:`LOG_KEEP`)."""


@dataclass
class SweepReport:
    graph_links: int = 0
    orphaned_entities: int = 0
    embeddings: int = 0
    tombstones: int = 0
    jobs_of_purged: int = 0
    history: int = 0
    completed_jobs: int = 0
    dead_jobs: int = 0
    keyword_log: int = 0
    pages_reclaimed: int = 0

    def as_dict(self) -> dict[str, int]:
        return asdict(self)


class RetentionWorker:
    def __init__(self, db: Database, settings: RetentionSettings) -> None:
        self.db = db
        self.settings = settings
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.last_report: SweepReport | None = None
        self.last_run: str | None = None

    def _cutoff(self, days: float, now: datetime) -> str:
        return to_iso(now - timedelta(days=days))

    def sweep(self, now: datetime | None = None) -> SweepReport:
        now = now or datetime.now(UTC)
        s = self.settings
        limit = s.batch_limit
        report = SweepReport()
        tomb_cut = self._cutoff(s.tombstone_days, now)
        expired = self.db.read(
            lambda c: [
                (r[0], r[1])
                for r in c.execute(
                    "SELECT id, content_hash FROM memories WHERE is_deleted = 1 AND deleted_at < ? ORDER BY deleted_at LIMIT ?",
                    (tomb_cut, limit),
                )
            ]
        )
        ids = [i for i, _ in expired]
        marks = ",".join("?" for _ in ids)
        if ids:

            def unlink(conn: Connection) -> tuple[int, int]:
                per_entity = list(
                    conn.execute(
                        f"SELECT entity_id, COUNT(*) FROM memory_entity_mentions WHERE memory_id IN ({marks}) GROUP BY entity_id",
                        ids,
                    )
                )
                links = entity_links.unlink(conn, ids)
                conn.execute(f"DELETE FROM entity_attributes WHERE source_memory_id IN ({marks})", ids)  # knowledge
                orphans = 0
                for entity_id, n in per_entity:
                    conn.execute("UPDATE entities SET mentions = MAX(mentions - ?, 0) WHERE id = ?", (n, entity_id))
                    orphans += conn.execute(
                        "DELETE FROM entities WHERE id = ? AND mentions <= 0", (entity_id,)
                    ).rowcount
                return links, orphans

            report.graph_links, report.orphaned_entities = self.db.write(unlink)
            hashes = list({h for _, h in expired})
            hmarks = ",".join("?" for _ in hashes)
            report.embeddings = self.db.write(
                lambda conn: (
                    conn.execute(
                        f"DELETE FROM embeddings WHERE content_hash IN ({hmarks}) AND NOT EXISTS (SELECT 1 FROM memories m "
                        f"WHERE m.content_hash = embeddings.content_hash AND m.id NOT IN ({marks}))",
                        (*hashes, *ids),
                    ).rowcount
                )
            )
            report.tombstones = len(ids)

            def purge(conn: Connection) -> int:
                jobs = int(conn.execute(f"DELETE FROM memory_jobs WHERE memory_id IN ({marks})", ids).rowcount)
                conn.execute(f"DELETE FROM memories WHERE id IN ({marks})", ids)
                return jobs

            report.jobs_of_purged = self.db.write(purge)
        hist_cut = self._cutoff(s.history_days, now)
        report.history = self.db.write(
            lambda conn: (
                conn.execute(
                    "DELETE FROM memory_history WHERE rowid IN (SELECT rowid FROM memory_history WHERE created_at < ?"
                    " ORDER BY created_at LIMIT ?)",
                    (hist_cut, limit),
                ).rowcount
            )
        )
        done_cut = self._cutoff(s.completed_job_days, now)
        report.completed_jobs = self.db.write(
            lambda conn: (
                conn.execute(
                    "DELETE FROM memory_jobs WHERE id IN (SELECT id FROM memory_jobs WHERE status = 'completed' "
                    "AND completed_at < ? LIMIT ?)",
                    (done_cut, limit),
                ).rowcount
            )
        )
        dead_cut = self._cutoff(s.dead_job_days, now)
        report.dead_jobs = self.db.write(
            lambda conn: (
                conn.execute(
                    "DELETE FROM memory_jobs WHERE id IN (SELECT id FROM memory_jobs WHERE status = 'dead' "
                    "AND failed_at < ? LIMIT ?)",
                    (dead_cut, limit),
                ).rowcount
            )
        )
        # The newest entry always stays (ids never restart); a mirror this far behind rebuilds.
        report.keyword_log = self.db.write(
            lambda conn: (
                conn.execute(
                    "DELETE FROM keyword_changes WHERE id IN (SELECT id FROM keyword_changes WHERE id < "
                    "(SELECT MAX(id) FROM keyword_changes) - ? ORDER BY id LIMIT ?)",
                    (KEEP_LOG, limit),
                ).rowcount
            )
        )
        if any(report.as_dict().values()):
            removed = report.tombstones > 0
            report.pages_reclaimed = self.db.write(lambda conn: space.compact(conn, limit * 8, rows_removed=removed))
        self.last_report = report
        self.last_run = to_iso(now)
        if any(report.as_dict().values()):
            log.info("retention sweep: %s", report.as_dict())
        return report

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="signet-retention", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)

    def sweep_if_mine(self) -> SweepReport | None:
        """The scheduled sweep: None when another daemon on the store is sweeping now (one at
        a time, so their deletes never wait on each other's row locks; the next interval
        sweeps again)."""
        with self.db.exclusive("retention") as mine:
            if not mine:
                log.info("retention sweep skipped: another daemon on the store is sweeping")
                return None
            return self.sweep()

    def _run(self) -> None:
        interval = self.settings.interval_hours * 3600
        # First sweep shortly after start, then on the interval.
        if self._stop.wait(60):
            return
        while True:
            try:
                self.sweep_if_mine()
            except Exception:  # a failed sweep is logged and retried next interval, never fatal
                log.exception("retention sweep failed")
            if self._stop.wait(interval):
                return
