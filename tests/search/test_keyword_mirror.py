"""The in-memory keyword index mirrors memories_ctx_fts: same rows, same BM25, through every write.

Real SQLite files, the real writer thread and triggers; FTS5's own ``bm25()`` is the oracle.
"""

from __future__ import annotations

import math
import random
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from signet.search import keyword_mirror
from signet.search.fts import match_of
from signet.search.keyword_mirror import KeywordMirror, _row_data, phrases_of
from signet.search.keywords import KeywordIndex, Phrase
from signet.search.tokens import tokens
from signet.store.database import Database
from signet.store.migrations import MIGRATIONS
from signet.store.sqlite import sqlite3
from signet.store.thread_context import CONTEXT_WEIGHT, rebuild, rows_sql
from tests.fts_damage import unindex

WORDS = [
    "road",
    "trip",
    "climb",
    "climbing",
    "climbs",
    "woodhaven",
    "postgres",
    "deploy",
    "thursday",
    "cafe",
    "Café",
    "naïve",
    "über",
    "x_y",
    "42",
    "2023",
    "ship",
    "shipping",
    "review",
    "merge",
    "the",
    "Straße",
]


@pytest.fixture
def db(tmp_path: Path) -> Iterator[Database]:
    d = Database(tmp_path / "memories.db").open()
    try:
        yield d
    finally:
        d.close()


_n = {"i": 0}


def insert(
    conn: Any,
    content: str,
    source_id: str | None = "s1",
    project: str | None = "p",
    created_at: str = "2024-01-01T00:00:00+00:00",
) -> int:
    _n["i"] += 1
    n = _n["i"]
    conn.execute(
        "INSERT INTO memories(id, content, normalized_content, content_hash, created_at, updated_at, source_type,"
        " source_id, project) VALUES (?, ?, ?, ?, ?, 't', 'hook', ?, ?)",
        (f"m{n}", content, content, f"h{n}", created_at, source_id, project),
    )
    return int(conn.execute("SELECT seq FROM memories WHERE id = ?", (f"m{n}",)).fetchone()[0])


def fts5(conn: Any, terms: list[tuple[str, bool]]) -> dict[int, float]:
    match = match_of(terms)
    sql = f"SELECT rowid, bm25(memories_ctx_fts, 1.0, {CONTEXT_WEIGHT}) FROM memories_ctx_fts WHERE memories_ctx_fts MATCH ?"
    return {int(r[0]): float(r[1]) for r in conn.execute(sql, (match,))}


def fts5_top(conn: Any, terms: list[tuple[str, bool]], k: int) -> list[tuple[int, float]]:
    match = match_of(terms)
    sql = (
        f"SELECT rowid, bm25(memories_ctx_fts, 1.0, {CONTEXT_WEIGHT}) AS r FROM memories_ctx_fts"
        " WHERE memories_ctx_fts MATCH ? ORDER BY r LIMIT ?"
    )
    return [(int(r[0]), float(r[1])) for r in conn.execute(sql, (match, k))]


def mirrored(
    db: Database, mirror: KeywordMirror, terms: list[tuple[str, bool]], k: int = 10**6, **kw: Any
) -> dict[int, float]:
    hits = db.read(lambda c: mirror.search(c, terms, k, **kw))
    assert hits is not None
    return dict(hits)


def assert_same(expected: dict[int, float], got: dict[int, float]) -> None:
    assert set(got) == set(expected)
    for seq, score in expected.items():
        assert math.isclose(got[seq], score, rel_tol=0.0, abs_tol=0.0), (seq, got[seq], score)


QUERIES: list[list[tuple[str, bool]]] = [
    [("climb", True)],
    [("road", False), ("trip", False)],
    [("cafe", False), ("uber", False)],
    [("ship", True), ("42", False), ("thursday", False)],
    [("the", False)],
    [("strasse", False), ("naive", False)],
    [("woodhaven", True), ("review", True), ("merge", True), ("postgres", True)],
]


