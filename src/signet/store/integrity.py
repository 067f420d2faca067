"""Is the database file whole, did it lose its memories, and how to get them back.

- :func:`check` runs at start-up: ``PRAGMA quick_check`` on files up to
  :data:`FULL_CHECK_BYTES` (a few seconds at most), on larger ones only the header and the
  schema (diagnostics runs the full check); a damaged file is reported, not served silently.
- :class:`StoreRecord` remembers in ``.daemon/store.json`` how many memories the database
  held, so a database that comes back empty (truncated to 0 bytes, replaced, lost) is noticed
  and the daemon refuses to start until the user accepts it.
- :func:`recover` copies every readable row of a damaged database into a fresh one with the
  same schema (table by table, row by row, skipping what cannot be read), rebuilds the search indexes, and swaps the files, keeping
  the damaged one beside it.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path

from signet.store.database import connect
from signet.store.migrations import migrate
from signet.store.sqlite import Connection, sqlite3
from signet.store.thread_context import rebuild as rebuild_thread_context

FULL_CHECK_BYTES = 512 * 1024 * 1024
"""Up to this size the start-up check is SQLite's ``quick_check`` (seconds at most)."""

HEADER = b"SQLite format 3\x00"
RECORD_FILE = "store.json"
BATCH = 500


def check(path: Path, conn: Connection) -> str | None:
    """None when the database looks whole, else the first problem found."""
    try:
        with path.open("rb") as fh:
            if path.stat().st_size and fh.read(16) != HEADER:
                return "the file is not an SQLite database (bad header)"
        conn.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
        if path.stat().st_size <= FULL_CHECK_BYTES:
            rows = [str(r[0]) for r in conn.execute("PRAGMA quick_check(5)").fetchall()]
            if rows != ["ok"]:
                return " ".join("; ".join(rows).split())[:300]  # one line
    except (OSError, sqlite3.DatabaseError) as exc:
        return str(exc)
    return None


@dataclass
class StoreRecord:
    """What the workspace last knew about its database (``.daemon/store.json``)."""

    daemon_dir: Path

    @property
    def path(self) -> Path:
        return self.daemon_dir / RECORD_FILE

    def memories(self) -> int:
        try:
            return int(json.loads(self.path.read_text(encoding="utf-8")).get("memories", 0))
        except (OSError, ValueError, AttributeError):
            return 0

    def save(self, memories: int) -> None:
        self.daemon_dir.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps({"memories": memories, "at": time.time()}), encoding="utf-8")
        tmp.replace(self.path)


def looks_lost(db_path: Path, record: StoreRecord) -> int:
    """How many memories the record says the database held, when the file is now missing or
    empty (0 bytes); 0 when nothing looks lost."""
    expected = record.memories()
    if expected and (not db_path.exists() or db_path.stat().st_size == 0):
        return expected
    return 0


@dataclass
class RecoverReport:
    tables: dict[str, int] = field(default_factory=dict)
    """Rows copied per table."""
    skipped: dict[str, int] = field(default_factory=dict)
    """Rows that could not be read, per table."""
    damaged_copy: str = ""


_SKIP = ("sqlite_", "memories_fts", "memories_ctx_fts", "memory_hints_fts", "schema_migrations")
"""Tables not copied: SQLite's own, the search indexes (rebuilt from the rows) and the
migration book-keeping (the fresh database has its own)."""


def recover(path: Path) -> RecoverReport:
    """Copy what can be read of the database at ``path`` into a fresh one, then swap them.

    The caller makes sure no daemon has the database open."""
    report = RecoverReport()
    fresh = path.with_name(path.name + ".recovering")
    for p in (fresh, fresh.with_name(fresh.name + "-wal"), fresh.with_name(fresh.name + "-shm")):
        p.unlink(missing_ok=True)
    new = connect(fresh)
    try:
        new.execute("PRAGMA foreign_keys = OFF")
        migrate(new)
        new.execute("ATTACH DATABASE ? AS old", (str(path),))
        tables = [str(r[0]) for r in new.execute("SELECT name FROM old.sqlite_master WHERE type = 'table'").fetchall()]
        wanted = {str(r[0]) for r in new.execute("SELECT name FROM main.sqlite_master WHERE type = 'table'")}
        for table in tables:
            if table.startswith(_SKIP) or table not in wanted:
                continue
            copied, skipped = _copy_table(new, table)
            report.tables[table] = copied
            if skipped:
                report.skipped[table] = skipped
        new.execute("DETACH DATABASE old")
        new.execute("BEGIN IMMEDIATE")
        new.execute("INSERT INTO memories_fts(memories_fts) VALUES ('rebuild')")
        new.execute("INSERT INTO memory_hints_fts(memory_hints_fts) VALUES ('rebuild')")
        rebuild_thread_context(new)
        new.execute("COMMIT")
    finally:
        new.close()
    stamp = time.strftime("%Y%m%d-%H%M%S")
    damaged = path.with_name(f"{path.name}.corrupt-{stamp}")
    path.replace(damaged)
    for suffix in ("-wal", "-shm"):
        side = path.with_name(path.name + suffix)
        if side.exists():
            side.replace(damaged.with_name(damaged.name + suffix))
    fresh.replace(path)
    report.damaged_copy = str(damaged)
    return report


