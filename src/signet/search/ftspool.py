"""The keyword leg's candidate pool: the FTS5 index first, the row filters second.

The direct query (``FTS JOIN memories WHERE filters ORDER BY bm25 LIMIT k``) joins and
filters *every* matching row before sorting: at 100,000 memories a query with a few common
words matches thousands of rows and took 20 ms p50 where the FTS5 query alone took 6.5 ms
(docs/benchmarks.md, latency). Here the index alone gives its best ``4 * k`` rows, the
filters are applied to those by primary key, and the direct query runs only when the
filters rejected so many that fewer than ``k`` remain while more matches exist. Either way
the answer is the best ``k`` rows that pass the filters, in BM25 order, as before.
"""

from __future__ import annotations

from typing import Any

from signet.search.keyword_mirror import KeywordMirror
from signet.store.sqlite import Connection

OVERFETCH = 4


def keyword_pool(
    conn: Connection,
    table: str,
    rank: str,
    match: str,
    where: str,
    params: list[Any],
    pool: int,
    *,
    selective: bool = False,
) -> list[tuple[str, float]]:
    """(memory id, raw BM25) of the best ``pool`` filtered matches, best first.

    ``table`` is an FTS5 table whose rowid is ``memories.seq``; ``rank`` its BM25 expression;
    ``where`` a filter over ``memories m`` with ``params``. ``selective`` (a project, type,
    tag... filter) goes straight to the filtered query: most of the index's best rows would
    be rejected (measured: 11-13 ms direct, 21 ms index-first, for a project of 2-25%).
    """
    if selective:
        return _filtered(conn, table, rank, match, where, params, pool)
    over = pool * OVERFETCH
    top = conn.execute(
        f"SELECT rowid, {rank} AS r FROM {table} WHERE {table} MATCH ? ORDER BY r LIMIT ?", (match, over)
    ).fetchall()
    if not top:
        return []
    kept = _allowed(conn, [(int(r[0]), float(r[1])) for r in top], where, params)
    if len(kept) >= pool or len(top) < over:
        return kept[:pool]
    # The filters rejected most of the best matches: let SQLite filter while it scans.
    return _filtered(conn, table, rank, match, where, params, pool)


def mirrored_pool(
    conn: Connection,
    mirror: KeywordMirror,
    terms: list[tuple[str, bool]],
    where: str,
    params: list[Any],
    pool: int,
    *,
    project: str | None = None,
    created_between: tuple[float, float] | None = None,
) -> list[tuple[str, float]] | None:
    """:func:`keyword_pool` over ``memories_ctx_fts`` answered by its in-memory mirror
    (signet.search.keyword_mirror): the same rows and BM25 values, without walking FTS5's
    postings. The project and the time window are applied inside the mirror, before its top
    k; the other filters by primary key after it, widened once (16x) when they reject too
    many. None when FTS5 should answer instead: the mirror is not ready or behind, or the
    filters reject nearly every match (the filtered FTS5 query does that in one pass).
    """
    k = pool * OVERFETCH
    for _ in range(2):
        top = mirror.search(conn, terms, k, project=project, created_between=created_between)
        if top is None:
            return None
        kept = _allowed(conn, top, where, params)
        if len(kept) >= pool or len(top) < k:
            return kept[:pool]
        k *= OVERFETCH * OVERFETCH
    return None


def _allowed(conn: Connection, top: list[tuple[int, float]], where: str, params: list[Any]) -> list[tuple[str, float]]:
    """(memory id, score) of the ``top`` (seq, score) rows that pass ``where``, in order."""
    seqs = [seq for seq, _ in top]
    allowed: dict[int, str] = {}
    for i in range(0, len(seqs), 500):
        chunk = seqs[i : i + 500]
        marks = ",".join("?" for _ in chunk)
        allowed.update(
            (int(r[0]), str(r[1]))
            for r in conn.execute(
                f"SELECT m.seq, m.id FROM memories m WHERE m.seq IN ({marks}) AND {where}", (*chunk, *params)
            )
        )
    return [(allowed[seq], score) for seq, score in top if seq in allowed]


def _filtered(
    conn: Connection, table: str, rank: str, match: str, where: str, params: list[Any], pool: int
) -> list[tuple[str, float]]:
    # CROSS JOIN pins the FTS table as the outer loop (with a plain JOIN and no statistics
    # SQLite ran the MATCH once per memory row).
    sql = (
        f"SELECT m.id, {rank} AS r FROM {table} CROSS JOIN memories m ON m.seq = {table}.rowid "
        f"WHERE {table} MATCH ? AND {where} ORDER BY r LIMIT ?"
    )
    return [(str(row[0]), float(row[1])) for row in conn.execute(sql, (match, *params, pool))]
