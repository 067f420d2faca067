"""Keeps the in-memory keyword index (signet.search.keywords) in step with ``memories_ctx_fts``.

The table is written only by triggers on ``memories`` (signet.store.thread_context), and since
migration 10 those triggers also log every row they write in ``keyword_changes``. So the
mirror never has to know *why* a row changed (a new turn rewrote its neighbours' context,
an edit, a forget, a thread move, a purge): it replays the log. ``seq`` NULL in the log
means "everything changed" (the repair rebuild); the mirror then rebuilds from the table.

- **Start**: a background thread reads what the table indexes in one snapshot (each row's
  text computed from ``memories``: since migration 15 the table keeps no copy; see
  ``signet.store.thread_context.rows_sql``), with the log's last id as its cursor, and builds the index (about a second per 20,000 memories). Until it is
  ready, recall uses FTS5 itself: same results, slower.
- **Follow**: the thread polls the log every :data:`POLL_SECONDS` and applies what it finds
  once writes pause (or :data:`BURST_ENTRIES` have piled up), so a burst of remembers does
  not share the CPU with it (searches meanwhile are FTS5's); large deltas are merged into the
  base on the same thread.
- **Read your writes**: a search first applies any log entries its own read snapshot can see
  (a remember followed at once by a recall finds it). If more than :data:`QUERY_CATCH_UP`
  are waiting, or the background thread is applying entries at that moment, the search
  answers ``None`` and the caller asks FTS5 instead, so no recall pays for (or waits out) a
  burst it did not make.
- **Changes outside the triggers**: after catching up, a search compares the mirror's row
  and token counts with FTS5's own (its averages record): a table rewritten or damaged
  behind the triggers' back makes FTS5 answer and the mirror rebuild.
- **Log size**: entries the mirror has applied are deleted once more than :data:`LOG_KEEP`
  of them accumulate (the newest always stays, so ids never restart). A mirror that finds
  its cursor trimmed away (another process trimmed) rebuilds.
- **On PostgreSQL** there is no FTS5 table: the mirror *is* the thread-context index (content
  + neighbours' text, BM25 as FTS5 computes it), built from the same :func:`rows_sql` and fed by
  the same log (PostgreSQL migration 32 logs the thread neighbours a write changes, as the
  SQLite triggers do). Without FTS5's averages record there is nothing to compare its statistics
  with, so that check is SQLite's only; when the mirror cannot answer, recall's fallback is
  PostgreSQL's ``ts_rank`` over the content alone (docs/team.md, measured there). The log's ids
  are handed out at insert, not at commit: with several writers (daemons) a later id can commit
  first, and a rolled-back write leaves a hole for good. So on PostgreSQL the mirror applies the
  log only up to the first missing id; a hole still open after :data:`HOLE_WAIT_S` is taken for
  a rolled-back write and passed (a transaction holding a memory write open longer than that
  is missed until the next rebuild). Meanwhile searches are answered by ``ts_rank``.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

from signet.errors import StorageError
from signet.models import KeywordIndexState
from signet.search.keywords import KeywordIndex, Phrase, RowData
from signet.search.tokens import token_counts, tokens
from signet.store.database import Database
from signet.store.sqlite import Connection, sqlite3
from signet.store.thread_context import CONTEXT_WEIGHT, rows_sql

log = logging.getLogger(__name__)

POLL_SECONDS = 0.1
BURST_ENTRIES = 16_384
QUERY_CATCH_UP = 64
QUERY_LOCK_WAIT_S = 0.05
"""How long a search waits for another thread's catch-up before asking FTS5 (a step of
``CATCH_UP_STEP`` entries takes ~15 ms)."""
CATCH_UP_STEP = 256
LOG_KEEP = 20_000
HOLE_WAIT_S = 10.0
"""PostgreSQL: how long a missing log id may stay missing before it is taken for a rolled-back
write (module docstring); the group writer's transactions last milliseconds."""


def phrases_of(terms: list[tuple[str, bool]]) -> list[Phrase] | None:
    """The query terms as single-token phrases, or None when one of them is not a single
    token for FTS5 (``foo_bar`` is the phrase "foo bar"): such a query is left to FTS5."""
    out: list[Phrase] = []
    for text, prefix in terms:
        toks = tokens(text)
        if len(toks) != 1:
            return None
        out.append(Phrase(toks[0], prefix))
    return out


