"""Stream the store as an export file (signet.memory.export_format), from one read snapshot.

The export reads on a connection of its own, inside one read transaction: the file is the
store as of one instant while the daemon keeps writing (WAL readers never block the writer),
and a long export holds none of the daemon's pooled readers. Lines are produced one at a
time, so the size of the store never sits in memory.
"""

from __future__ import annotations

import base64
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from signet import __version__
from signet.memory.export_format import BOOL_COLUMNS, FORMAT, MEMORY_COLUMNS, VERSION, dump_line
from signet.store import vector_blob
from signet.store.database import connect
from signet.store.records import history_contents, load_tags
from signet.store.sqlite import sqlite3

log = logging.getLogger(__name__)

_FETCH = 256


def _b64(blob: bytes | None) -> str | None:
    return None if blob is None else base64.b64encode(bytes(blob)).decode("ascii")


def _rows(conn: Any, sql: str, params: tuple[Any, ...] = ()) -> Iterator[Any]:
    cur = conn.execute(sql, params)
    while batch := cur.fetchmany(_FETCH):
        yield from batch


def _memory_filter(deleted: bool) -> str:
    return "" if deleted else " WHERE is_deleted = 0"


def counts(conn: Any, *, vectors: bool, deleted: bool) -> dict[str, int]:
    """How many lines and rows of each kind the export holds (the header's ``counts``)."""
    where = _memory_filter(deleted)
    scope = f"SELECT id FROM memories{where}"

    def one(sql: str) -> int:
        return int(conn.execute(sql).fetchone()[0])

    return {
        "entities": one("SELECT COUNT(*) FROM entities"),
        "relations": one("SELECT COUNT(*) FROM relations"),
        "memories": one(f"SELECT COUNT(*) FROM memories{where}"),
        "history": one(f"SELECT COUNT(*) FROM memory_history WHERE memory_id IN ({scope})"),
        "mentions": one(f"SELECT COUNT(*) FROM memory_entity_mentions WHERE memory_id IN ({scope})"),
        "vectors": one(f"SELECT COUNT(*) FROM memories m JOIN embeddings e ON e.content_hash = m.content_hash{where}")
        if vectors
        else 0,
        "retirements": one("SELECT COUNT(*) FROM memory_retirements"),
    }


def _columns(row: Any, *skip: str) -> dict[str, Any]:
    """A row's columns by name. PostgreSQL's tables carry ``rowid`` as a real (generated)
    column where SQLite's is hidden from ``SELECT *`` (signet.store.pg_schema): left out, so
    both stores export the same lines."""
    return {k: row[k] for k in row.keys() if k != "rowid" and k not in skip}  # noqa: SIM118 - sqlite3.Row is not a mapping


def _entity(row: Any) -> dict[str, Any]:
    out = _columns(row)
    out["embedding"] = _b64(row["embedding"])
    out["kind"] = "entity"
    return out


def _relation(row: Any) -> dict[str, Any]:
    out = _columns(row)
    out["kind"] = "relation"
    return out


def _retirement(row: Any) -> dict[str, Any]:
    out = _columns(row)
    out["project"] = out["project"] or None  # '' in the ledger's key: no project
    out["kind"] = "retirement"
    return out


def _memory(conn: Any, row: Any, vectors: bool) -> dict[str, Any]:
    mem = {k: row[k] for k in MEMORY_COLUMNS if k != "embedding_model" or vectors}
    mem["tags"] = load_tags(row["tags"])
    for k in BOOL_COLUMNS:
        mem[k] = bool(mem[k])
    events = list(
        conn.execute("SELECT * FROM memory_history WHERE memory_id = ? ORDER BY created_at, rowid", (row["id"],))
    )
    history = [
        _columns(h, "memory_id") | {"new_content": text}
        for h, text in zip(events, history_contents(events, row["content"]), strict=True)
    ]
    mentions = [
        _columns(m, "memory_id")
        for m in conn.execute(
            "SELECT * FROM memory_entity_mentions WHERE memory_id = ? ORDER BY entity_id", (row["id"],)
        )
    ]
    line: dict[str, Any] = {"kind": "memory", "memory": mem, "history": history, "mentions": mentions}
    if vectors:
        e = conn.execute(
            "SELECT id, model, provider, dimensions, source_id, created_at, vector FROM embeddings WHERE content_hash = ?",
            (row["content_hash"],),
        ).fetchone()
        line["vector"] = (
            None
            if e is None
            else {
                "id": e["id"],
                "model": e["model"],
                "provider": e["provider"],
                "dimensions": e["dimensions"],
                "source_id": e["source_id"],
                "created_at": e["created_at"],
                "data": _b64(vector_blob.float32_bytes(e["vector"], int(e["dimensions"]))),
            }
        )
    return line


def export_lines(
    source: Path | Any, *, vectors: bool, deleted: bool, agent: str | None, embedding_model: str | None
) -> Iterator[bytes]:
    """The export file, line by line (bytes, newline-terminated), from one read snapshot of
    ``source``: the SQLite database at that path, or a store with ``snapshot()`` (PostgreSQL,
    signet.store.postgres: a connection of its own in one REPEATABLE READ transaction).
    ``deleted``: include forgotten (tombstoned) memories, so a round trip is lossless;
    ``vectors``: include each memory's embedding.

    The snapshot is taken and the header made before this returns, so a database that cannot
    be read fails here (an HTTP error), not half-way through a streamed answer."""
    conn = connect(source, readonly=True) if isinstance(source, Path) else source.snapshot()
    try:
        if isinstance(source, Path):
            conn.execute("BEGIN")  # one snapshot for the header's counts and every line after it
        schema = conn.execute("SELECT COALESCE(MAX(version), 0) FROM schema_migrations").fetchone()[0]
        header = dump_line(
            {
                "kind": "header",
                "format": FORMAT,
                "version": VERSION,
                "schema_version": int(schema),
                "signet": __version__,
                "workspace": {"agent": agent, "embedding_model": embedding_model if vectors else None},
                "options": {"vectors": vectors, "deleted": deleted},
                "counts": counts(conn, vectors=vectors, deleted=deleted),
            }
        )
    except BaseException:
        _close(conn)
        raise
    return _stream(conn, header, vectors=vectors, deleted=deleted)


def _stream(conn: Any, header: bytes, *, vectors: bool, deleted: bool) -> Iterator[bytes]:
    try:
        yield header
        for row in _rows(conn, "SELECT * FROM entities ORDER BY id"):
            yield dump_line(_entity(row))
        for row in _rows(conn, "SELECT * FROM relations ORDER BY id"):
            yield dump_line(_relation(row))
        for row in _rows(conn, "SELECT * FROM memory_retirements ORDER BY retired_at, rowid"):
            yield dump_line(_retirement(row))
        for row in _rows(conn, f"SELECT * FROM memories{_memory_filter(deleted)} ORDER BY seq"):
            yield dump_line(_memory(conn, row, vectors))
    finally:
        _close(conn)


def _close(conn: Any) -> None:
    try:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
    except sqlite3.Error as exc:  # a damaged file: the error that ended the export is the one to see
        log.debug("rolling back the export's read snapshot failed: %s", exc)
    conn.close()
