"""Text split into tokens exactly as SQLite's FTS5 ``unicode61`` tokenizer splits it.

The in-memory keyword index (signet.search.keywords) mirrors ``memories_ctx_fts`` and must
count the same tokens FTS5 counted, or its BM25 would drift from the table it mirrors. For
ASCII text ``unicode61`` is simple: runs of ``[A-Za-z0-9]`` are tokens, folded to lower
case, and every other character separates (checked against FTS5 in the tests). Outside
ASCII it applies Unicode 6.1 categories, case folding and diacritic removal from SQLite's
own tables, which Python's ``unicodedata`` (another Unicode version) would not reproduce to
the letter. So non-ASCII text is handed to FTS5 itself: a private in-memory FTS5 table per
thread, read back through ``fts5vocab``. That costs ~0.1 ms a text, and most text is ASCII.
"""

from __future__ import annotations

import re
import threading
from collections import Counter
from typing import Any

from signet.store.sqlite import sqlite3

TOKENIZE = "unicode61"
"""The tokenizer of the mirrored table (``memories_ctx_fts``); the helper table uses the same."""

_ASCII_TOKEN = re.compile(r"[a-z0-9]+")

_local = threading.local()


def _helper() -> Any:
    """This thread's in-memory FTS5 table (two columns) and its ``instance`` vocabulary."""
    conn = getattr(_local, "conn", None)
    if conn is None:
        conn = sqlite3.connect(":memory:", check_same_thread=True, isolation_level=None)
        conn.execute(f"CREATE VIRTUAL TABLE t USING fts5(a, b, tokenize='{TOKENIZE}')")
        conn.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, 'instance')")
        _local.conn = conn
    return conn


def _by_fts5(texts: tuple[str, ...]) -> list[list[str]]:
    """Tokens of one or two texts (columns a, b), in order, as FTS5 produced them."""
    conn = _helper()
    cols = ("a", "b")
    conn.execute("INSERT INTO t(rowid, a, b) VALUES (1, ?, ?)", (texts[0], texts[1] if len(texts) > 1 else ""))
    try:
        rows = conn.execute("SELECT col, offset, term FROM v WHERE doc = 1").fetchall()
    finally:
        conn.execute("DELETE FROM t")
    out: list[list[tuple[int, str]]] = [[] for _ in texts]
    for col, offset, term in rows:
        i = cols.index(col)
        if i < len(texts):
            out[i].append((int(offset), str(term)))
    return [[term for _, term in sorted(toks)] for toks in out]


def tokens(text: str) -> list[str]:
    """The tokens FTS5 ``unicode61`` makes of ``text``, in order."""
    if text.isascii():
        return _ASCII_TOKEN.findall(text.lower())
    return _by_fts5((text,))[0]


def token_counts(content: str, context: str) -> tuple[Counter[str], Counter[str]]:
    """Per-token counts of a row's two columns (one FTS5 round trip when either is not ASCII)."""
    if content.isascii() and context.isascii():
        return Counter(_ASCII_TOKEN.findall(content.lower())), Counter(_ASCII_TOKEN.findall(context.lower()))
    a, b = _by_fts5((content, context))
    return Counter(a), Counter(b)