def _varints(blob: bytes) -> list[int]:
    """SQLite's variable-length integers, one after another (FTS5 record format)."""
    out: list[int] = []
    i = 0
    while i < len(blob):
        value = 0
        for j in range(9):
            byte = blob[i]
            i += 1
            if j == 8:  # the ninth byte carries 8 bits
                value = (value << 8) | byte
                break
            value = (value << 7) | (byte & 0x7F)
            if not byte & 0x80:
                break
        out.append(value)
    return out


def table_stats(conn: Connection) -> tuple[int, int]:
    """(rows, tokens) of ``memories_ctx_fts`` from FTS5's own averages record (one point read).

    The mirror compares them with its own after every catch-up: a table changed outside the
    triggers (a bulk repair, a drifted or damaged index) shows up here, and FTS5 answers until
    the mirror has rebuilt."""
    row = conn.execute("SELECT block FROM memories_ctx_fts_data WHERE id = 1").fetchone()
    if row is None or not row[0]:
        return 0, 0
    values = _varints(bytes(row[0]))
    return values[0], sum(values[1:])


def _last_id(conn: Connection) -> int:
    """The newest log entry's id (0 for an empty log)."""
    return int(conn.execute("SELECT COALESCE(MAX(id), 0) FROM keyword_changes").fetchone()[0])


def _row_data(r: Any) -> RowData:
    content, context = token_counts(r[1] or "", r[2] or "")
    return RowData(int(r[0]), content, context, r[3], r[4])


FALLBACK_REASONS = ("not_ready", "phrase", "busy", "behind", "changed_outside", "drifted")
"""Why a search went to FTS5: the index is (re)building; the query has a term FTS5 reads as a
phrase; another thread held the log for longer than a query waits; more log entries wait than a
query applies itself; the table changed behind the triggers (a rebuild follows); FTS5's own statistics
disagree with its content (until repair)."""


