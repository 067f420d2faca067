"""A pytest plugin that records every distinct SQL text the SQLite store runs (a survey tool,
not a test): which statements a feature really issues, f-strings and run-time SQL included.

    PYTHONPATH=. SIGNET_RECORD_SQL=/tmp/sql.json .venv/bin/pytest tests/core/test_api_memory.py \\
        -p tests.pg.record_sql -p no:cacheprovider
    PYTHONPATH=. .venv/bin/python -m tests.pg.survey /tmp/sql.json

It wraps the connections :func:`signet.store.database.connect` opens so each ``execute`` notes
its text first; the statements still run on the real connection, unchanged.
"""

from __future__ import annotations

import atexit
import json
import os
import threading
from pathlib import Path
from typing import Any

import signet.store.database as database

SEEN: dict[str, int] = {}
_LOCK = threading.Lock()


class _Recording:
    def __init__(self, conn: Any) -> None:
        object.__setattr__(self, "_conn", conn)

    def _note(self, sql: str) -> None:
        with _LOCK:
            SEEN[sql] = SEEN.get(sql, 0) + 1

    def execute(self, sql: str, *args: Any) -> Any:
        self._note(sql)
        return self._conn.execute(sql, *args)

    def executemany(self, sql: str, *args: Any) -> Any:
        self._note(sql)
        return self._conn.executemany(sql, *args)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._conn, name)

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self._conn, name, value)


_connect = database.connect


def _recording_connect(*args: Any, **kwargs: Any) -> Any:
    return _Recording(_connect(*args, **kwargs))


if os.environ.get("SIGNET_RECORD_SQL"):
    database.connect = _recording_connect  # type: ignore[assignment]

    def _dump() -> None:
        Path(os.environ["SIGNET_RECORD_SQL"]).write_text(json.dumps(SEEN))

    atexit.register(_dump)
