"""Which SQLite binding to use.

``pysqlite3-binary`` ships a much newer SQLite (FTS5 about twice as fast as the 3.40 that
CPython links here) and is preferred when installed; the standard library is the fallback.
Both expose the same DB-API, so the rest of the package imports :data:`sqlite3` from here.
"""

from __future__ import annotations

import importlib
import sqlite3 as _stdlib_sqlite3
from types import ModuleType


def _pick() -> ModuleType:
    try:
        return importlib.import_module("pysqlite3.dbapi2")
    except ImportError:
        return _stdlib_sqlite3


sqlite3: ModuleType = _pick()
Connection = _stdlib_sqlite3.Connection
Row = _stdlib_sqlite3.Row