def _copy_table(conn: Connection, table: str) -> tuple[int, int]:
    """(rows copied, ranges skipped). Range by range over the rowids (1 to the largest the
    table or its AUTOINCREMENT sequence knows), each range in one statement, a range that
    fails row by row: a damaged page costs only its own rows. Signet's tables use growing
    integer rowids; a table whose end cannot be found is copied whole, if it reads."""
    cols = [str(r[1]) for r in conn.execute(f'PRAGMA main.table_info("{table}")')]
    old_cols = {str(r[1]) for r in conn.execute(f'PRAGMA old.table_info("{table}")')}
    common = ", ".join(f'"{c}"' for c in cols if c in old_cols)
    ends = [e for e in (_bound(conn, table, "MAX"), _sequence(conn, table)) if e is not None and e < 2**40]
    if not ends:
        try:
            conn.execute("BEGIN IMMEDIATE")
            cur = conn.execute(f'INSERT OR IGNORE INTO main."{table}" ({common}) SELECT {common} FROM old."{table}"')
            conn.execute("COMMIT")
            return max(cur.rowcount, 0), 0
        except sqlite3.DatabaseError:
            conn.execute("ROLLBACK")
            return 0, 1  # neither end of the table can be found, nor the whole of it read
    hi = max(ends)
    copied = skipped = 0
    # Row by row: a range scan over a damaged page can end early without an error (measured:
    # a scribbled leaf made "rowid BETWEEN 1 AND 500" return nothing), a seek per row cannot.
    sql = f'INSERT OR IGNORE INTO main."{table}" ({common}) SELECT {common} FROM old."{table}" WHERE rowid = ?'
    for start in range(1, hi + 1, BATCH):
        rowids = range(start, min(start + BATCH, hi + 1))
        conn.execute("BEGIN IMMEDIATE")
        batch_copied = batch_skipped = 0
        for rowid in rowids:
            try:
                batch_copied += max(conn.execute(sql, (rowid,)).rowcount, 0)
            except sqlite3.DatabaseError:
                batch_skipped += 1
        try:
            conn.execute("COMMIT")
        except sqlite3.DatabaseError:
            # The damaged file's error can surface at COMMIT of a batch that read it: redo the
            # batch one row per transaction, so only the unreadable rows are lost.
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            batch_copied = batch_skipped = 0
            for rowid in rowids:
                try:
                    batch_copied += max(conn.execute(sql, (rowid,)).rowcount, 0)
                except sqlite3.DatabaseError:
                    if conn.in_transaction:
                        conn.execute("ROLLBACK")
                    batch_skipped += 1
        copied += batch_copied
        skipped += batch_skipped
    return copied, skipped


def _bound(conn: Connection, table: str, which: str) -> int | None:
    try:
        row = conn.execute(f'SELECT {which}(rowid) FROM old."{table}"').fetchone()
    except sqlite3.DatabaseError:
        return None
    return None if row is None or row[0] is None else int(row[0])


def _sequence(conn: Connection, table: str) -> int | None:
    try:
        row = conn.execute("SELECT seq FROM old.sqlite_sequence WHERE name = ?", (table,)).fetchone()
    except sqlite3.DatabaseError:
        return None
    return None if row is None else int(row[0])


@dataclass(frozen=True)
class KeywordIndexCheck:
    """Rows in ``memories`` and in both keyword indexes, and whether FTS5's own check passed."""

    memories: int
    indexed: int
    context_indexed: int
    ok: bool

    @property
    def consistent(self) -> bool:
        return self.ok and self.memories == self.indexed == self.context_indexed


def check_keyword_indexes(conn: Connection) -> KeywordIndexCheck:
    """Count and check both keyword indexes (runs FTS5's ``integrity-check``: a write).

    On PostgreSQL the keyword index is a generated ``tsvector`` column with a GIN index
    (signet.store.pg_schema): computed with each row, it has no separate rows to drift."""
    memories = conn.execute("SELECT COUNT(*) FROM memories").fetchone()[0]
    if getattr(conn, "dialect", "sqlite") == "postgres":
        return KeywordIndexCheck(int(memories), int(memories), int(memories), True)
    indexed = conn.execute("SELECT COUNT(*) FROM memories_fts_docsize").fetchone()[0]
    context_indexed = conn.execute("SELECT COUNT(*) FROM memories_ctx_fts_docsize").fetchone()[0]
    try:
        conn.execute("INSERT INTO memories_fts(memories_fts) VALUES ('integrity-check')")
        conn.execute("INSERT INTO memories_ctx_fts(memories_ctx_fts) VALUES ('integrity-check')")
        ok = True
    except sqlite3.DatabaseError:  # FTS5 reports a corrupt or drifted index this way
        ok = False
    return KeywordIndexCheck(int(memories), int(indexed), int(context_indexed), ok)


def rebuild_keyword_indexes(conn: Connection) -> int:
    """Rebuild both keyword indexes from the rows, together (recall reads one, the legacy
    keyword search the other); returns the context rows written. PostgreSQL's is computed
    with each row: nothing to rebuild (0)."""
    if getattr(conn, "dialect", "sqlite") == "postgres":
        return 0
    conn.execute("INSERT INTO memories_fts(memories_fts) VALUES ('rebuild')")
    return rebuild_thread_context(conn)