class KeywordMirror:
    """The index, its cursor in ``keyword_changes`` and the thread that follows the log."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self._fts5 = db.dialect == "sqlite"
        """Whether an FTS5 table backs the mirror (its statistics can be compared); not on PostgreSQL."""
        self._hole: tuple[int, float] | None = None
        """PostgreSQL: the first missing log id past the cursor and when it was first seen."""
        self.hole_wait_s = HOLE_WAIT_S
        self.index = KeywordIndex((1.0, CONTEXT_WEIGHT))
        self.error: str | None = None
        self._cursor = 0
        self._drifted: tuple[int, int] | None = None
        self._stopped = False
        self._built = False
        self.answered = 0
        """Searches the mirror answered since start (``/api/status``)."""
        self.fallbacks = 0
        """Searches it handed to FTS5: not ready, behind, drifted, or a phrase query."""
        self.fallback_reasons: dict[str, int] = dict.fromkeys(FALLBACK_REASONS, 0)
        """:attr:`fallbacks` by reason (``/metrics``)."""
        self.rebuilds = 0
        """Builds of the whole index after the first (``/metrics``): a mirror that keeps
        rebuilding is churning, and answers little while it does."""
        self._ready = threading.Event()
        self._sync = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def ready(self) -> bool:
        return self._ready.is_set()

    def state(self) -> KeywordIndexState:
        """What ``/api/status`` shows of the mirror."""
        index = self.index
        if self._stopped:
            name = "stopped"
        elif not self.ready:
            name = "building"
        else:
            name = "drifted" if self._drifted is not None else "ready"
        return KeywordIndexState(
            state=name,
            rows=len(index),
            postings=index.postings,
            bytes=index.nbytes(),
            answered=self.answered,
            fallbacks=self.fallbacks,
            error=self.error,
        )

    def wait_ready(self, timeout: float = 60.0) -> bool:
        return self._ready.wait(timeout)

    # -- lifecycle -------------------------------------------------------------------------
    def start(self) -> None:
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="signet-keywords", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)
            self._thread = None

    def _run(self) -> None:
        try:
            self._follow()
        except Exception as exc:  # a bug: logged with its traceback; recall keeps using FTS5
            log.exception("keyword index stopped; recall uses FTS5 directly")
            self._stopped = True
            self._ready.clear()
            self.error = f"keyword index stopped: {exc!r}; recall uses FTS5 directly until restart"

    def _follow(self) -> None:
        backoff = 1.0
        last_backlog = -1
        while not self._stop.is_set():
            try:
                if not self.ready:
                    self.build()
                    last_backlog = -1
                backlog = self.db.read(self._backlog)
                if backlog and (backlog == last_backlog or backlog >= BURST_ENTRIES):
                    # In steps, each its own snapshot and lock hold (~15 ms): a search waiting
                    # for the lock would otherwise wait for the whole backlog.
                    while not self._stop.is_set() and self.ready and self.db.read(self._backlog) > 0:
                        cursor = self._cursor
                        self.db.read(lambda c: self.catch_up(c, CATCH_UP_STEP, partial=True))
                        if self._cursor == cursor:  # waiting at a hole (PostgreSQL): poll again later
                            break
                    self._trim()
                    backlog = -1
                last_backlog = backlog
                if self.index.needs_merge():
                    self.index.merge()
            except (sqlite3.Error, StorageError, *self.db.engine_errors) as exc:
                # A locked, full or corrupt database: recall falls back to FTS5 meanwhile.
                self.error = f"keyword index: {exc}"
                log.warning("keyword index sync failed (retrying in %.0fs): %s", backoff, exc)
                self._stop.wait(backoff)
                backoff = min(backoff * 2, 60.0)
                continue
            backoff, self.error = 1.0, None
            self._stop.wait(POLL_SECONDS)

    # -- build and follow ------------------------------------------------------------------
    def build(self) -> None:
        """(Re)build the index from the whole table, in one read snapshot; recall uses FTS5
        meanwhile. The new index replaces the old one with its own cursor."""
        self._ready.clear()

        def read(conn: Connection) -> tuple[KeywordIndex, int, tuple[int, int]]:
            cursor = _last_id(conn)
            fresh = KeywordIndex(self.index.weights)
            fresh.load(_row_data(r) for r in conn.execute(rows_sql()))
            return fresh, cursor, table_stats(conn) if self._fts5 else fresh.stats()

        fresh, cursor, stats = self.db.read(read)
        if self._built:
            self.rebuilds += 1
        self._built = True
        with self._sync:
            self.index, self._cursor = fresh, cursor
            # FTS5's statistics disagree with its own content (a damaged index): searching
            # the mirror would rank differently from FTS5, so FTS5 answers until they change.
            self._drifted = stats if stats != fresh.stats() else None
        if self._drifted is not None:
            log.warning(
                "keyword index: FTS5 reports %s rows/tokens, its content %s; recall uses FTS5 until "
                'the index is repaired (POST /api/repair/check-fts {"repair": true})',
                stats,
                fresh.stats(),
            )
        self._ready.set()
        log.info("keyword index ready: %d rows, %d postings", len(fresh), fresh.postings)

    def _backlog(self, conn: Connection) -> int:
        return _last_id(conn) - self._cursor

    def catch_up(self, conn: Connection, limit: int, *, wait: bool = True, partial: bool = False) -> bool:
        """Apply the log entries ``conn``'s snapshot shows past the cursor, at most ``limit``
        (with ``partial``, the first ``limit`` of them). False, with nothing applied, when more
        are waiting (without ``partial``), the index must be rebuilt, or (without ``wait``)
        another thread is applying entries right now."""
        if not self._sync.acquire(blocking=wait):
            return False
        try:
            return self._apply_log(conn, limit, partial)
        finally:
            self._sync.release()

    def _apply_log(self, conn: Connection, limit: int, partial: bool) -> bool:
        """The body of :meth:`catch_up`, under its lock."""
        entries = conn.execute(
            "SELECT id, seq FROM keyword_changes WHERE id > ? ORDER BY id LIMIT ?", (self._cursor, limit + 1)
        ).fetchall()
        if not entries:
            return True
        waiting = False
        if not self._fts5:
            if int(entries[0][0]) != self._cursor + 1 and self._trimmed(conn):
                self._ready.clear()
                return False
            entries, waiting = self._before_hole(entries)
            if not entries:
                return False
        if len(entries) > limit:
            if not partial:
                return False
            entries = entries[:limit]
        if (self._fts5 and int(entries[0][0]) != self._cursor + 1) or any(e[1] is None for e in entries):
            # Trimmed past our cursor by another process, or the table was rebuilt whole.
            self._ready.clear()
            return False
        seqs = sorted({int(e[1]) for e in entries})
        found: list[RowData] = []
        for i in range(0, len(seqs), 500):
            chunk = seqs[i : i + 500]
            marks = ",".join("?" for _ in chunk)
            found.extend(_row_data(r) for r in conn.execute(rows_sql(f"m.seq IN ({marks})"), chunk))
        present = {r.seq for r in found}
        self.index.apply(found, [s for s in seqs if s not in present])
        self._cursor = int(entries[-1][0])
        return not waiting

    def _trimmed(self, conn: Connection) -> bool:
        """Whether the log no longer holds the entry after the cursor (the newest entry always
        stays, so a log whose oldest id is past the cursor was trimmed past it)."""
        first = conn.execute("SELECT MIN(id) FROM keyword_changes").fetchone()[0]
        return first is not None and int(first) > self._cursor + 1

    def _before_hole(self, entries: list[Any]) -> tuple[list[Any], bool]:
        """The entries up to the first missing id (PostgreSQL), and whether any wait past it. A
        hole older than :attr:`hole_wait_s` is passed over (a rolled-back write's id)."""
        expected = self._cursor + 1
        for i, entry in enumerate(entries):
            eid = int(entry[0])
            if eid != expected:
                now = time.monotonic()
                if self._hole is None or self._hole[0] != expected:
                    self._hole = (expected, now)
                if now - self._hole[1] < self.hole_wait_s:
                    return entries[:i], True
                log.info("keyword index: log ids %d-%d never committed; passed over", expected, eid - 1)
                self._hole = None
            expected = eid + 1
        return entries, False

    def _trim(self) -> None:
        cursor = self._cursor
        first = self.db.read(lambda c: c.execute("SELECT MIN(id) FROM keyword_changes").fetchone()[0])
        if first is None or cursor - int(first) < 2 * LOG_KEEP:
            return
        # ``id < cursor``: the newest entry always stays, so the next id is never reused.
        self.db.write(lambda c: c.execute("DELETE FROM keyword_changes WHERE id < ?", (cursor - LOG_KEEP,)))

    # -- search ----------------------------------------------------------------------------
    def _fall_back(self, reason: str) -> list[tuple[int, float]] | None:
        """Count a search handed to FTS5 (the caller returns this None)."""
        self.fallbacks += 1
        self.fallback_reasons[reason] += 1
        return None

    def search(
        self,
        conn: Connection,
        terms: list[tuple[str, bool]],
        k: int,
        *,
        project: str | None = None,
        created_between: tuple[float, float] | None = None,
    ) -> list[tuple[int, float]] | None:
        """(seq, bm25) of the best ``k`` rows, as FTS5 would rank them; None when the caller
        should ask FTS5 (not built yet, a large backlog, a query FTS5 reads as a phrase)."""
        if not self.ready:
            return self._fall_back("not_ready")
        phrases = phrases_of(terms)
        if phrases is None:
            return self._fall_back("phrase")
        # Waits briefly for a catch-up in progress (a few ms) instead of giving up at once: under
        # concurrent recalls a search that never waited fell back to FTS5 for a large share.
        if not self._sync.acquire(timeout=QUERY_LOCK_WAIT_S):
            return self._fall_back("busy")
        try:
            if not self.ready:
                return self._fall_back("not_ready")
            seen = _last_id(conn)
            if seen > self._cursor and not self._apply_log(conn, QUERY_CATCH_UP, partial=False):
                return self._fall_back("behind" if self.ready else "not_ready")
            if seen == self._cursor and self._fts5:
                stats = table_stats(conn)
                if stats != self.index.stats():
                    if stats != self._drifted:
                        self._ready.clear()  # changed outside the triggers: the background thread rebuilds
                        return self._fall_back("changed_outside")
                    return self._fall_back("drifted")
            # seen < cursor: another reader with a newer snapshot moved the mirror past this one.
            # Comparing statistics would see a difference that is only time (this comparison
            # rebuilt the index 7 times in a 20-second soak); the caller keeps only the rows its
            # own snapshot shows, by primary key, so the answer is still this snapshot's.
        finally:
            self._sync.release()
        self.answered += 1
        return self.index.search(phrases, k, project=project, created_between=created_between)
