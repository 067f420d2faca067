"""Storage that stays bounded: give deleted pages back to the file system, and say how big the store is.

SQLite never shrinks a database file by itself: pages freed by a delete go on the file's
freelist and are reused, but a store that once held 100k memories keeps its size after a
purge. Users of the TypeScript Signet reported a database that grew from 14 MB to 29 GB.

- New stores are created with ``auto_vacuum = INCREMENTAL`` (:func:`prepare_new`, before the
  first table: the mode of an existing file can only change through a full ``VACUUM``). Freed
  pages then stay on the freelist until :func:`reclaim` moves them to the end of the file and
  truncates it, a bounded number of pages per call, so it never holds the write lock for long.
  The retention sweep calls it after each purge.
- A store made before this (``auto_vacuum = NONE``) is converted by :func:`convert`, a full
  ``VACUUM`` that rewrites the file once (``signet repair --vacuum``, daemon stopped).
- :func:`usage` measures the file against what it must hold (the memories' text and
  vectors): ``signet status`` shows the ratio, the figure issue reports and benchmarks use.
"""

from __future__ import annotations

from dataclasses import dataclass

from signet.store.sqlite import Connection

RECLAIM_PAGES = 4096
"""Pages one :func:`reclaim` call gives back at most (16 MB at 4 KiB pages, ~tens of ms)."""

_MODES = {0: "none", 1: "full", 2: "incremental"}


def prepare_new(conn: Connection) -> None:
    """Incremental auto-vacuum for a file that has no page yet (a new store); no-op otherwise."""
    if int(conn.execute("PRAGMA page_count").fetchone()[0]) == 0:
        conn.execute("PRAGMA auto_vacuum = INCREMENTAL")


def mode(conn: Connection) -> str:
    """``none``, ``full`` or ``incremental``."""
    return _MODES.get(int(conn.execute("PRAGMA auto_vacuum").fetchone()[0]), "unknown")


def reclaim(conn: Connection, max_pages: int = RECLAIM_PAGES) -> int:
    """Give up to ``max_pages`` free pages back to the file system; the number given back.

    Only in ``incremental`` mode (elsewhere the pages stay free for reuse and 0 is returned).
    With WAL the file itself shrinks at the next checkpoint. PostgreSQL: 0 (autovacuum's job)."""
    if getattr(conn, "dialect", "sqlite") == "postgres" or mode(conn) != "incremental":
        return 0
    before = int(conn.execute("PRAGMA freelist_count").fetchone()[0])
    if before == 0:
        return 0
    conn.execute(f"PRAGMA incremental_vacuum({max(int(max_pages), 1)})").fetchall()
    return before - int(conn.execute("PRAGMA freelist_count").fetchone()[0])


FTS_TABLES = ("memories_fts", "memories_ctx_fts")
"""FTS5 keeps a deleted row's postings as delete markers until its segments merge."""


def compact(conn: Connection, max_pages: int = RECLAIM_PAGES, *, rows_removed: bool = False) -> int:
    """After deletes: let each FTS5 index merge a bounded amount of its segments (``merge``
    with a page budget: the work is capped, what is left is merged by the next call), then
    :func:`reclaim`. Returns the pages given back.

    A positive budget merges only levels that have several segments, so the delete markers of
    purged rows can stay in a few large segments for good (an emptied 20k store kept ~10 MB
    of index). When rows left the index (``rows_removed``) the budget is negative: FTS5 then
    merges even a level with one segment, and successive sweeps rewrite the markers away."""
    if getattr(conn, "dialect", "sqlite") == "postgres":  # no FTS5 segments or freelist: autovacuum's job
        return 0
    budget = max(int(max_pages) // 8, 16)
    for table in FTS_TABLES:
        conn.execute(f"INSERT INTO {table}({table}, rank) VALUES ('merge', ?)", (-budget if rows_removed else budget,))
    return reclaim(conn, max_pages)


def convert(conn: Connection) -> str:
    """Switch an existing store to incremental auto-vacuum and compact it (a full ``VACUUM``:
    the file is rewritten, which needs free disk about its size and no other connection
    writing). Returns the mode afterwards."""
    conn.execute("PRAGMA auto_vacuum = INCREMENTAL")
    conn.execute("VACUUM")
    # VACUUM may renumber the rowids of a table without an INTEGER PRIMARY KEY, and the
    # transcript index (migration 28, external content) points at transcript_turns' rowids.
    if conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'transcript_turns_fts'").fetchone() is not None:
        conn.execute("INSERT INTO transcript_turns_fts(transcript_turns_fts) VALUES ('rebuild')")
    return mode(conn)


@dataclass(frozen=True)
class Usage:
    """What the database file holds against what it must hold."""

    file_bytes: int
    free_bytes: int
    text_bytes: int
    vector_bytes: int
    """The vectors at the model's precision (:data:`FLOAT32` bytes a value)."""
    auto_vacuum: str

    @property
    def amplification(self) -> float | None:
        """File bytes per byte of (live text + vectors); None for an empty store."""
        payload = self.text_bytes + self.vector_bytes
        return round(self.file_bytes / payload, 2) if payload else None


FLOAT32 = 4
"""The bytes of one vector value as the model gives it: what a store must hold at least is the
text and the vectors at that precision (the store keeps 2 bytes a value, signet.store.vector_blob,
so its own encoding does not move the yardstick it is measured by)."""


def usage(conn: Connection) -> Usage:
    """One pass over ``memories`` and ``embeddings`` (lengths only, no text is read into Python)."""
    if getattr(conn, "dialect", "sqlite") == "postgres":  # the server's database, no file or freelist of ours
        size = conn.execute("SELECT pg_database_size(current_database())").fetchone()[0]
        text = conn.execute("SELECT COALESCE(SUM(octet_length(content)), 0) FROM memories").fetchone()[0]
        vectors = conn.execute(f"SELECT COALESCE(SUM(dimensions), 0) * {FLOAT32} FROM embeddings").fetchone()[0]
        return Usage(int(size), 0, int(text), int(vectors), "postgres")
    page_size = int(conn.execute("PRAGMA page_size").fetchone()[0])
    pages = int(conn.execute("PRAGMA page_count").fetchone()[0])
    free = int(conn.execute("PRAGMA freelist_count").fetchone()[0])
    text = conn.execute("SELECT COALESCE(SUM(length(CAST(content AS BLOB))), 0) FROM memories").fetchone()[0]
    vectors = conn.execute(f"SELECT COALESCE(SUM(dimensions), 0) * {FLOAT32} FROM embeddings").fetchone()[0]
    return Usage(pages * page_size, free * page_size, int(text), int(vectors), mode(conn))
