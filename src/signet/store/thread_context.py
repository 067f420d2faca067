"""Conversation context for the keyword leg: each memory is also indexed with the text before it.

A turn of a conversation is often unreadable alone ("Woodhaven, a small town in the Midwest"
answers "where did you go on your road trip?" asked one turn earlier). Recall's keyword leg
therefore searches ``memories_ctx_fts``, an FTS5 table with two columns: the memory's own
``content`` and a ``context`` column holding the text of the memories around it in the
same *thread* (same ``source_type`` + ``source_id`` -- a harness session -- and the same
project and agent): the :data:`CONTEXT_BEFORE` memories before it and the
:data:`CONTEXT_AFTER` after it (the answer to a question is usually the next turn). BM25 weights the context column low (:data:`CONTEXT_WEIGHT`), so a word
in the memory itself still counts most, but a memory whose neighbours talk about the query
is found too. Memories without a ``source_id`` (hand-written facts) have no thread and an
empty context. Measured on LoCoMo: see docs/benchmarks.md.

The table is maintained by triggers on ``memories`` (migration 6), so every write path --
remember, modify, soft delete (forget/delete), recover, hard delete, retention purges and
any future writer -- keeps it right without calling anything: an insert indexes the new
memory with its context and refreshes the neighbours whose context it joins; a change of
content, deletion state or thread re-indexes the memory and refreshes those neighbours, so a
forgotten memory's text leaves its neighbours' context at once. Appending to a conversation
rewrites only the :data:`CONTEXT_AFTER` rows before the new one.

Migration 6 indexed the previous three memories only; migration 7 (:data:`CONTEXT_SCHEMA_V7`)
replaces its triggers and re-indexes every memory with the window before and after. The text
of migration 6 is kept byte for byte (:data:`RECALL_SCHEMA`): applied migrations are
checksummed.
The legacy keyword-only search (``alpha`` = 0) keeps using ``memories_fts`` (content only).
"""

from __future__ import annotations

from collections.abc import Callable

from signet.store.sqlite import Connection

CONTEXT_BEFORE = 3
"""How many earlier memories of the same thread form part of a memory's context."""

CONTEXT_AFTER = 2
"""How many later memories of the same thread form part of a memory's context."""

CONTEXT_WINDOW = CONTEXT_BEFORE
"""Migration 6's window (previous memories only); kept for its frozen text."""

CONTEXT_WEIGHT = 0.5
"""BM25 weight of the context column (the content column weighs 1.0)."""

_THREAD = (
    "{a}.source_id = {b}.source_id AND {a}.source_type IS {b}.source_type AND {a}.project IS {b}.project"
    " AND {a}.agent_id = {b}.agent_id"
)


def same_thread(a: str, b: str) -> str:
    """SQL condition: rows ``a`` and ``b`` of ``memories`` are in the same thread."""
    return _THREAD.format(a=a, b=b)


def _context_of(seq: str) -> str:
    """Migration 6: the context text of memory ``seq`` (its previous memories; '' without a thread)."""
    thread = _THREAD.format(a="p", b="t")
    return (
        "(SELECT COALESCE(group_concat(c, ' '), '') FROM (SELECT p.content AS c FROM memories t"
        f" JOIN memories p ON {thread} AND p.is_deleted = 0 AND p.seq < t.seq"
        f" WHERE t.seq = {seq} ORDER BY p.seq DESC LIMIT {CONTEXT_WINDOW}))"
    )


def _followers(row: str) -> str:
    """Migration 6: seqs of the live memories whose context includes memory ``row`` (old/new)."""
    thread = _THREAD.format(a="f", b=row)
    return (
        f"SELECT f.seq FROM memories f WHERE {row}.source_id IS NOT NULL AND {thread}"
        f" AND f.seq > {row}.seq AND f.is_deleted = 0 ORDER BY f.seq LIMIT {CONTEXT_WINDOW}"
    )


def _followers_of(row: str) -> str:
    """Migration 6: SQL condition on ``rowid``: the memories whose context includes memory ``row``."""
    return f"rowid IN ({_followers(row)})"


def _reindex_all(context: Callable[[str], str]) -> str:
    """Index every memory with the context ``context`` computes."""
    return (
        f"INSERT INTO memories_ctx_fts(rowid, content, context) SELECT m.seq, m.content, {context('m.seq')}"
        " FROM memories m;"
    )