def check_all(db: Database, mirror: KeywordMirror) -> None:
    assert db.read(lambda c: mirror.catch_up(c, 10**6))  # what the background thread does between writes
    for terms in QUERIES:
        expected = db.read(lambda c, t=terms: fts5(c, t))  # type: ignore[misc]
        assert_same(expected, mirrored(db, mirror, terms))
        # The top k in FTS5's own order, ties at the cut included (lowest rowid first).
        for k in (1, 3, 7, 40):
            top = db.read(lambda c, t=terms, k=k: fts5_top(c, t, k))  # type: ignore[misc]
            assert db.read(lambda c, t=terms, k=k: mirror.search(c, t, k)) == top  # type: ignore[misc]


def postings_by_term(index: KeywordIndex) -> dict[str, list[tuple[int, float]]]:
    """Every term's base postings as (memory seq, weighted tf): term ids and row numbers are
    the index's own, so two indexes compare by what they mean."""
    base, seqs = index._base, index._seq
    return {
        term: [
            (int(seqs[r]), float(f))
            for r, f in zip(
                base.rows[base.offsets[t] : base.offsets[t + 1]],
                base.tf[base.offsets[t] : base.offsets[t + 1]],
                strict=True,
            )
        ]
        for term, t in index._term_id.items()
    }


def assert_fresh_build_matches(db: Database) -> None:
    """A mirror built now (each memory tokenized once, contexts read as windows of seqs)
    answers as FTS5 does and holds the very postings of :meth:`KeywordIndex.load` over the
    rows' texts as ``rows_sql`` spells them out."""
    fresh = KeywordMirror(db)
    fresh.build()
    check_all(db, fresh)
    reference = KeywordIndex(fresh.index.weights)
    db.read(lambda c: reference.load(_row_data(r) for r in c.execute(rows_sql())))
    assert fresh.index.stats() == reference.stats()
    assert postings_by_term(fresh.index) == postings_by_term(reference)
    assert row_facts(fresh.index) == row_facts(reference)


def row_facts(index: KeywordIndex) -> dict[int, tuple[int, str | None, float | None, bool]]:
    """Each row's length, project, creation time (None for none) and liveness, by memory seq."""
    names = {code: name for name, code in index._project_codes._codes.items()}
    created = [None if np.isnan(t) else float(t) for t in index._created[: index._rows]]
    return {
        int(index._seq[r]): (int(index._length[r]), names.get(int(index._project[r])), created[r], bool(index._live[r]))
        for r in range(index._rows)
    }


def fts5_tokenizer() -> Callable[[str], list[str]]:
    """The tokens a real FTS5 ``unicode61`` table makes of a text (the oracle)."""
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE VIRTUAL TABLE t USING fts5(a, tokenize='unicode61')")
    conn.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, 'instance')")

    def tokenise(text: str) -> list[str]:
        conn.execute("DELETE FROM t")
        conn.execute("INSERT INTO t(rowid, a) VALUES (1, ?)", (text,))
        return [r[0] for r in conn.execute("SELECT term FROM v ORDER BY offset")]

    return tokenise


def test_ascii_tokens_are_fts5_tokens() -> None:
    oracle = fts5_tokenizer()

    @settings(max_examples=300, deadline=None)
    @given(st.text(alphabet=st.characters(max_codepoint=0x2FF), max_size=60))
    def check(text: str) -> None:
        assert tokens(text) == oracle(text)

    check()


def test_any_text_is_tokenised_as_fts5_does() -> None:
    """Non-ASCII words go to FTS5 word by word (split at whitespace) and are cached: the
    tokens of the whole text must still be exactly FTS5's for the whole text."""
    oracle = fts5_tokenizer()
    words = st.sampled_from(
        [
            "Café",
            "naïve",
            "ÜBER",
            "straße",
            "don\u2019t",
            "日本語",
            "😀",
            "x_y",
            "İstanbul",
            "Ǆemal",
            "ﬁne",
            "①②",
            "e\u0301",
            "ǅ",
            "ⅷ",
            "\u00a0",
            "\u2003",
            "\u3000",
            "\x1c",
            "\x85",
            "\t",
        ]
    )
    text = st.lists(st.one_of(words, st.text(max_size=8)), max_size=12).map(" ".join)

    @settings(max_examples=300, deadline=None)
    @given(text)
    def check(text: str) -> None:
        assert tokens(text) == oracle(text)

    check()


