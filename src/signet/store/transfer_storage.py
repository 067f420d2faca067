"""Copy a store between engines (SQLite file <-> PostgreSQL database), then prove the copy.

Why a table copy and not ``signet export``/``import``: the export carries memories and the
graph, a store holds much more (jobs, sessions, transcripts, documents, tasks, telemetry,
auth state). Every table both schemas share is copied row for row, with the ``rowid`` each
row had (the stores key the FTS indexes, the thread-context index and the keyword change
log on it), inside one transaction on the target: a copy that fails leaves the target empty.

Not copied, because each engine builds its own (docs/team.md):

- SQLite: the FTS5 tables (``memories_fts``, ``transcript_turns_fts``, ``memories_ctx_fts``)
  and their shadow tables (``*_data``, ``*_idx``, ``*_docsize``, ``*_config``, ``*_content``),
  filled by the target's own triggers as the rows arrive; ``sqlite_sequence`` (SQLite
  advances it itself).
- PostgreSQL: the generated ``fts`` ``tsvector`` columns (computed on insert); the identity
  sequences are moved past the copied ids afterwards.
- both: ``keyword_changes`` (the keyword mirror's change log, written by the target's
  triggers), ``memories_ctx_frozen`` (the thread-context index's record of a forgotten
  memory's context: SQLite's triggers write it, PostgreSQL has no thread-context index yet), ``schema_migrations`` / ``schema_migrations_audit`` (each engine records its own
  migrations; both must be at the same schema version, checked before copying).
- PostgreSQL only: the tables several daemons share (:data:`PG_SEVERAL_DAEMONS`: the change
  feed's log, embedding claims, the shared token secret, the rate limits' counts).

The proof (:func:`table_digest`, the same code for both engines): per table, the row count
and a SHA-256 over ``rowid`` and every copied column, rows ordered by ``rowid`` (an integer
on both engines, so no collation differs), each value tagged by kind and length-prefixed:
``n`` NULL, ``i`` integer (booleans as 0/1), ``f`` float (``repr``, which round-trips a
double exactly), ``t`` text (UTF-8), ``b`` bytes.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import psycopg
from psycopg import sql as pgsql

from signet.errors import Conflict, InvalidRequest, StorageError
from signet.store import pg_migrations, space
from signet.store.migrations import migrate as sqlite_migrate
from signet.store.pg_url import Target, scrub
from signet.store.sqlite import sqlite3

log = logging.getLogger(__name__)

PG_SEVERAL_DAEMONS = ("signet_changes", "signet_embedding_claims", "signet_auth_keys", "signet_rate_hits")
"""PostgreSQL's own tables for several daemons (migrations 31 and 35): the change feed's log,
the embedding claims and the rate limits' counts are about the daemons running now; the shared
token secret stays with the database (a SQLite workspace signs with its own file)."""

BATCH_ROWS = 1000
"""Rows read from the source and written to the target at a time (progress advances per batch)."""

NOT_COPIED = frozenset(
    {
        "keyword_changes",
        "memories_ctx_frozen",
        "schema_migrations",
        "schema_migrations_audit",
        "sqlite_sequence",
        *PG_SEVERAL_DAEMONS,
    }
)
"""Tables each engine keeps for itself (see the module docstring)."""

Engine = Literal["sqlite", "postgres"]


@dataclass(frozen=True)
class Table:
    """One table to copy: its data columns (shared by both schemas) and whether ``rowid`` is a
    column of its own (copied) or another name for the integer primary key (not)."""

    name: str
    columns: tuple[str, ...]
    own_rowid: bool
    self_refs: tuple[str, ...] = ()
    """Columns referencing this same table (copied in a second pass on PostgreSQL, whose
    foreign keys are checked per statement)."""


@dataclass
class TableResult:
    name: str
    source_rows: int
    target_rows: int
    source_hash: str
    target_hash: str

    @property
    def same(self) -> bool:
        return self.source_rows == self.target_rows and self.source_hash == self.target_hash

    def as_dict(self) -> dict[str, Any]:
        return {
            "table": self.name,
            "source_rows": self.source_rows,
            "target_rows": self.target_rows,
            "source_sha256": self.source_hash,
            "target_sha256": self.target_hash,
            "same": self.same,
        }


@dataclass
class TransferReport:
    source: str
    target: str
    dry_run: bool
    tables: list[TableResult] = field(default_factory=list)
    not_copied: list[str] = field(default_factory=list)

    @property
    def rows(self) -> int:
        return sum(t.source_rows for t in self.tables)

    @property
    def mismatched(self) -> list[str]:
        return [] if self.dry_run else [t.name for t in self.tables if not t.same]

    def as_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "target": self.target,
            "dry_run": self.dry_run,
            "rows": self.rows,
            "verified": not self.dry_run and not self.mismatched,
            "mismatched": self.mismatched,
            "not_copied": self.not_copied,
            "tables": [t.as_dict() for t in self.tables],
        }


# -- the proof ---------------------------------------------------------------------------------


def _norm(value: Any) -> bytes:
    if value is None:
        return b"n"
    if isinstance(value, bool | int):
        raw, tag = str(int(value)).encode(), b"i"
    elif isinstance(value, float):
        raw, tag = repr(value).encode(), b"f"
    elif isinstance(value, str):
        raw, tag = value.encode("utf-8", "surrogatepass"), b"t"
    elif isinstance(value, bytes | bytearray | memoryview):
        raw, tag = bytes(value), b"b"
    else:  # the schemas hold only the four kinds above
        raise TypeError(f"cannot hash a {type(value).__name__} value")
    return tag + str(len(raw)).encode() + b":" + raw


def table_digest(rows: Iterator[Sequence[Any]]) -> tuple[int, str]:
    """Row count and SHA-256 of ``rows`` (``rowid`` first, then the columns), as documented above."""
    h = hashlib.sha256()
    n = 0
    for row in rows:
        n += 1
        h.update(b"(" + b"".join(_norm(v) for v in row) + b")")
    return n, h.hexdigest()


# -- the two ends ------------------------------------------------------------------------------


def _q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


class SqliteEnd:
    """A SQLite store file, read in one snapshot (source) or written in one transaction (target)."""

    engine: Engine = "sqlite"

    def __init__(self, path: Path, *, create: bool, dry_run: bool = False) -> None:
        self.path = path
        self.shown = f"sqlite:{path}"
        if not create and not path.is_file():
            raise InvalidRequest(f"{path} is not a SQLite store: no such file")
        try:
            if create and dry_run and not path.exists():  # a dry run creates nothing: an empty store
                self.conn = sqlite3.connect(":memory:", isolation_level=None)
            elif create:
                path.parent.mkdir(parents=True, exist_ok=True)
                self.conn = sqlite3.connect(str(path), isolation_level=None, check_same_thread=False, timeout=30.0)
            else:
                self.conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, isolation_level=None)
            self.conn.execute("PRAGMA busy_timeout = 30000")
            self.conn.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
        except sqlite3.Error as exc:
            raise StorageError(f"cannot open {path} as a SQLite store: {exc}") from None

    def _virtual(self) -> list[str]:
        return [
            str(r[0])
            for r in self.conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND sql LIKE 'CREATE VIRTUAL TABLE%'"
            )
        ]

    def engine_tables(self) -> list[str]:
        """The FTS5 tables and their shadow tables (built by this engine, never copied)."""
        virtual = self._virtual()
        names = [str(r[0]) for r in self.conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        return sorted(n for n in names if any(n == v or n.startswith(v + "_") for v in virtual))

    def tables(self) -> dict[str, list[str]]:
        skip = set(self.engine_tables()) | NOT_COPIED
        out: dict[str, list[str]] = {}
        for (name,) in self.conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name"):
            if name in skip or str(name).startswith("sqlite_"):
                continue
            out[str(name)] = [str(r[1]) for r in self.conn.execute(f"PRAGMA table_info({_q(name)})")]
        return out

    def schema_version(self) -> int:
        try:
            return int(self.conn.execute("SELECT COALESCE(MAX(version), 0) FROM schema_migrations").fetchone()[0])
        except sqlite3.OperationalError:
            return 0

    def begin_snapshot(self) -> None:
        self.conn.execute("BEGIN")
        self.conn.execute("SELECT 1 FROM sqlite_master LIMIT 1").fetchall()  # the snapshot starts here

    def count(self, table: str) -> int:
        return int(self.conn.execute(f"SELECT COUNT(*) FROM {_q(table)}").fetchone()[0])

    def rows(self, table: Table) -> Iterator[Sequence[Any]]:
        cols = ", ".join(["rowid", *(_q(c) for c in table.columns)])
        cur = self.conn.execute(f"SELECT {cols} FROM {_q(table.name)} ORDER BY rowid")
        while batch := cur.fetchmany(BATCH_ROWS):
            yield from batch

    # target side
    def prepare(self) -> None:
        """Bring the file to the current schema (the same migrations the daemon applies), set
        up as the daemon sets up a new store (signet.store.database.connect)."""
        space.prepare_new(self.conn)
        self.conn.execute("PRAGMA journal_mode = WAL")
        sqlite_migrate(self.conn)

    def begin_write(self) -> None:
        self.conn.execute("PRAGMA foreign_keys = OFF")  # rows arrive table by table
        self.conn.execute("BEGIN IMMEDIATE")

    def insert(self, table: Table, batch: list[Sequence[Any]]) -> None:
        cols = [*(["rowid"] if table.own_rowid else []), *table.columns]
        marks = ", ".join("?" for _ in cols)
        sql = f"INSERT INTO {_q(table.name)}({', '.join(_q(c) if c != 'rowid' else c for c in cols)}) VALUES ({marks})"
        self.conn.executemany(sql, [row if table.own_rowid else row[1:] for row in batch])

    def finish_table(self, table: Table, refs: list[tuple[Any, ...]]) -> None:
        return None

    def commit(self) -> None:
        self.conn.execute("COMMIT")
        problems = self.conn.execute("PRAGMA foreign_key_check").fetchall()
        if problems:
            raise StorageError(f"the copy left {len(problems)} broken references (first in table {problems[0][0]})")

    def rollback(self) -> None:
        if self.conn.in_transaction:
            self.conn.execute("ROLLBACK")

    def end_snapshot(self) -> None:
        if self.conn.in_transaction:
            self.conn.execute("ROLLBACK")

    def close(self) -> None:
        self.conn.close()


class PostgresEnd:
    """A PostgreSQL database, read in one REPEATABLE READ snapshot (source) or written in one
    transaction (target). Every error is reported with the password scrubbed out."""

    engine: Engine = "postgres"

    def __init__(self, target: Target) -> None:
        self.target = target
        self.shown = target.shown
        kwargs: dict[str, Any] = {"autocommit": True}
        if target.password:
            kwargs["password"] = target.password
        try:
            self.conn: psycopg.Connection[Any] = psycopg.connect(target.conninfo, connect_timeout=15, **kwargs)
        except psycopg.Error as exc:
            raise self.error(exc) from None

    def error(self, exc: BaseException) -> StorageError:
        return StorageError(f"PostgreSQL at {self.shown}: {scrub(str(exc), self.target.password)}".strip())

    def _columns(self) -> dict[str, list[tuple[str, str, str]]]:
        out: dict[str, list[tuple[str, str, str]]] = {}
        for table, col, generated, identity in self.conn.execute(
            "SELECT c.table_name, c.column_name, c.is_generated, c.is_identity FROM information_schema.columns c"
            " JOIN information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name"
            " WHERE c.table_schema = current_schema() AND t.table_type = 'BASE TABLE'"  # not the views
            " ORDER BY c.table_name, c.ordinal_position"
        ):
            out.setdefault(str(table), []).append((str(col), str(generated), str(identity)))
        return out

    def tables(self) -> dict[str, list[str]]:
        return {
            t: [c for c, generated, _ in cols if generated != "ALWAYS"]
            for t, cols in self._columns().items()
            if t not in NOT_COPIED
        }

    def generated_rowid(self) -> set[str]:
        """Tables whose ``rowid`` is generated from the integer primary key (SQLite's alias)."""
        return {t for t, cols in self._columns().items() if any(c == "rowid" and g == "ALWAYS" for c, g, _ in cols)}

    def identities(self) -> list[tuple[str, str]]:
        return [(t, c) for t, cols in self._columns().items() for c, _, ident in cols if ident == "YES"]

    def foreign_keys(self) -> list[tuple[str, str, str]]:
        """(table, column, referenced table) for every foreign key."""
        rows = self.conn.execute(
            "SELECT c.conrelid::regclass::text, a.attname, c.confrelid::regclass::text"
            " FROM pg_constraint c JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = ANY (c.conkey)"
            " WHERE c.contype = 'f' AND c.connamespace = current_schema()::regnamespace"
        ).fetchall()
        return [(str(a).strip('"'), str(b), str(c).strip('"')) for a, b, c in rows]

    def schema_version(self) -> int:
        try:
            row = self.conn.execute("SELECT COALESCE(MAX(version), 0) FROM schema_migrations").fetchone()
        except psycopg.errors.UndefinedTable:
            return 0
        return int(row[0]) if row else 0

    def engine_tables(self) -> list[str]:
        return []

    def begin_snapshot(self) -> None:
        self.conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")

    def count(self, table: str) -> int:
        row = self.conn.execute(pgsql.SQL("SELECT COUNT(*) FROM {}").format(pgsql.Identifier(table))).fetchone()
        return int(row[0]) if row else 0

    def rows(self, table: Table) -> Iterator[Sequence[Any]]:
        query = pgsql.SQL("SELECT {} FROM {} ORDER BY rowid").format(
            pgsql.SQL(", ").join(pgsql.Identifier(c) for c in ("rowid", *table.columns)),
            pgsql.Identifier(table.name),
        )
        own = self.conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
        if own:  # a server-side cursor lives in a transaction
            self.conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
        try:
            with self.conn.cursor(name="signet_copy") as cur:  # server-side: streamed, not loaded whole
                cur.itersize = BATCH_ROWS
                cur.execute(query)
                yield from cur
        finally:
            if own:
                self.conn.execute("ROLLBACK")

    # target side
    def prepare(self) -> None:
        pg_migrations.migrate(self.conn)

    def begin_write(self) -> None:
        self.conn.execute("BEGIN")

    def insert(self, table: Table, batch: list[Sequence[Any]]) -> None:
        cols = [*(["rowid"] if table.own_rowid else []), *table.columns]
        refs = {i for i, c in enumerate(cols) if c in table.self_refs}
        copy_sql = pgsql.SQL("COPY {} ({}) FROM STDIN").format(
            pgsql.Identifier(table.name), pgsql.SQL(", ").join(pgsql.Identifier(c) for c in cols)
        )
        with self.conn.cursor().copy(copy_sql) as copy:
            for row in batch:
                values = row if table.own_rowid else row[1:]
                copy.write_row([None if i in refs else v for i, v in enumerate(values)])

    def finish_table(self, table: Table, refs: list[tuple[Any, ...]]) -> None:
        """Set the self-referencing columns once every row of the table is in."""
        for col_index, col in enumerate(table.self_refs):
            stmt = pgsql.SQL("UPDATE {} SET {} = %s WHERE rowid = %s").format(
                pgsql.Identifier(table.name), pgsql.Identifier(col)
            )
            pairs = [(r[1 + col_index], r[0]) for r in refs if r[1 + col_index] is not None]
            if pairs:
                self.conn.cursor().executemany(stmt, pairs)

    def commit(self) -> None:
        for table, col in self.identities():  # new rows must not reuse a copied id
            self.conn.execute(
                pgsql.SQL(
                    "SELECT setval(pg_get_serial_sequence(%s, %s), COALESCE(MAX({c}), 0) + 1, false) FROM {t}"
                ).format(c=pgsql.Identifier(col), t=pgsql.Identifier(table)),
                (_q(table), col),
            )
        self.conn.execute("COMMIT")

    def rollback(self) -> None:
        if self.conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE and not self.conn.closed:
            self.conn.execute("ROLLBACK")

    def end_snapshot(self) -> None:
        self.rollback()

    def close(self) -> None:
        self.conn.close()


AnyEnd = SqliteEnd | PostgresEnd

# -- the copy ----------------------------------------------------------------------------------


def _plan(source: AnyEnd, target: AnyEnd, target_tables: dict[str, list[str]]) -> list[Table]:
    """The tables to copy, in an order that respects foreign keys; refused when the source
    holds a table or column the target lacks (a schema the target's migrations do not reach)."""
    pg = source if isinstance(source, PostgresEnd) else target
    assert isinstance(pg, PostgresEnd)
    src_tables = source.tables()
    missing = sorted(set(src_tables) - set(target_tables))
    if missing:
        raise Conflict(
            f"the target has no table {missing[0]} (source schema v{source.schema_version()}, "
            f"target v{target.schema_version()}); upgrade the older side's signet first"
        )
    aliased = pg.generated_rowid()
    fks = pg.foreign_keys()
    tables: dict[str, Table] = {}
    for name, cols in src_tables.items():
        extra = [c for c in cols if c not in target_tables[name] and c != "rowid"]
        if extra:
            raise Conflict(f"the target's table {name} has no column {extra[0]}; upgrade the older side's signet first")
        data = tuple(c for c in cols if c != "rowid")
        refs = tuple(c for t, c, ref in fks if t == name and ref == name)
        tables[name] = Table(name, data, own_rowid=name not in aliased, self_refs=refs)
    # foreign keys first: a table after every table it references
    order: list[str] = []
    deps = {n: {ref for t, _, ref in fks if t == n and ref != n and ref in tables} for n in tables}

    def visit(n: str, seen: frozenset[str]) -> None:
        if n in order or n in seen:
            return
        for d in sorted(deps[n]):
            visit(d, seen | {n})
        order.append(n)

    for n in sorted(tables):
        visit(n, frozenset())
    return [tables[n] for n in order]


def _not_copied(source: AnyEnd, target: AnyEnd) -> list[str]:
    sqlite_end = source if isinstance(source, SqliteEnd) else target
    assert isinstance(sqlite_end, SqliteEnd)
    return sorted(
        {*sqlite_end.engine_tables(), *(n for n in NOT_COPIED if n != "sqlite_sequence")}
        | {"memories.fts", "transcript_turns.fts", "memory_hints.fts"}
    )


Progress = Callable[[str, int], None]
"""Told ``(table, rows)`` after each batch is written."""


def transfer(
    source: AnyEnd,
    target: AnyEnd,
    *,
    dry_run: bool = False,
    on_plan: Callable[[int], None] | None = None,
    on_batch: Progress | None = None,
) -> TransferReport:
    """Copy every table of ``source`` into the empty ``target``, then compare both sides.

    Refused (nothing written) when the target already holds rows in any table to copy; the
    target is brought to the current schema first (its own migrations). ``dry_run``: count
    the source's rows and check the target, write nothing (the target is not migrated either;
    its emptiness is checked on the tables it already has)."""
    if source.engine == target.engine:
        raise InvalidRequest("one side must be SQLite and the other PostgreSQL")
    try:
        report = TransferReport(source.shown, target.shown, dry_run, not_copied=_not_copied(source, target))
        copied = source.tables()
        busy = [t for t in sorted(target.tables()) if t in copied and target.count(t) > 0]
        if busy:
            raise Conflict(
                f"the target {target.shown} is not empty (table {busy[0]} has rows); "
                "copy into a new, empty database (or a new file) instead"
            )
        if dry_run:
            source.begin_snapshot()
            try:
                for name in sorted(copied):
                    n = source.count(name)
                    report.tables.append(TableResult(name, n, 0, "", ""))
            finally:
                source.end_snapshot()
            return report
        target.prepare()
        report.not_copied = _not_copied(source, target)  # a new SQLite target has its FTS tables now
        tables = _plan(source, target, target.tables())
        source.begin_snapshot()
        try:
            total = sum(source.count(t.name) for t in tables)
            if on_plan is not None:
                on_plan(total)
            target.begin_write()
            try:
                for table in tables:
                    refs: list[tuple[Any, ...]] = []
                    batch: list[Sequence[Any]] = []
                    ref_at = [1 + table.columns.index(c) for c in table.self_refs]
                    for row in source.rows(table):
                        batch.append(row)
                        if ref_at:
                            refs.append((row[0], *(row[i] for i in ref_at)))
                        if len(batch) >= BATCH_ROWS:
                            target.insert(table, batch)
                            if on_batch is not None:
                                on_batch(table.name, len(batch))
                            batch = []
                    if batch:
                        target.insert(table, batch)
                        if on_batch is not None:
                            on_batch(table.name, len(batch))
                    target.finish_table(table, refs)
                target.commit()
            except BaseException:
                target.rollback()
                raise
            for table in tables:  # the source in the same snapshot it was copied from
                s_n, s_h = table_digest(source.rows(table))
                t_n, t_h = table_digest(target.rows(table))
                report.tables.append(TableResult(table.name, s_n, t_n, s_h, t_h))
        finally:
            source.end_snapshot()
        return report
    except psycopg.Error as exc:
        pg = source if isinstance(source, PostgresEnd) else target
        assert isinstance(pg, PostgresEnd)
        raise pg.error(exc) from None
    except sqlite3.Error as exc:
        lite = source if isinstance(source, SqliteEnd) else target
        raise StorageError(f"SQLite store {lite.shown}: {exc}") from None
