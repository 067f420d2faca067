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
Migration 15 (:data:`CONTENTLESS_SCHEMA`) makes the table contentless: it kept a copy of every
memory and of its neighbours' text, about six copies of each turn, and nothing read them.
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


def _window_of(seq: str, skip: str | None = None, column: str = "content") -> str:
    """SQL expression: the context text of memory ``seq``: the live memories around it in its
    thread (leaving out memory ``skip``: the window as it was before that memory was inserted).
    With ``column="seq"``: the same memories' seqs, space-separated (:func:`windows_sql`)."""
    before = _THREAD.format(a="p", b="t")
    after = _THREAD.format(a="n", b="t")
    not_p = f" AND p.seq <> {skip}" if skip else ""
    not_n = f" AND n.seq <> {skip}" if skip else ""
    return (
        "(SELECT COALESCE(group_concat(c, ' '), '') FROM ("
        f"SELECT c FROM (SELECT p.{column} AS c FROM memories t"
        f" JOIN memories p ON {before} AND p.is_deleted = 0 AND p.seq < t.seq{not_p}"
        f" WHERE t.seq = {seq} ORDER BY p.seq DESC LIMIT {CONTEXT_BEFORE})"
        " UNION ALL "
        f"SELECT c FROM (SELECT n.{column} AS c FROM memories t"
        f" JOIN memories n ON {after} AND n.is_deleted = 0 AND n.seq > t.seq{not_n}"
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


_FROZEN = "(SELECT z.context FROM memories_ctx_frozen z WHERE z.seq = {seq})"


def _indexed_context(seq: str, deleted: str, skip: str | None = None) -> str:
    """SQL expression: the context text indexed for memory ``seq`` (``deleted``: its
    ``is_deleted``): a live memory's window, or a forgotten one's window as it was when it was
    forgotten (kept in ``memories_ctx_frozen``: nothing refreshes a forgotten memory's context,
    so it cannot be recomputed)."""
    return f"CASE WHEN {deleted} THEN COALESCE({_FROZEN.format(seq=seq)}, '') ELSE {_window_of(seq, skip)} END"


def _unindex(where: str, skip: str | None = None) -> str:
    """Take the rows of memories matching ``where`` out of the contentless table: FTS5 must be
    told the exact text it indexed, which is :func:`_indexed_context` as the store stands (or
    stood before memory ``skip`` arrived)."""
    return (
        "INSERT INTO memories_ctx_fts(memories_ctx_fts, rowid, content, context)"
        f" SELECT 'delete', m.seq, m.content, {_indexed_context('m.seq', 'm.is_deleted', skip)}"
        f" FROM memories m WHERE {where};"
    )


def _index(where: str) -> str:
    """Index the rows of memories matching ``where`` with their text as it stands."""
    return (
        "INSERT INTO memories_ctx_fts(rowid, content, context)"
        f" SELECT m.seq, m.content, {_indexed_context('m.seq', 'm.is_deleted')} FROM memories m WHERE {where};"
    )


def _freeze(row: str) -> str:
    """Keep a forgotten memory's context as it is now; drop it when the memory is live again."""
    return (
        f"INSERT OR REPLACE INTO memories_ctx_frozen(seq, context) SELECT {row}.seq, {_window_of(row + '.seq')}"
        f" WHERE {row}.is_deleted;\n    DELETE FROM memories_ctx_frozen WHERE seq = {row}.seq AND NOT {row}.is_deleted;"
    )


def _logged(row: str, where: str) -> str:
    return f"INSERT INTO keyword_changes(seq) SELECT {row}.seq UNION SELECT seq FROM memories WHERE {where};"


_CHANGED = """old.content IS NOT new.content OR old.is_deleted IS NOT new.is_deleted
      OR old.source_id IS NOT new.source_id OR old.source_type IS NOT new.source_type
      OR old.project IS NOT new.project OR old.agent_id IS NOT new.agent_id"""
_COLUMNS = "content, is_deleted, source_id, source_type, project, agent_id"


def _contentless_triggers() -> str:
    """Migration 15's triggers: each write takes the rows it changes out of the index with the
    text they were indexed with, then indexes them again with their new text.

    A contentless table keeps no copy to read old text from, so it is recomputed: an update
    or a delete takes its rows out in a BEFORE trigger (the store as it was), an insert in its
    AFTER trigger with the new memory left out of the windows (its seq exists only then).
    The neighbours a change touches are the same set before and after it (the changed memory
    itself is never among them), so the AFTER trigger re-indexes exactly what was taken out.
    What is indexed is exactly what migration 10's triggers indexed, row for row, so BM25's
    statistics and scores are unchanged (tests/search/test_contentless_context.py)."""
    nb_new, nb_old = _neighbours("new"), _neighbours("old")
    both = f"{nb_old} OR {nb_new}"
    return f"""CREATE TRIGGER IF NOT EXISTS memories_ctx_ai AFTER INSERT ON memories BEGIN
    {_unindex(nb_new, skip="new.seq")}
    {_freeze("new")}
    {_index(f"rowid = new.seq OR {nb_new}")}
    {_logged("new", nb_new)}
END;
CREATE TRIGGER IF NOT EXISTS memories_ctx_bu BEFORE UPDATE OF {_COLUMNS} ON memories
    WHEN {_CHANGED}
BEGIN
    {_unindex(f"rowid = old.seq OR {both}")}
END;
CREATE TRIGGER IF NOT EXISTS memories_ctx_au AFTER UPDATE OF {_COLUMNS} ON memories
    WHEN {_CHANGED}
BEGIN
    {_freeze("new")}
    {_index(f"rowid = new.seq OR {both}")}
    {_logged("new", both)}
END;
CREATE TRIGGER IF NOT EXISTS memories_ctx_bd BEFORE DELETE ON memories BEGIN
    {_unindex(f"rowid = old.seq OR {nb_old}")}
END;
CREATE TRIGGER IF NOT EXISTS memories_ctx_ad AFTER DELETE ON memories BEGIN
    DELETE FROM memories_ctx_frozen WHERE seq = old.seq;
    {_index(nb_old)}
    {_logged("old", nb_old)}
END;
"""


CONTENTLESS_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS memories_ctx_frozen (seq INTEGER PRIMARY KEY, context TEXT NOT NULL);
INSERT OR REPLACE INTO memories_ctx_frozen(seq, context)
    SELECT f.rowid, COALESCE(f.context, '') FROM memories_ctx_fts f JOIN memories m ON m.seq = f.rowid
    WHERE m.is_deleted;
DROP TRIGGER IF EXISTS memories_ctx_ai;
DROP TRIGGER IF EXISTS memories_ctx_au;
DROP TRIGGER IF EXISTS memories_ctx_ad;
DROP TABLE IF EXISTS memories_ctx_fts;
CREATE VIRTUAL TABLE memories_ctx_fts USING fts5(content, context, tokenize='unicode61', content='');
{_index("1")}
{_contentless_triggers()}
{RESET_ALL};"""
"""Migration 15: the table keeps its index only, not a copy of every turn and its neighbours.

Each row held the memory's text and the text of up to five neighbours, about six copies of
every turn: the largest part of a store of conversation turns (docs/benchmarks.md). Nothing
reads those copies back -- BM25 needs only the index, and the in-memory keyword mirror reads
a row's text from ``memories`` (:func:`rows_sql`) -- so the table becomes contentless
(``content=''``, which every SQLite with FTS5 supports; not ``contentless_delete``, which
does not keep the statistics BM25 reads exact on delete). The one text that cannot be
recomputed, a forgotten memory's context as it was when forgotten, moves to
``memories_ctx_frozen`` (a few rows in a store people use)."""


def rows_sql(where: str = "") -> str:
    """SQL reading what ``memories_ctx_fts`` indexes, from ``memories``: (seq, content, context,
    project, created_at) per row, ``where`` a condition on ``m`` (e.g. ``m.seq IN (...)``).

    The triggers index exactly this for every memory (forgotten ones included: recall filters
    them), so it is the table's text whether or not the table keeps a copy."""
    cond = f" WHERE {where}" if where else ""
    ctx = _indexed_context("m.seq", "m.is_deleted")
    return f"SELECT m.seq, m.content, {ctx}, m.project, m.created_at FROM memories m{cond}"


def windows_sql() -> str:
    """SQL reading what ``memories_ctx_fts`` indexes as *references*: (seq, the frozen context
    text of a forgotten memory or NULL, the seqs of a live memory's context window
    space-separated or NULL, project, created_at) per memory. A live memory's context is its
    window's contents joined by spaces, and a space always separates tokens, so its tokens are
    the window's memories' own tokens: a bulk build tokenizes each memory once
    (signet.search.keywords.KeywordIndex.load_windows) instead of once more inside each of
    the ~5 contexts it belongs to, which :func:`rows_sql` spells out as text."""
    frozen = _FROZEN.format(seq="m.seq")
    return (
        f"SELECT m.seq, CASE WHEN m.is_deleted THEN COALESCE({frozen}, '') END,"
        f" CASE WHEN m.is_deleted THEN NULL ELSE {_window_of('m.seq', column='seq')} END,"
        " m.project, m.created_at FROM memories m"
    )


def is_contentless(conn: Connection) -> bool:
    """Whether ``memories_ctx_fts`` keeps no copy of its text (migration 15 applied)."""
    row = conn.execute("SELECT sql FROM sqlite_master WHERE name = 'memories_ctx_fts'").fetchone()
    return row is not None and "content=''" in str(row[0]).replace(" ", "")


def rebuild(conn: Connection) -> int:
    """Re-index every memory with its context (repair); returns the number of rows indexed.

    FTS5 starts again from an empty index and statistics (``delete-all``; before migration
    13, ``rebuild`` from the table's copies), then every memory is indexed with its context
    recomputed: taking rows out one by one only subtracts from a damaged statistics record."""
    if is_contentless(conn):
        conn.execute("INSERT INTO memories_ctx_fts(memories_ctx_fts) VALUES ('delete-all')")
        # As before migration 15, every context is recomputed, a forgotten memory's too.
        conn.execute(
            "INSERT OR REPLACE INTO memories_ctx_frozen(seq, context)"
            f" SELECT m.seq, {_window_of('m.seq')} FROM memories m WHERE m.is_deleted"
        )
        conn.execute(_index("1"))
    else:
        conn.execute("DELETE FROM memories_ctx_fts")
        conn.execute(_reindex_all(_window_of))
        conn.execute("INSERT INTO memories_ctx_fts(memories_ctx_fts) VALUES ('rebuild')")
    conn.execute(RESET_ALL)
    return int(conn.execute("SELECT COUNT(*) FROM memories_ctx_fts_docsize").fetchone()[0])


def context_of(conn: Connection, seq: int) -> str | None:
    """The context text indexed for one memory (None when it is not indexed): the table's copy
    before migration 15; after it, the same text computed from ``memories``."""
    if is_contentless(conn):
        if conn.execute("SELECT 1 FROM memories_ctx_fts_docsize WHERE id = ?", (seq,)).fetchone() is None:
            return None
        row = conn.execute(rows_sql("m.seq = ?"), (seq,)).fetchone()
        return None if row is None else str(row[2])
    row = conn.execute("SELECT context FROM memories_ctx_fts WHERE rowid = ?", (seq,)).fetchone()
    return None if row is None else str(row[0])