def test_mirror_follows_every_write_path(db: Database) -> None:
    rng = random.Random(5)

    def line() -> str:
        return " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 9)))

    seqs = db.write(lambda c: [insert(c, line(), source_id=f"s{i % 4}") for i in range(60)])
    mirror = KeywordMirror(db)
    mirror.build()
    check_all(db, mirror)
    # Appends to threads (each rewrites its neighbours' context), edits, forget, recover,
    # thread and project moves, hard deletes: all seen through the log, none by name.
    db.write(lambda c: [insert(c, line(), source_id=f"s{i % 4}") for i in range(20)])
    check_all(db, mirror)
    db.write(lambda c: c.execute("UPDATE memories SET content = 'climbing trip woodhaven' WHERE seq = ?", (seqs[5],)))
    db.write(lambda c: c.execute("UPDATE memories SET is_deleted = 1 WHERE seq IN (?, ?)", (seqs[6], seqs[7])))
    check_all(db, mirror)
    db.write(lambda c: c.execute("UPDATE memories SET is_deleted = 0 WHERE seq = ?", (seqs[6],)))
    db.write(lambda c: c.execute("UPDATE memories SET source_id = 's9', project = 'q' WHERE seq = ?", (seqs[8],)))
    db.write(lambda c: c.execute("DELETE FROM memories WHERE seq IN (?, ?, ?)", (seqs[9], seqs[10], seqs[11])))
    check_all(db, mirror)
    assert_fresh_build_matches(db)  # threads, forgotten rows' frozen context, moves, purges
    assert len(mirror.index) == db.read(lambda c: c.execute("SELECT COUNT(*) FROM memories_ctx_fts").fetchone()[0])
    # The project moved: the mirror's project filter sees it at once.
    assert seqs[8] in mirrored(
        db,
        mirror,
        [
            ("road", False),
            ("trip", False),
            ("climb", True),
            ("ship", True),
            ("review", False),
            ("merge", False),
            ("the", False),
            ("42", False),
            ("cafe", False),
            ("woodhaven", False),
            ("postgres", False),
            ("deploy", False),
            ("thursday", False),
            ("naive", False),
            ("uber", False),
            ("2023", False),
            ("strasse", False),
            ("x", False),
        ],
        project="q",
    )


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    ops=st.lists(
        st.tuples(
            st.sampled_from(["add", "add", "add", "edit", "forget", "recover", "move", "purge", "merge"]),
            st.integers(0, 10**6),
            st.lists(st.sampled_from(WORDS), min_size=0, max_size=8),
        ),
        min_size=1,
        max_size=40,
    )
)
def test_mirror_equals_fts5_after_any_writes(
    tmp_path_factory: pytest.TempPathFactory, ops: list[tuple[str, int, list[str]]]
) -> None:
    db = Database(tmp_path_factory.mktemp("kw") / "m.db").open()
    try:
        db.write(lambda c: [insert(c, f"seed {w}", source_id=f"s{i % 3}") for i, w in enumerate(WORDS)])
        mirror = KeywordMirror(db)
        mirror.build()
        for op, pick, words in ops:
            text = " ".join(words)
            seqs = db.read(lambda c: [int(r[0]) for r in c.execute("SELECT seq FROM memories ORDER BY seq")])
            target = seqs[pick % len(seqs)] if seqs else None
            if op == "add" or target is None:
                db.write(lambda c, t=text, p=pick: insert(c, t, source_id=f"s{p % 3}" if p % 5 else None))  # type: ignore[misc]
            elif op == "edit":
                db.write(
                    lambda c, t=text, s=target: c.execute(  # type: ignore[misc]
                        "UPDATE memories SET content = ? WHERE seq = ?", (t, s)
                    )
                )
            elif op in ("forget", "recover"):
                db.write(
                    lambda c, s=target, d=int(op == "forget"): c.execute(  # type: ignore[misc]
                        "UPDATE memories SET is_deleted = ? WHERE seq = ?", (d, s)
                    )
                )
            elif op == "move":
                db.write(
                    lambda c, s=target, p=pick: c.execute(  # type: ignore[misc]
                        "UPDATE memories SET source_id = ? WHERE seq = ?", (f"s{p % 4}", s)
                    )
                )
            elif op == "purge":
                db.write(lambda c, s=target: c.execute("DELETE FROM memories WHERE seq = ?", (s,)))  # type: ignore[misc]
            else:
                mirror.index.merge()
        check_all(db, mirror)
        assert_fresh_build_matches(db)
    finally:
        db.close()


