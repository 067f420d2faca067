"""Thread context index (migration 6) and the who-boost: real SQLite, every write path via triggers."""

from __future__ import annotations

from typing import Any

from signet.search.rank import boost_named, mentioned_who
from signet.store.migrations import MIGRATIONS, migrate
from signet.store.sqlite import sqlite3
from signet.store.thread_context import context_of, rebuild


def _db() -> Any:
    conn = sqlite3.connect(":memory:", isolation_level=None)
    migrate(conn)
    return conn


def _add(conn: Any, n: int, content: str, source_id: str | None = "s1") -> int:
    conn.execute(
        "INSERT INTO memories(id, content, normalized_content, content_hash, created_at, updated_at, source_type,"
        " source_id, project) VALUES (?, ?, ?, ?, 't', 't', 'hook', ?, 'p')",
        (f"m{n}", content, content, f"h{n}", source_id),
    )
    return int(conn.execute("SELECT seq FROM memories WHERE id = ?", (f"m{n}",)).fetchone()[0])


def words(conn: Any, seq: int) -> set[str]:
    return set(str(context_of(conn, seq)).split())


def test_context_is_the_window_around_a_memory_in_its_thread() -> None:
    conn = _db()
    seqs = [_add(conn, i, t) for i, t in enumerate(["road trip", "where did you go", "Woodhaven", "scenery", "bye"])]
    other = _add(conn, 9, "unrelated", source_id=None)
    _add(conn, 10, "elsewhere", source_id="s2")
    # Three before, two after, nothing from another thread or from memories without one.
    assert words(conn, seqs[0]) == {"where", "did", "you", "go", "Woodhaven"}
    assert words(conn, seqs[4]) == {"scenery", "Woodhaven", "where", "did", "you", "go"}
    assert words(conn, seqs[3]) == {"road", "trip", "where", "did", "you", "go", "Woodhaven", "bye"}
    assert context_of(conn, other) == ""
    hits = [r[0] for r in conn.execute("SELECT rowid FROM memories_ctx_fts WHERE memories_ctx_fts MATCH 'road'")]
    assert sorted(hits) == seqs[:4]
    # An appended turn joins the context of the two before it, and no earlier one.
    new = _add(conn, 5, "home again")
    assert "home" in words(conn, seqs[4]) and "home" in words(conn, seqs[3]) and "home" not in words(conn, seqs[2])
    assert words(conn, new) == {"Woodhaven", "scenery", "bye"}


def test_migration_6_text_is_frozen() -> None:
    # Stores that applied migration 6 recorded this checksum; changing its text breaks them.
    (m6,) = [m for m in MIGRATIONS if m.version == 6]
    assert m6.checksum == "979f263a4a46e73dfc31a222276f93773f826d809e6949a450c9869c6ad29fee"


def test_migration_7_text_is_frozen() -> None:
    # Shipped at stop 10; stores that applied it recorded this checksum.
    (m7,) = [m for m in MIGRATIONS if m.version == 7]
    assert m7.checksum == "74c1a9c01c8e47d2e6408d51ab75215fdc42ef2e71eff580b4340011185f4b74"


def test_migration_8_text_is_frozen() -> None:
    # Shipped at stop 11; stores that applied it recorded this checksum.
    (m8,) = [m for m in MIGRATIONS if m.version == 8]
    assert m8.checksum == "67a8fcd3f10e43a23906e18059cfbd02fb6d62e47d8e49e6a17fda5103165161"


def test_migration_8_scopes_dedupe_by_agent_and_project_on_an_existing_store() -> None:
    conn = sqlite3.connect(":memory:", isolation_level=None)
    migrate(conn, [m for m in MIGRATIONS if m.version <= 7])
    _add(conn, 1, "same text")
    dup = (
        "INSERT INTO memories(id, content, normalized_content, content_hash, created_at, updated_at, project,"
        " agent_id) VALUES (?, 'same text', 'same text', 'h1', 't', 't', ?, ?)"
    )
    try:
        conn.execute(dup, ("m2", "other-project", "default"))
        raise AssertionError("before migration 8 the hash was unique store-wide")
    except sqlite3.IntegrityError:
        pass
    assert migrate(conn, [m for m in MIGRATIONS if m.version <= 8]) == [8]
    conn.execute(dup, ("m2", "other-project", "default"))  # another project: its own memory
    conn.execute(dup, ("m3", "p", "another-agent"))  # another agent: its own memory
    try:
        conn.execute(dup, ("m4", "p", "default"))  # same agent, same project: still one
        raise AssertionError("same scope must stay unique")
    except sqlite3.IntegrityError:
        pass
    assert conn.execute("SELECT count(*) FROM memories WHERE content_hash = 'h1'").fetchone()[0] == 3


def test_migration_7_reindexes_a_store_built_by_migration_6() -> None:
    conn = sqlite3.connect(":memory:", isolation_level=None)
    migrate(conn, [m for m in MIGRATIONS if m.version <= 6])
    seqs = [_add(conn, i, t) for i, t in enumerate(["question?", "answer"])]
    assert context_of(conn, seqs[0]) == ""  # migration 6: previous memories only
    assert migrate(conn, [m for m in MIGRATIONS if m.version <= 7]) == [7]
    assert words(conn, seqs[0]) == {"answer"}
    _add(conn, 2, "later")
    assert words(conn, seqs[0]) == {"answer", "later"}  # migration 7's triggers are live


def test_soft_delete_modify_recover_and_hard_delete_refresh_followers() -> None:
    conn = _db()
    seqs = [_add(conn, i, t) for i, t in enumerate(["secret", "b", "c", "d"])]
    conn.execute("UPDATE memories SET is_deleted = 1 WHERE seq = ?", (seqs[0],))
    assert all("secret" not in str(context_of(conn, s)) for s in seqs[1:])
    assert context_of(conn, seqs[0]) == "b c"  # a forgotten memory keeps its own row, never recalled
    conn.execute("UPDATE memories SET is_deleted = 0 WHERE seq = ?", (seqs[0],))
    assert "secret" in str(context_of(conn, seqs[1]))
    conn.execute("UPDATE memories SET content = 'changed' WHERE seq = ?", (seqs[0],))
    assert "changed" in str(context_of(conn, seqs[2])) and "secret" not in str(context_of(conn, seqs[2]))
    conn.execute("DELETE FROM memories WHERE seq = ?", (seqs[0],))
    assert context_of(conn, seqs[0]) is None and words(conn, seqs[1]) == {"c", "d"}
    # A later memory leaving refreshes the ones before it too.
    conn.execute("UPDATE memories SET is_deleted = 1 WHERE seq = ?", (seqs[2],))
    assert words(conn, seqs[1]) == {"d"}
    conn.execute("UPDATE memories SET is_deleted = 0 WHERE seq = ?", (seqs[2],))
    assert rebuild(conn) == 3 and words(conn, seqs[1]) == {"c", "d"}


def test_who_boost() -> None:
    assert mentioned_who("What did Caroline research?", {"Caroline", "Melanie", None}) == {"Caroline"}
    assert mentioned_who("what did mary do", {"Mary Ann"}) == {"Mary Ann"}
    scores = {"a": 0.5, "b": 0.5, "c": 0.95}
    boosted = boost_named(scores, {"a": "Caroline", "b": "Melanie", "c": "Caroline"}, {"Caroline"})
    assert boosted["a"] > boosted["b"] == 0.5 and boosted["c"] == 1.0
    assert boost_named(scores, {}, set()) == scores
