"""Which recorded SQLite statements run on PostgreSQL (docs/team.md, "The SQL dialect").

``python -m tests.pg.survey recorded.json [pgserver|debian15]``: starts a throwaway cluster,
applies the PostgreSQL schema, translates each statement (signet.store.pg_dialect) and asks the
planner for it (``EXPLAIN``, parameters as NULL), then prints the counts and every failure.
Migration statements and transaction control are left out: PostgreSQL has its own schema.
"""

from __future__ import annotations

import collections
import json
import re
import sys
from pathlib import Path

import psycopg

from signet.store import pg_dialect
from signet.store.migrations import BOOKKEEPING, MIGRATIONS, split_statements
from signet.store.pg_url import resolve
from signet.store.postgres import PostgresDatabase
from tests import pgcluster

_CONTROL = ("BEGIN", "COMMIT", "ROLLBACK", "SAVEPOINT", "RELEASE")


def survey(recorded: dict[str, int], url: str) -> tuple[collections.Counter[str], list[str]]:
    migration = {s.strip() for m in MIGRATIONS for s in split_statements(m.sql)}
    migration |= {s.strip() for s in split_statements(BOOKKEEPING)}
    counts: collections.Counter[str] = collections.Counter()
    failures: list[str] = []
    PostgresDatabase(resolve(url, "env:SIGNET_TEST_NO_SUCH_VAR")).open().close()
    with psycopg.connect(url, autocommit=True) as conn:
        for sql, calls in sorted(recorded.items(), key=lambda kv: -kv[1]):
            if sql.strip() in migration or sql.strip().split(None, 1)[0].upper() in _CONTROL:
                continue
            try:
                pg = pg_dialect.translate(sql, with_params=False)
            except pg_dialect.Untranslatable as exc:
                counts["untranslatable"] += 1
                failures.append(f"{calls:6d} calls  untranslatable: {exc}")
                continue
            try:
                with conn.transaction(force_rollback=True):
                    for part in re.sub(r"%\(\w+\)s|%s", "NULL", pg).split(";\n"):
                        if part.lstrip().split(None, 1)[0].upper() in ("SELECT", "INSERT", "UPDATE", "DELETE", "WITH"):
                            conn.execute("EXPLAIN " + part)
                counts["planned"] += 1
            except psycopg.Error as exc:
                counts["rejected"] += 1
                failures.append(f"{calls:6d} calls  rejected: {str(exc).splitlines()[0]}  <- {sql.strip()[:120]}")
    return counts, failures


def main() -> None:
    recorded = json.loads(Path(sys.argv[1]).read_text())
    cluster = pgcluster.start(sys.argv[2] if len(sys.argv) > 2 else "debian15")
    try:
        counts, failures = survey(recorded, cluster.new_database())
    finally:
        cluster.stop()
    print(dict(counts))
    print("\n".join(failures))


if __name__ == "__main__":
    main()