def test_top_k_filters_and_ties(db: Database) -> None:
    # Identical rows score alike: ties are broken by seq, as documented.
    seqs = db.write(
        lambda c: [
            insert(
                c,
                "deploy on thursday",
                source_id=None,
                project="a" if i % 2 else "b",
                created_at=f"2024-0{1 + i % 3}-10T00:00:00+00:00",
            )
            for i in range(9)
        ]
    )
    mirror = KeywordMirror(db)
    mirror.build()
    top = db.read(lambda c: mirror.search(c, [("deploy", False)], 4))
    assert top is not None and [s for s, _ in top] == seqs[:4]
    in_a = db.read(lambda c: mirror.search(c, [("deploy", False)], 100, project="a"))
    assert in_a is not None and [s for s, _ in in_a] == seqs[1::2]
    feb = (
        time.mktime((2024, 2, 1, 0, 0, 0, 0, 0, 0)) - time.timezone,
        time.mktime((2024, 3, 1, 0, 0, 0, 0, 0, 0)) - time.timezone,
    )
    in_feb = db.read(lambda c: mirror.search(c, [("deploy", False)], 100, created_between=feb))
    assert in_feb is not None and [s for s, _ in in_feb] == seqs[1::3]
    assert db.read(lambda c: mirror.search(c, [("deploy", False)], 100, project="nowhere")) == []


