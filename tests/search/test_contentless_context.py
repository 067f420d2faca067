"""Migration 15 (a contentless thread-context index) indexes exactly what the table with copies
indexed: same terms, same document and token counts per column, same row lengths and averages,
so BM25 ranks every query as before. Checked by running the same writes on a store stopped at
migration 12 and on a current one, after every write; and by migrating a store that has
history (forgotten memories with stale contexts) and comparing before and after."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from signet.search.keyword_mirror import _varints
from signet.store.migrations import MIGRATIONS, migrate
from signet.store.sqlite import sqlite3
from signet.store.thread_context import CONTEXT_WEIGHT, context_of, is_contentless, rebuild
from tests.search.test_keyword_mirror import WORDS

OPS = ["add", "add", "add", "edit", "forget", "recover", "move", "purge", "add_forgotten"]


def _store(upto: int | None = None) -> Any:
    conn = sqlite3.connect(":memory:", isolation_level=None)
    migrate(conn, [m for m in MIGRATIONS if upto is None or m.version <= upto])
    return conn


def _insert(conn: Any, n: int, content: str, source_id: str | None, deleted: int = 0) -> None:
    conn.execute(
        "INSERT INTO memories(id, content, normalized_content, content_hash, created_at, updated_at, source_type,"
        " source_id, project, is_deleted) VALUES (?, ?, ?, ?, 't', 't', 'hook', ?, 'p', ?)",
        (f"m{n}", content, content, f"h{n}", source_id, deleted),
    )


def _apply(conn: Any, n: int, op: str, pick: int, text: str) -> None:
    seqs = [int(r[0]) for r in conn.execute("SELECT seq FROM memories ORDER BY seq")]
    target = seqs[pick % len(seqs)] if seqs else None
    source = f"s{pick % 3}" if pick % 5 else None
    if op.startswith("add") or target is None:
        _insert(conn, n, text, source, deleted=int(op == "add_forgotten"))
    elif op == "edit":
        conn.execute("UPDATE memories SET content = ? WHERE seq = ?", (text, target))
    elif op in ("forget", "recover"):
        conn.execute("UPDATE memories SET is_deleted = ? WHERE seq = ?", (int(op == "forget"), target))
    elif op == "move":
        conn.execute("UPDATE memories SET source_id = ? WHERE seq = ?", (f"s{pick % 4}", target))
    else:
        conn.execute("DELETE FROM memories WHERE seq = ?", (target,))


def index_of(conn: Any) -> tuple[list[Any], list[Any], list[int]]:
    """What BM25 reads: per term and column its document and token counts, each row's column
    lengths, and the averages record (rows and tokens per column)."""
    conn.execute("DROP TABLE IF EXISTS temp.vocab")
    conn.execute("CREATE VIRTUAL TABLE temp.vocab USING fts5vocab(main, memories_ctx_fts, 'col')")
    vocab = conn.execute("SELECT term, col, doc, cnt FROM temp.vocab ORDER BY term, col").fetchall()
    sizes = conn.execute("SELECT id, sz FROM memories_ctx_fts_docsize ORDER BY id").fetchall()
    averages = _varints(bytes(conn.execute("SELECT block FROM memories_ctx_fts_data WHERE id = 1").fetchone()[0]))
    return vocab, sizes, averages or [0, 0, 0]  # an emptied index may drop the record: all zeros


def ranked(conn: Any, word: str) -> list[tuple[int, float]]:
    sql = (
        f"SELECT rowid, round(bm25(memories_ctx_fts, 1.0, {CONTEXT_WEIGHT}), 9) FROM memories_ctx_fts"
        " WHERE memories_ctx_fts MATCH ? ORDER BY rowid"
    )
    return [(int(r[0]), float(r[1])) for r in conn.execute(sql, (f'"{word}"',))]


writes = st.lists(
    st.tuples(st.sampled_from(OPS), st.integers(0, 10**6), st.lists(st.sampled_from(WORDS), max_size=8)),
    min_size=1,
    max_size=40,
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=writes)
def test_the_contentless_index_equals_the_one_with_copies_after_any_writes(
    ops: list[tuple[str, int, list[str]]],
) -> None:
    old, new = _store(12), _store()
    assert not is_contentless(old) and is_contentless(new)
    for n, (op, pick, words) in enumerate(ops):
        for conn in (old, new):
            _apply(conn, n, op, pick, " ".join(words))
        assert index_of(new) == index_of(old), (n, op)
    for word in ("road", "trip", "woodhaven", "deploy"):
        assert ranked(new, word) == ranked(old, word)
    seqs = [int(r[0]) for r in old.execute("SELECT seq FROM memories")]
    assert all(context_of(new, s) == context_of(old, s) for s in seqs)
    # The repair recomputes every context (a forgotten memory's too) on both layouts alike.
    assert rebuild(new) == rebuild(old)
    assert index_of(new) == index_of(old)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=writes)
def test_migration_15_keeps_the_index_of_a_store_with_history(ops: list[tuple[str, int, list[str]]]) -> None:
    conn = _store(12)
    for n, (op, pick, words) in enumerate(ops):
        _apply(conn, n, op, pick, " ".join(words))
    before = index_of(conn)
    contexts = {int(r[0]): context_of(conn, int(r[0])) for r in conn.execute("SELECT seq FROM memories")}
    assert 15 in migrate(conn)
    assert is_contentless(conn) and index_of(conn) == before
    assert {s: context_of(conn, s) for s in contexts} == contexts
    _apply(conn, len(ops), "add", 1, "road trip")  # and the new triggers carry on from there
    reference = _store(12)
    for n, (op, pick, words) in enumerate([*ops, ("add", 1, ["road", "trip"])]):
        _apply(reference, n, op, pick, " ".join(words))
    assert index_of(conn) == index_of(reference)


def test_the_table_keeps_no_copy_of_the_text() -> None:
    conn = _store()
    _insert(conn, 1, "a long turn about the road trip to Woodhaven", "s1")
    _insert(conn, 2, "the answer", "s1")
    assert conn.execute("SELECT content, context FROM memories_ctx_fts").fetchall() == [(None, None), (None, None)]
    assert context_of(conn, 2) == "a long turn about the road trip to Woodhaven"
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE name LIKE 'memories_ctx_fts%'")}
    assert "memories_ctx_fts_content" not in tables


def test_opening_an_older_store_file_gives_the_dropped_copies_back(tmp_path: Any) -> None:
    """The upgrade itself shrinks the file: the copies' pages do not wait on the freelist for a
    purge that may never come (they were ~45% of a store of conversation turns)."""
    from signet.config import BackupSettings
    from signet.store.database import Database, connect

    path = tmp_path / "memories.db"
    conn = connect(path)
    migrate(conn, [m for m in MIGRATIONS if m.version < 15])
    conn.execute("BEGIN")
    for n in range(400):
        _insert(conn, n, " ".join(WORDS[(n + k) % len(WORDS)] for k in range(60)), f"s{n // 20}")
    conn.execute("COMMIT")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    before = path.stat().st_size
    db = Database(path, backups=BackupSettings(min_free_mb=0)).open()
    try:
        assert db.read(lambda c: c.execute("PRAGMA freelist_count").fetchone()[0]) == 0
        assert db.read(lambda c: c.execute("SELECT count(*) FROM memories").fetchone()[0]) == 400
    finally:
        db.close()
    assert path.stat().st_size < before * 0.8, (before, path.stat().st_size)
    assert list((tmp_path / "backups").glob("*pre-migration-15*"))
