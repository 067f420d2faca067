"""Conversation context for the keyword leg: each memory is also indexed with the text before it.

A turn of a conversation is often unreadable alone ("Woodhaven, a small town in the Midwest"
answers "where did you go on your road trip?" asked one turn earlier). Recall's keyword leg
therefore searches ``memories_ctx_fts``, an FTS5 table with two columns: the memory's own
``content`` and a ``context`` column holding the text of the memories just before it in the
same *thread* (same ``source_type`` + ``source_id`` -- a harness session -- and the same
project and agent). BM25 weights the context column low (:data:`CONTEXT_WEIGHT`), so a word
in the memory itself still counts most, but a memory whose neighbours talk about the query
is found too. Memories without a ``source_id`` (hand-written facts) have no thread and an
empty context. Measured on LoCoMo: see docs/benchmarks.md.

The table is maintained by triggers on ``memories`` (migration 6), so every write path --
remember, modify, soft delete (forget/delete), recover, hard delete, retention purges and
any future writer -- keeps it right without calling anything: an insert indexes the new
memory with its context; a change of content, deletion state or thread re-indexes the
memory and refreshes the context of the memories that follow it, so a forgotten memory's
text leaves its neighbours' context at once. Only the previous :data:`CONTEXT_WINDOW`
memories form the context, so appending to a conversation never rewrites older rows.
The legacy keyword-only search (``alpha`` = 0) keeps using ``memories_fts`` (content only).
"""

from __future__ import annotations

from typing import Any

CONTEXT_WINDOW = 3
"""How many earlier memories of the same thread form a memory's context."""

CONTEXT_WEIGHT = 0.4
"""BM25 weight of the context column (the content column weighs 1.0)."""

_THREAD = (
    "{a}.source_id = {b}.source_id AND {a}.source_type IS {b}.source_type AND {a}.project IS {b}.project"
    " AND {a}.agent_id = {b}.agent_id"
)


def _context_of(seq: str) -> str:
    """SQL expression: the context text of the memory whose seq is ``seq`` ('' without a thread)."""
    thread = _THREAD.format(a="p", b="t")
    return (
        "(SELECT COALESCE(group_concat(c, ' '), '') FROM (SELECT p.content AS c FROM memories t"
        f" JOIN memories p ON {thread} AND p.is_deleted = 0 AND p.seq < t.seq"
        f" WHERE t.seq = {seq} ORDER BY p.seq DESC LIMIT {CONTEXT_WINDOW}))"
    )


def _followers(row: str) -> str:
    """SQL subquery: seqs of the live memories whose context includes memory ``row`` (old/new)."""
    thread = _THREAD.format(a="f", b=row)
    return (
        f"SELECT f.seq FROM memories f WHERE {row}.source_id IS NOT NULL AND {thread}"
        f" AND f.seq > {row}.seq AND f.is_deleted = 0 ORDER BY f.seq LIMIT {CONTEXT_WINDOW}"
    )


_REFRESH = "UPDATE memories_ctx_fts SET context = " + _context_of("memories_ctx_fts.rowid")

RECALL_SCHEMA = f"""
CREATE INDEX IF NOT EXISTS idx_memories_thread ON memories(source_id, seq) WHERE source_id IS NOT NULL;
CREATE VIRTUAL TABLE IF NOT EXISTS memories_ctx_fts USING fts5(content, context, tokenize='unicode61');
INSERT INTO memories_ctx_fts(rowid, content, context) SELECT m.seq, m.content, {_context_of("m.seq")} FROM memories m;
CREATE TRIGGER IF NOT EXISTS memories_ctx_ai AFTER INSERT ON memories BEGIN
    INSERT INTO memories_ctx_fts(rowid, content, context) VALUES (new.seq, new.content, {_context_of("new.seq")});
    {_REFRESH} WHERE rowid IN ({_followers("new")});
END;
CREATE TRIGGER IF NOT EXISTS memories_ctx_au AFTER UPDATE OF content, is_deleted, source_id, source_type, project,
    agent_id ON memories
    WHEN old.content IS NOT new.content OR old.is_deleted IS NOT new.is_deleted
      OR old.source_id IS NOT new.source_id OR old.source_type IS NOT new.source_type
      OR old.project IS NOT new.project OR old.agent_id IS NOT new.agent_id
BEGIN
    UPDATE memories_ctx_fts SET content = new.content, context = {_context_of("new.seq")} WHERE rowid = new.seq;
    {_REFRESH} WHERE rowid IN ({_followers("old")}) OR rowid IN ({_followers("new")});
END;
CREATE TRIGGER IF NOT EXISTS memories_ctx_ad AFTER DELETE ON memories BEGIN
    DELETE FROM memories_ctx_fts WHERE rowid = old.seq;
    {_REFRESH} WHERE rowid IN ({_followers("old")});
END;
"""


def rebuild(conn: Any) -> int:
    """Re-index every memory with its context (repair); returns the number of rows indexed."""
    conn.execute("DELETE FROM memories_ctx_fts")
    conn.execute(
        f"INSERT INTO memories_ctx_fts(rowid, content, context) SELECT m.seq, m.content, {_context_of('m.seq')}"
        " FROM memories m"
    )
    return int(conn.execute("SELECT COUNT(*) FROM memories_ctx_fts").fetchone()[0])


def context_of(conn: Any, seq: int) -> str | None:
    """The indexed context text of one memory (None when it is not indexed)."""
    row = conn.execute("SELECT context FROM memories_ctx_fts WHERE rowid = ?", (seq,)).fetchone()
    return None if row is None else str(row[0])
