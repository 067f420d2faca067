"""Keeps the in-memory keyword index (signet.search.keywords) in step with ``memories_ctx_fts``.

The table is written only by triggers on ``memories`` (signet.store.thread_context), and since
migration 10 those triggers also log every row they write in ``keyword_changes``. So the
mirror never has to know *why* a row changed (a new turn rewrote its neighbours' context,
an edit, a forget, a thread move, a purge): it replays the log. ``seq`` NULL in the log
means "everything changed" (the repair rebuild); the mirror then rebuilds from the table.

- **Start**: a background thread reads what the table indexes in one snapshot (each row's
  text computed from ``memories``: since migration 15 the table keeps no copy; see
  ``signet.store.thread_context.rows_sql``), with the log's last id as its cursor, and builds the index. On SQLite
  it reads each memory's context as the seqs of its window (``windows_sql``) and tokenizes
  every memory once (``KeywordIndex.load_windows``: ~4 s per 20,000 realistic turns of
  ~935 characters on a 2-core machine; spelling each context out as text took ~11 s). Until it
  is ready, recall uses FTS5 itself: same results, slower.
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
  first, and a rolled-back write (a whole transaction, or one write's savepoint) leaves a hole
  for good. So on PostgreSQL the background thread applies what it finds past the cursor and
  *watches* the ids missing below it (:attr:`KeywordMirror._watch`): one that commits later is
  applied when it appears; one is given up once it can never fill (:meth:`KeywordMirror._settled`:
  the transaction holding it was in progress in the snapshot of the read that first saw it
  missing, or already over; once every transaction in progress then is over before a later
  read and the id is still missing, nothing can fill it). No clock and no waiting at a hole: a
  transaction held open for minutes delays only its own change, and a build taken while others
  write misses nothing (the ids missing below its cursor are watched the same way). Changes are
  applied by state (each memory read as it is now), so applying them out of id order is safe.
  A search's own catch-up (read your writes) applies only entries that follow the cursor with
  no gap, and otherwise answers with ``ts_rank``."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any, cast

from signet.errors import Stopping, StorageError, until_stopped
from signet.models import KeywordIndexState
from signet.search.keywords import KeywordIndex, Phrase, RowData, WindowRow
from signet.search.tokens import token_counts, tokens
from signet.store.database import Database
from signet.store.sqlite import Connection, sqlite3
from signet.store.thread_context import CONTEXT_WEIGHT, rows_sql, windows_sql

log = logging.getLogger(__name__)

POLL_SECONDS = 0.1
BURST_ENTRIES = 16_384
QUERY_CATCH_UP = 64
QUERY_LOCK_WAIT_S = 0.05
"""How long a search waits for another thread's catch-up before asking FTS5 (a step of
``CATCH_UP_STEP`` entries takes ~15 ms)."""
CATCH_UP_STEP = 256
LOG_KEEP = 20_000
AFTER_MAX_S = 300.0
"""The longest the build waits for the vector index to load (:meth:`KeywordMirror._wait_for`)."""
SETTLED_SQL = (
    "SELECT COALESCE(bool_and(pg_visible_in_snapshot(x, pg_current_snapshot())), true)"
    " FROM pg_snapshot_xip(%s::pg_snapshot) AS x"
)
"""PostgreSQL: whether every transaction in progress in snapshot ``%s`` was over when the
current read's snapshot was taken (:meth:`KeywordMirror._settled`)."""
SNAPSHOT_SQL = "SELECT pg_current_snapshot()::text"
MISSING_SQL = (
    "SELECT g FROM generate_series((SELECT COALESCE(MIN(id), 1) FROM keyword_changes), %s) AS g"
    " WHERE NOT EXISTS (SELECT 1 FROM keyword_changes WHERE id = g)"
)
"""PostgreSQL: the log ids missing between its oldest entry and ``%s`` (a build's cursor)."""


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


def _native(conn: Connection, sql: str, params: tuple[Any, ...] = ()) -> Any:
    """The one value of a PostgreSQL statement run as written (signet.store.postgres.Connection.native)."""
    return cast(Any, conn).native(sql, params).fetchone()[0]


