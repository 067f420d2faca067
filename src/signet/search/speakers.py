"""Who has spoken: the name keys of stored ``who`` values, per project, kept incrementally.

Recall leaves a person's name out of the keyword query when that person said stored
memories (signet.search.fts.recall_match_expression): the who-boost (signet.search.rank)
already favours their lines, and the name as a keyword matches every line that carries it
(measured on LoCoMo: docs/benchmarks.md). Knowing who has spoken must not cost a scan per
recall, so the names are read once and then only for memories added since (``seq`` grows
monotonically; ``MAX(seq)`` is an O(1) rowid lookup). A name stays known after its memories
are deleted: the cost of a stale name is one keyword fewer, never a wrong result.
"""

from __future__ import annotations

import threading
from typing import Any

from signet.search.rank import name_keys


class SpeakerNames:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._seen_seq = 0
        self._by_project: dict[str | None, set[str]] = {}

    def refresh(self, conn: Any) -> None:
        """Read the ``who`` values of memories stored since the last call."""
        top = int(conn.execute("SELECT COALESCE(MAX(seq), 0) FROM memories").fetchone()[0])
        with self._lock:
            since = self._seen_seq
        if top <= since:
            return
        rows = conn.execute(
            "SELECT DISTINCT project, who FROM memories WHERE seq > ? AND seq <= ? AND who IS NOT NULL",
            (since, top),
        ).fetchall()
        with self._lock:
            for project, who in rows:
                self._by_project.setdefault(project, set()).update(name_keys(who))
            self._seen_seq = max(self._seen_seq, top)

    def keys(self, project: str | None = None) -> set[str]:
        """Name keys of speakers in ``project`` (every project when None)."""
        with self._lock:
            if project is not None:
                return set(self._by_project.get(project, ()))
            out: set[str] = set()
            for keys in self._by_project.values():
                out |= keys
            return out
