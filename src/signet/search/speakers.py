"""Who has spoken, and how much: per project, the memories said by each name, kept incrementally.

Recall leaves a person's name out of the keyword query when that person said a large share
(:data:`DOMINANT_SHARE`) of the memories in scope (signet.search.fts.recall_match_expression):
in a two-person conversation each name is on half the lines, so as a keyword it matches
everything and ranks nothing, while the who-boost (signet.search.rank) already favours the
named person's lines. A name said by few memories stays in the query: there it is the most
selective word (measured: dropping every speaker's name cost 0.16 of the source-found rate
at 100,000 synthetic memories with dozens of people; docs/benchmarks.md).

Knowing who has spoken must not cost a scan per recall, so the counts are read once and then
only for memories added since (``seq`` grows monotonically; ``MAX(seq)`` is an O(1) rowid
lookup). Deletions are not subtracted: a stale count can only keep or drop one keyword.
"""

from __future__ import annotations

import threading

from signet.search.rank import name_keys
from signet.store.sqlite import Connection

DOMINANT_SHARE = 0.2
"""A name said by at least this share of the memories in scope is too common to search for."""


class SpeakerNames:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._seen_seq = 0
        self._said: dict[str | None, dict[str, int]] = {}  # project -> name key -> memories said
        self._total: dict[str | None, int] = {}  # project -> memories
        self._said_all: dict[str, int] = {}  # the same over every project (recall without a project)
        self._total_all = 0

    def refresh(self, conn: Connection) -> None:
        """Read the ``who`` values of memories stored since the last call."""
        top = int(conn.execute("SELECT COALESCE(MAX(seq), 0) FROM memories").fetchone()[0])
        with self._lock:
            since = self._seen_seq
        if top <= since:
            return
        rows = conn.execute(
            "SELECT project, who, COUNT(*) FROM memories WHERE seq > ? AND seq <= ? GROUP BY project, who",
            (since, top),
        ).fetchall()
        with self._lock:
            if self._seen_seq != since:
                return  # another thread counted this range meanwhile
            for project, who, count in rows:
                n = int(count)
                self._total[project] = self._total.get(project, 0) + n
                self._total_all += n
                said = self._said.setdefault(project, {})
                for key in name_keys(who):
                    said[key] = said.get(key, 0) + n
                    self._said_all[key] = self._said_all.get(key, 0) + n
            self._seen_seq = top

    def dominant(self, project: str | None = None, share: float = DOMINANT_SHARE) -> set[str]:
        """Name keys said by at least ``share`` of the memories of ``project`` (all projects when None)."""
        with self._lock:
            if project is None:
                said, total = self._said_all, self._total_all
            else:
                said, total = self._said.get(project, {}), self._total.get(project, 0)
            return {key for key, n in said.items() if total and n >= share * total}