def _window_row(r: Any) -> WindowRow:
    return WindowRow(int(r[0]), r[1], [int(s) for s in r[2].split()] if r[2] else [], r[3], r[4])


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
        self._watch: list[tuple[str, set[int]]] = []
        """PostgreSQL: log ids missing below the cursor, each batch with the snapshot of the
        read that first saw them missing (module docstring)."""
        self.holes_passed = 0
        """PostgreSQL: missing log ids found never to fill (rolled-back writes) and given up."""
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
        self._after: threading.Event | None = None

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
    def start(self, after: threading.Event | None = None) -> None:
        """Build and follow in a background thread; the build waits for ``after`` first (at
        most :data:`AFTER_MAX_S`), see :meth:`_wait_for`."""
        self._stop.clear()
        self._after = after
        self._thread = threading.Thread(target=self._run, name="signet-keywords", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)
            self._thread = None

    def _wait_for(self, after: threading.Event) -> None:
        """Wait until ``after`` is set (the vector index loaded), the daemon stops, or
        :data:`AFTER_MAX_S` pass.

        Why: both loads read a million rows from SQLite in Python, and run side by side each
        gives up the GIL at every row it steps and waits for the other's switch interval to get
        it back: at 100,000 memories the vector load took 15-18 s beside this build instead of
        0.8 s alone, and the build itself no less (docs/benchmarks.md). Recall needs the
        vectors more: without them it has no vector leg, while FTS5 answers the keyword leg
        with the same results until this index is ready."""
        deadline = time.monotonic() + AFTER_MAX_S
        while not after.wait(0.2):
            if self._stop.is_set():
                raise Stopping
            if time.monotonic() > deadline:
                log.warning("keyword index: built without waiting longer for the vector index (%.0f s)", AFTER_MAX_S)
                return

    def _run(self) -> None:
        try:
            if self._after is not None:
                self._wait_for(self._after)
            self._follow()
        except Stopping:  # stopped while building: the daemon is shutting down
            log.info("keyword index build abandoned: the daemon is stopping")
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
                    self.build(self._stop.is_set)
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
    def build(self, stopping: Callable[[], bool] = lambda: False) -> None:
        """(Re)build the index from the whole table, in one read snapshot; recall uses FTS5
        meanwhile. The new index replaces the old one with its own cursor. The mirror's thread
        passes ``stopping``: it gives up (:class:`Stopping`) when the daemon stops meanwhile; a
        caller's own build (a repair) completes."""
        self._ready.clear()

        def read(conn: Connection) -> tuple[KeywordIndex, int, tuple[int, int], list[tuple[str, set[int]]]]:
            cursor = _last_id(conn)
            fresh = KeywordIndex(self.index.weights)
            if self._fts5:
                contents = conn.execute("SELECT seq, content FROM memories")
                windows = conn.execute(windows_sql())
                fresh.load_windows(
                    ((int(r[0]), r[1]) for r in until_stopped(contents, stopping)),
                    (_window_row(r) for r in until_stopped(windows, stopping)),
                )
                return fresh, cursor, table_stats(conn), []
            fresh.load(_row_data(r) for r in until_stopped(conn.execute(rows_sql()), stopping))
            # Ids missing below the cursor may belong to transactions still open: watched.
            missing = {int(r[0]) for r in cast(Any, conn).native(MISSING_SQL, (cursor,)).fetchall()}
            return fresh, cursor, fresh.stats(), [(str(_native(conn, SNAPSHOT_SQL)), missing)] if missing else []

        fresh, cursor, stats, watch = self.db.read(read)
        if self._built:
            self.rebuilds += 1
        self._built = True
        with self._sync:
            self.index, self._cursor, self._watch = fresh, cursor, watch
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
        """Entries past the cursor, and (PostgreSQL) missing ids still watched."""
        return _last_id(conn) - self._cursor + sum(len(ids) for _, ids in self._watch)

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

    def _apply_log(self, conn: Connection, limit: int, partial: bool, *, search: bool = False) -> bool:
        """The body of :meth:`catch_up`, under its lock (``search``: a search's own catch-up)."""
        entries = conn.execute(
            "SELECT id, seq FROM keyword_changes WHERE id > ? ORDER BY id LIMIT ?", (self._cursor, limit + 1)
        ).fetchall()
        if not self._fts5:
            return self._apply_pg(conn, entries, limit, partial, search)
        if not entries:
            return True
        if len(entries) > limit:
            if not partial:
                return False
            entries = entries[:limit]
        if int(entries[0][0]) != self._cursor + 1 or any(e[1] is None for e in entries):
            # Trimmed past our cursor by another process, or the table was rebuilt whole.
            self._ready.clear()
            return False
        self._apply(conn, entries)
        self._cursor = int(entries[-1][0])
        return True

    def _apply_pg(self, conn: Connection, entries: list[Any], limit: int, partial: bool, search: bool) -> bool:
        """:meth:`_apply_log` on PostgreSQL, where ids can be missing (module docstring)."""
        if entries and int(entries[0][0]) != self._cursor + 1 and self._trimmed(conn):
            self._ready.clear()
            return False
        if len(entries) > limit:
            if not partial:
                return False
            entries = entries[:limit]
        if search:
            # Read your writes: only what follows the cursor with no gap; a gap is the thread's.
            if any(int(e[0]) != self._cursor + 1 + i for i, e in enumerate(entries)):
                return False
            arrived: list[Any] = []
        else:
            arrived = self._arrived(conn)
            expected, missing = self._cursor + 1, set[int]()
            for e in entries:
                missing.update(range(expected, int(e[0])))
                expected = int(e[0]) + 1
            if missing:
                self._watch.append((str(_native(conn, SNAPSHOT_SQL)), missing))
        if any(e[1] is None for e in [*entries, *arrived]):  # the table was rebuilt whole
            self._ready.clear()
            return False
        self._apply(conn, [*entries, *arrived])
        if entries:
            self._cursor = int(entries[-1][0])
        return search or not self._watch

    def _arrived(self, conn: Connection) -> list[Any]:
        """The watched ids that committed since, read; the batches that can no longer fill
        (:meth:`_settled`) given up."""
        watched = sorted(set().union(*(ids for _, ids in self._watch))) if self._watch else []
        found: list[Any] = []
        for i in range(0, len(watched), 500):
            chunk = watched[i : i + 500]
            marks = ",".join("?" for _ in chunk)
            found.extend(conn.execute(f"SELECT id, seq FROM keyword_changes WHERE id IN ({marks})", chunk).fetchall())
        present = {int(e[0]) for e in found}
        kept: list[tuple[str, set[int]]] = []
        for snapshot, ids in self._watch:
            ids -= present
            if not ids:
                continue
            if self._settled(conn, snapshot):  # this read sees every id that could ever fill
                log.info("keyword index: %d log id(s) were rolled back; given up", len(ids))
                self.holes_passed += len(ids)
                continue
            kept.append((snapshot, ids))
        self._watch = kept
        return found

    def _apply(self, conn: Connection, entries: list[Any]) -> None:
        """The current state of the rows ``entries`` name, into the index (by state: idempotent)."""
        if not entries:
            return
        seqs = sorted({int(e[1]) for e in entries})
        found: list[RowData] = []
        for i in range(0, len(seqs), 500):
            chunk = seqs[i : i + 500]
            marks = ",".join("?" for _ in chunk)
            found.extend(_row_data(r) for r in conn.execute(rows_sql(f"m.seq IN ({marks})"), chunk))
        present = {r.seq for r in found}
        self.index.apply(found, [s for s in seqs if s not in present])

    def _trimmed(self, conn: Connection) -> bool:
        """PostgreSQL: whether another daemon trimmed the log past the cursor. The entry at the
        cursor stays until then (trims keep :data:`LOG_KEEP` entries below a reader's cursor);
        an empty log's cursor is 0, and the first trim leaves no id below :data:`LOG_KEEP`."""
        if self._cursor == 0:
            first = conn.execute("SELECT MIN(id) FROM keyword_changes").fetchone()[0]
            return first is not None and int(first) > LOG_KEEP
        return conn.execute("SELECT 1 FROM keyword_changes WHERE id = ?", (self._cursor,)).fetchone() is None

    @staticmethod
    def _settled(conn: Connection, first_seen: str) -> bool:
        """Whether ids first seen missing in snapshot ``first_seen`` can never fill, judged in
        ``conn``'s read: the transaction holding such an id took it before an id the read saw
        committed, so it was either over before ``first_seen`` (then it rolled the id back) or
        in progress in it; once every transaction in progress then is over before this read's
        snapshot, whatever they committed is visible here. A statement in PostgreSQL's own
        words: the SQLite-to-PostgreSQL translation has no snapshot types."""
        return bool(_native(conn, SETTLED_SQL, (first_seen,)))

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
            if seen > self._cursor and not self._apply_log(conn, QUERY_CATCH_UP, partial=False, search=True):
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