def _triggers(context: Callable[[str], str], affected: Callable[[str], str], *, log: bool = False) -> str:
    """The three triggers that keep ``memories_ctx_fts`` right on every write.

    ``context(seq)`` is the SQL expression of a memory's context; ``affected(row)`` the SQL
    condition on ``rowid`` selecting the memories whose context includes ``row`` (old/new).
    With ``log`` (migration 10) each trigger also records every row of ``memories_ctx_fts``
    it wrote in ``keyword_changes``, for the in-memory mirror (signet.search.keyword_mirror).
    """
    refresh = "UPDATE memories_ctx_fts SET context = " + context("memories_ctx_fts.rowid")

    def logged(row: str, where: str) -> str:
        if not log:
            return ""
        return f"\n    INSERT INTO keyword_changes(seq) SELECT {row}.seq UNION SELECT seq FROM memories WHERE {where};"

    return f"""CREATE TRIGGER IF NOT EXISTS memories_ctx_ai AFTER INSERT ON memories BEGIN
    INSERT INTO memories_ctx_fts(rowid, content, context) VALUES (new.seq, new.content, {context("new.seq")});
    {refresh} WHERE {affected("new")};{logged("new", affected("new"))}
END;
CREATE TRIGGER IF NOT EXISTS memories_ctx_au AFTER UPDATE OF content, is_deleted, source_id, source_type, project,
    agent_id ON memories
    WHEN old.content IS NOT new.content OR old.is_deleted IS NOT new.is_deleted
      OR old.source_id IS NOT new.source_id OR old.source_type IS NOT new.source_type
      OR old.project IS NOT new.project OR old.agent_id IS NOT new.agent_id
BEGIN
    UPDATE memories_ctx_fts SET content = new.content, context = {context("new.seq")} WHERE rowid = new.seq;
    {refresh} WHERE {affected("old")} OR {affected("new")};{logged("new", f"{affected('old')} OR {affected('new')}")}
END;
CREATE TRIGGER IF NOT EXISTS memories_ctx_ad AFTER DELETE ON memories BEGIN
    DELETE FROM memories_ctx_fts WHERE rowid = old.seq;
    {refresh} WHERE {affected("old")};{logged("old", affected("old"))}
END;
"""


RECALL_SCHEMA = f"""
CREATE INDEX IF NOT EXISTS idx_memories_thread ON memories(source_id, seq) WHERE source_id IS NOT NULL;
CREATE VIRTUAL TABLE IF NOT EXISTS memories_ctx_fts USING fts5(content, context, tokenize='unicode61');
{_reindex_all(_context_of)}
{_triggers(_context_of, _followers_of)}"""
"""Migration 6 (frozen: its checksum is recorded in every store that applied it)."""


def _window_of(seq: str) -> str:
    """SQL expression: the context text of memory ``seq``: the live memories around it in its thread."""
    before = _THREAD.format(a="p", b="t")
    after = _THREAD.format(a="n", b="t")
    return (
        "(SELECT COALESCE(group_concat(c, ' '), '') FROM ("
        "SELECT c FROM (SELECT p.content AS c FROM memories t"
        f" JOIN memories p ON {before} AND p.is_deleted = 0 AND p.seq < t.seq"
        f" WHERE t.seq = {seq} ORDER BY p.seq DESC LIMIT {CONTEXT_BEFORE})"
        " UNION ALL "
        "SELECT c FROM (SELECT n.content AS c FROM memories t"
        f" JOIN memories n ON {after} AND n.is_deleted = 0 AND n.seq > t.seq"
        f" WHERE t.seq = {seq} ORDER BY n.seq LIMIT {CONTEXT_AFTER})))"
    )


def _neighbours(row: str) -> str:
    """SQL condition on ``rowid``: the live memories whose context window includes memory ``row``."""
    after = _THREAD.format(a="f", b=row)
    before = _THREAD.format(a="l", b=row)
    return (
        f"rowid IN (SELECT f.seq FROM memories f WHERE {row}.source_id IS NOT NULL AND {after}"
        f" AND f.seq > {row}.seq AND f.is_deleted = 0 ORDER BY f.seq LIMIT {CONTEXT_BEFORE})"
        f" OR rowid IN (SELECT l.seq FROM memories l WHERE {row}.source_id IS NOT NULL AND {before}"
        f" AND l.seq < {row}.seq AND l.is_deleted = 0 ORDER BY l.seq DESC LIMIT {CONTEXT_AFTER})"
    )


CONTEXT_SCHEMA_V7 = f"""
DROP TRIGGER IF EXISTS memories_ctx_ai;
DROP TRIGGER IF EXISTS memories_ctx_au;
DROP TRIGGER IF EXISTS memories_ctx_ad;
DELETE FROM memories_ctx_fts;
{_reindex_all(_window_of)}
{_triggers(_window_of, _neighbours)}"""
"""Migration 7: the context window before and after each memory."""


KEYWORD_LOG_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS keyword_changes (id INTEGER PRIMARY KEY, seq INTEGER);
DROP TRIGGER IF EXISTS memories_ctx_ai;
DROP TRIGGER IF EXISTS memories_ctx_au;
DROP TRIGGER IF EXISTS memories_ctx_ad;
{_triggers(_window_of, _neighbours, log=True)}"""
"""Migration 10: the same triggers, also logging the rows they write (``seq`` NULL: all of them)."""

RESET_ALL = "INSERT INTO keyword_changes(seq) VALUES (NULL)"
"""Logged by a write that rewrites the whole table outside the triggers (:func:`rebuild`)."""


def rebuild(conn: Connection) -> int:
    """Re-index every memory with its context (repair); returns the number of rows indexed.

    The rows are rewritten (contexts recomputed), then FTS5 rebuilds its index and statistics
    from them: deleting rows only subtracts from a damaged statistics record."""
    conn.execute("DELETE FROM memories_ctx_fts")
    conn.execute(_reindex_all(_window_of))
    conn.execute("INSERT INTO memories_ctx_fts(memories_ctx_fts) VALUES ('rebuild')")
    conn.execute(RESET_ALL)
    return int(conn.execute("SELECT COUNT(*) FROM memories_ctx_fts").fetchone()[0])


def context_of(conn: Connection, seq: int) -> str | None:
    """The indexed context text of one memory (None when it is not indexed)."""
    row = conn.execute("SELECT context FROM memories_ctx_fts WHERE rowid = ?", (seq,)).fetchone()
    return None if row is None else str(row[0])