def test_common_phrases_are_looked_up_at_the_rare_ones_rows_and_the_answer_is_fts5s(
    db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    """MaxScore's split (KeywordIndex.search): with a rare phrase in the query, the common ones
    are only looked up at the rows it found, and the top k is still FTS5's, scores to the bit,
    also after writes left stale base postings, a delta and forgotten rows behind."""
    rng = random.Random(11)
    common = ["road", "trip", "deploy", "review", "merge"]

    def text(i: int) -> str:  # each common word in ~15 % of the rows: an IDF that counts
        words = [w for w in common if rng.random() < 0.15] * rng.randint(1, 3) or ["the"]
        words += ["woodhaven"] * (i % 97 == 0) + ["climbing"] * (i % 13 == 0) + ["climbs"] * (i % 29 == 0)
        return " ".join(words)

    seqs = db.write(lambda c: [insert(c, text(i), source_id=None) for i in range(1500)])
    mirror = KeywordMirror(db)
    mirror.build()
    db.write(
        lambda c: [
            c.execute("UPDATE memories SET content = ? WHERE seq = ?", (text(97 * (j % 3)), s))
            for j, s in enumerate(seqs[5::37])
        ]
    )
    db.write(lambda c: [c.execute("UPDATE memories SET is_deleted = 1 WHERE seq = ?", (s,)) for s in seqs[::53]])
    assert db.read(lambda c: mirror.catch_up(c, 10**6))
    assert mirror.index._stale.any() and mirror.index._delta_size > 0

    looked_up: list[int] = []
    tf_at = KeywordIndex._tf_at

    def counting(self: KeywordIndex, *args: Any) -> Any:
        looked_up.append(1)
        return tf_at(self, *args)

    monkeypatch.setattr(KeywordIndex, "_tf_at", counting)
    for terms in (
        [("road", False), ("woodhaven", False), ("trip", False), ("climb", True)],
        [("climb", True), ("merge", False)],
        [("woodhaven", True), ("deploy", False), ("review", False), ("road", False), ("trip", False)],
    ):
        for k in (1, 3, 10, 40):
            top = db.read(lambda c, t=terms, k=k: fts5_top(c, t, k))  # type: ignore[misc]
            assert db.read(lambda c, t=terms, k=k: mirror.search(c, t, k)) == top  # type: ignore[misc]
        assert_same(db.read(lambda c, t=terms: fts5(c, t)), mirrored(db, mirror, terms))  # type: ignore[misc]
    assert looked_up  # the split was taken, not only the full evaluation


def test_queries_fts5_reads_as_phrases_are_left_to_fts5(db: Database) -> None:
    assert phrases_of([("x_y", False)]) is None  # FTS5: the phrase "x y"
    assert phrases_of([("café", False), ("42", False)]) == [Phrase("cafe", False), Phrase("42", False)]
    mirror = KeywordMirror(db)
    mirror.build()
    assert db.read(lambda c: mirror.search(c, [("x_y", False)], 10)) is None


def test_a_search_sees_its_own_snapshot_and_falls_back_on_a_backlog(
    db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    mirror = KeywordMirror(db)
    mirror.build()
    seq = db.write(lambda c: insert(c, "postgres sixteen", source_id=None))
    # Read your writes: the next search applies the log entry first.
    assert list(mirrored(db, mirror, [("postgres", False)])) == [seq]
    db.write(lambda c: [insert(c, f"postgres {i}", source_id=None) for i in range(keyword_mirror.QUERY_CATCH_UP + 1)])
    assert db.read(lambda c: mirror.search(c, [("postgres", False)], 10)) is None  # too far behind: FTS5 answers
    db.read(lambda c: mirror.catch_up(c, 10**6))  # what the background thread does
    assert len(mirrored(db, mirror, [("postgres", False)])) == keyword_mirror.QUERY_CATCH_UP + 2
    # While the background thread applies a backlog, a search waits only briefly: FTS5 answers.
    with mirror._sync:
        assert db.read(lambda c: mirror.search(c, [("postgres", False)], 10)) is None
    assert mirror.fallbacks == 2 and mirror.answered == 2
    assert mirror.fallback_reasons["behind"] == 1 and mirror.fallback_reasons["busy"] == 1


def test_a_search_in_an_older_snapshot_than_the_mirror_answers_without_a_rebuild(db: Database) -> None:
    """Concurrent recalls: a reader whose snapshot began before a write searches after another
    reader moved the mirror past that write. The statistics differ only by time: no rebuild."""
    import threading

    mirror = KeywordMirror(db)
    mirror.build()
    old = db.write(lambda c: insert(c, "postgres road", source_id=None))
    in_snapshot, written, answer = threading.Event(), threading.Event(), {}

    def older_reader() -> None:
        def search(c: Any) -> Any:
            c.execute("SELECT COUNT(*) FROM memories").fetchone()  # the snapshot begins here
            in_snapshot.set()
            written.wait(10)
            return mirror.search(c, [("postgres", False)], 10)

        answer["hits"] = db.read(search)

    t = threading.Thread(target=older_reader)
    t.start()
    assert in_snapshot.wait(10)
    new = db.write(lambda c: insert(c, "postgres trip", source_id=None))
    assert set(mirrored(db, mirror, [("postgres", False)])) == {old, new}  # a newer reader moves the mirror on
    written.set()
    t.join(10)
    hits = answer["hits"]
    assert hits is not None and {seq for seq, _ in hits} >= {old}  # answered; the caller filters by its snapshot
    assert mirror.ready and mirror.rebuilds == 0 and mirror.fallback_reasons["changed_outside"] == 0


def test_repair_rebuild_and_trimmed_log_make_the_mirror_rebuild(db: Database, monkeypatch: pytest.MonkeyPatch) -> None:
    db.write(lambda c: [insert(c, f"road trip {i}") for i in range(10)])
    mirror = KeywordMirror(db)
    mirror.build()
    db.write(rebuild)  # rewrites the whole table outside the triggers: logs "everything"
    assert db.read(lambda c: mirror.search(c, [("road", False)], 10)) is None
    assert not mirror.ready
    mirror.build()
    check_all(db, mirror)

    # The log is trimmed once the mirror has applied it; the newest entry always stays.
    monkeypatch.setattr(keyword_mirror, "LOG_KEEP", 5)
    behind = KeywordMirror(db)
    behind.build()
    db.write(lambda c: [insert(c, f"climbing {i}") for i in range(30)])
    db.read(lambda c: mirror.catch_up(c, 10**6))
    mirror._trim()
    first, last, count = db.read(
        lambda c: c.execute("SELECT MIN(id), MAX(id), COUNT(*) FROM keyword_changes").fetchone()
    )
    assert count < 30 and last >= first
    # A mirror whose cursor was trimmed away (another process) notices and rebuilds.
    assert db.read(lambda c: behind.catch_up(c, 10**6)) is False and not behind.ready
    behind.build()
    check_all(db, behind)


def test_background_thread_builds_and_follows(db: Database) -> None:
    db.write(lambda c: [insert(c, f"merge review {i}") for i in range(5)])
    mirror = KeywordMirror(db)
    mirror.start()
    try:
        assert mirror.wait_ready(10)
        # More than one catch-up step's worth: applied in steps, each in its own snapshot.
        db.write(lambda c: [insert(c, f"merge shipping {i}") for i in range(keyword_mirror.CATCH_UP_STEP)])
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and db.read(mirror._backlog) > 0:
            time.sleep(0.05)
        assert db.read(mirror._backlog) == 0
        check_all(db, mirror)
    finally:
        mirror.stop()


def test_merge_during_writes_keeps_results() -> None:
    index = KeywordIndex((1.0, 0.5))
    from collections import Counter

    from signet.search.keywords import RowData

    def row(seq: int, text: str) -> RowData:
        return RowData(seq, Counter(text.split()), Counter(), "p", None)

    index.apply([row(i, f"alpha beta {i}") for i in range(50)], [])
    before = index.search([Phrase("alpha", False), Phrase("1", True)], 100)
    index.merge()
    assert index.search([Phrase("alpha", False), Phrase("1", True)], 100) == before
    index.apply([row(3, "gamma")], [4])
    index.merge()
    after = dict(index.search([Phrase("alpha", False)], 100))
    assert 3 not in after and 4 not in after and len(after) == 48


@given(st.lists(st.tuples(st.integers(0, 15), st.sampled_from([0.5, 1.0, 1.5, 2.0, 0.75])), min_size=1, max_size=300))
def test_postings_merge_the_same_dense_or_sorted(postings: list[tuple[int, float]]) -> None:
    """Both ways of merging a prefix term's postings give the same rows and the same sums to the
    bit (the scores, and so the FTS5 oracle above, depend on it)."""
    from signet.search import keywords

    rows = np.array([r for r, _ in postings], dtype=np.int64)
    weights = np.array([w for _, w in postings], dtype=np.float32).astype(np.float64)
    dense = keywords._sum_by_row(rows, weights, 16)  # 16 rows or fewer: always the dense pass
    sparse = keywords._sum_by_row(rows, weights, 10**7)  # too many: the sort
    assert dense[0].tolist() == sparse[0].tolist() == sorted(set(rows.tolist()))
    assert dense[1].tobytes() == sparse[1].tobytes()


def test_search_is_the_same_whichever_way_postings_merge(monkeypatch: pytest.MonkeyPatch) -> None:
    from signet.search import keywords
    from signet.search.keywords import RowData

    rng = random.Random(5)
    words = ["alpha", "alps", "altitude", "beta", "bet", "between", "gamma", "gam"]
    index = KeywordIndex((1.0, 0.5))
    index.apply(
        [
            RowData(i, Counter(rng.choices(words, k=rng.randint(1, 9))), Counter(rng.choices(words, k=3)), "p", None)
            for i in range(400)
        ],
        [],
    )
    queries = [
        [Phrase("al", True), Phrase("bet", True)],
        [Phrase("gam", True)],
        [Phrase("be", True), Phrase("x", True)],
    ]
    answers = []
    for dense_from in (1, 10**9):  # every merge dense, then every merge sorted
        monkeypatch.setattr(keywords, "DENSE_FROM", dense_from)
        answers.append([index.search(q, 50) for q in queries])
    assert answers[0] == answers[1] and all(answers[0])


def test_migration_10_text_is_frozen() -> None:
    (m10,) = [m for m in MIGRATIONS if m.version == 10]
    # Stores that applied migration 10 recorded this checksum; changing its text breaks them.
    assert m10.checksum == "5acca485827380664912e7c33a3ddd04a35a89b4c27659358e22c31c50e6a796"


def test_migration_10_on_a_v9_store_logs_from_then_on(tmp_path: Path) -> None:
    from signet.store.migrations import migrate

    conn = sqlite3.connect(str(tmp_path / "m.db"), isolation_level=None)
    migrate(conn, [m for m in MIGRATIONS if m.version <= 9])
    old = [insert(conn, f"road trip {i}") for i in range(4)]
    assert migrate(conn, [m for m in MIGRATIONS if m.version <= 10]) == [10]
    assert conn.execute("SELECT COUNT(*) FROM keyword_changes").fetchone()[0] == 0  # no reindex, no log
    new = insert(conn, "woodhaven")
    # The new row and the two before it (their context now holds it) are logged.
    assert sorted(r[0] for r in conn.execute("SELECT seq FROM keyword_changes")) == [old[2], old[3], new]


def test_a_table_changed_behind_the_triggers_is_left_to_fts5(db: Database) -> None:
    db.write(lambda c: [insert(c, f"road trip {i}") for i in range(6)])
    mirror = KeywordMirror(db)
    mirror.build()
    # Rows taken straight out of the FTS5 table (no trigger, no log): FTS5's own statistics
    # no longer match the mirror, so the search hands over to FTS5 and the mirror rebuilds;
    # rebuilt from the memories, it still disagrees with the damaged index, so FTS5 keeps
    # answering (without rebuilding again) until the repair.
    db.write(lambda c: unindex(c, "m.seq IN (1, 2)"))
    assert db.read(lambda c: mirror.search(c, [("road", False)], 10)) is None
    assert mirror.state().state == "building"
    mirror.build()
    assert mirror.state().state == "drifted"
    assert db.read(lambda c: mirror.search(c, [("road", False)], 10)) is None
    db.write(rebuild)
    assert db.read(lambda c: mirror.search(c, [("road", False)], 10)) is None
    mirror.build()
    check_all(db, mirror)
    assert mirror.state().state == "ready"


def test_fts5_statistics_that_disagree_with_its_content_do_not_loop_rebuilds(db: Database) -> None:
    db.write(lambda c: [insert(c, f"road trip {i}") for i in range(6)])

    def damage(conn: Any) -> None:  # the averages record claims one row more than the content holds
        blob = bytes(conn.execute("SELECT block FROM memories_ctx_fts_data WHERE id = 1").fetchone()[0])
        conn.execute("UPDATE memories_ctx_fts_data SET block = ? WHERE id = 1", (bytes([blob[0] + 1]) + blob[1:],))

    db.write(damage)
    mirror = KeywordMirror(db)
    mirror.build()
    assert mirror.state().state == "drifted"
    assert db.read(lambda c: mirror.search(c, [("road", False)], 10)) is None
    assert mirror.ready  # known drift: FTS5 answers, no rebuild is started
    db.write(rebuild)  # the repair
    assert db.read(lambda c: mirror.search(c, [("road", False)], 10)) is None and not mirror.ready
    mirror.build()
    assert mirror.state().state == "ready"
    check_all(db, mirror)
