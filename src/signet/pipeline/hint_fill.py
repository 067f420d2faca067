"""The template hints filler: memories without hints get the template's, in the background.

A remember writes its template hints itself while ``hints.enabled`` is on
(signet.pipeline.runtime). The memories stored while it was off, imported ones, and those whose
text was edited (the edit removed their hints) have none: this thread walks ``memories`` by
``seq`` from a durable cursor (``memory_hints_cursor``, migration 38; an edit moves it back
before the edited memory) and writes the template's hints for each live memory that has none,
a batch per transaction, the cursor moved in the same transaction. A restart resumes where it
stopped; a store it has caught up with costs one indexed read per ``interval``.

The template (signet.knowledge.hints) and the extractor it reads run before the transaction,
on this thread; a memory whose text changed meanwhile is skipped in the write (its edit moved
the cursor back, so the next pass takes it).
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from signet.config import HintsSettings
from signet.knowledge import hints
from signet.knowledge.extract import extract
from signet.store.sqlite import Connection

log = logging.getLogger(__name__)

CURSOR = "template"
BATCH = 200


def cursor(conn: Connection) -> int:
    row = conn.execute("SELECT last_seq FROM memory_hints_cursor WHERE name = ?", (CURSOR,)).fetchone()
    return int(row[0]) if row is not None else 0


def _batch(conn: Connection, after: int, size: int) -> list[Any]:
    return list(
        conn.execute(
            "SELECT m.seq, m.content, m.who, m.is_deleted,"
            " EXISTS (SELECT 1 FROM memory_hints h WHERE h.memory_seq = m.seq) AS has_hints"
            " FROM memories m WHERE m.seq > ? ORDER BY m.seq LIMIT ?",
            (after, size),
        ).fetchall()
    )


def fill_once(db: Any, settings: HintsSettings, size: int = BATCH) -> int:
    """One batch: the next ``size`` memories after the cursor; returns how many were looked at
    (0: caught up). Each live memory without hints gets the template's.

    The cursor never skips an edit made meanwhile: an edit moves it back before the edited
    memory (its trigger), which this write keeps; a memory of the batch whose text changed since
    it was read stops the cursor just before it, so the next pass reads it again."""
    after = db.read(cursor)
    rows = db.read(lambda c: _batch(c, after, size))
    if not rows:
        return 0
    read = {int(r["seq"]): str(r["content"]) for r in rows}
    todo = [
        (int(r["seq"]), hints.templates(r["content"], r["who"], extract(r["content"], r["who"]), limit=settings.max))
        for r in rows
        if not r["is_deleted"] and not r["has_hints"]
    ]
    last = int(rows[-1]["seq"])

    def write(conn: Connection) -> None:
        marks = ",".join("?" for _ in read)
        now = {
            int(r[0]): str(r[1])
            for r in conn.execute(f"SELECT seq, content FROM memories WHERE seq IN ({marks})", list(read))
        }
        changed = [seq for seq, text in read.items() if seq in now and now[seq] != text]
        for seq, found in todo:
            if found and seq in now and seq not in changed:
                hints.write(conn, seq, found, "template")
        upto = min(changed) - 1 if changed else last
        conn.execute(
            "INSERT INTO memory_hints_cursor(name, last_seq) VALUES (?, ?) ON CONFLICT(name) DO UPDATE SET last_seq ="
            " CASE WHEN memory_hints_cursor.last_seq < ? THEN memory_hints_cursor.last_seq ELSE excluded.last_seq END",
            (CURSOR, upto, after),
        )

    db.write(write)
    return len(rows)


class HintFiller:
    """The background thread (only while ``hints.enabled``): batches until caught up, then a
    look every ``interval_s``."""

    def __init__(self, db: Any, settings: HintsSettings, interval_s: float = 60.0) -> None:
        self.db = db
        self.settings = settings
        self.interval_s = interval_s
        self.filled = 0
        """Memories looked at since start."""
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        if not self.settings.enabled:
            return
        self._thread = threading.Thread(target=self._loop, name="signet-hint-fill", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                n = fill_once(self.db, self.settings)
            except RuntimeError:  # the database closed under us at shutdown
                return
            except Exception:  # a bug in one batch must not end the thread; the next look retries
                log.exception("hints: filling template hints failed")
                n = 0
            self.filled += n
            if n == 0 and self._stop.wait(self.interval_s):
                return
