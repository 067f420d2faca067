"""Text split into tokens exactly as SQLite's FTS5 ``unicode61`` tokenizer splits it.

The in-memory keyword index (signet.search.keywords) mirrors ``memories_ctx_fts`` and must
count the same tokens FTS5 counted, or its BM25 would drift from the table it mirrors. For
ASCII text ``unicode61`` is simple: runs of ``[A-Za-z0-9]`` are tokens, folded to lower
case, and every other character separates (checked against FTS5 in the tests). Outside
ASCII it applies Unicode 6.1 categories, case folding and diacritic removal from SQLite's
own tables, which Python's ``unicodedata`` (another Unicode version) would not reproduce to
the letter. So non-ASCII words are handed to FTS5 itself: a private in-memory FTS5 table per
thread, read back through ``fts5vocab``, and remembered (:func:`tokens`).
"""

from __future__ import annotations

import re
import threading
from collections import Counter
from functools import lru_cache
from typing import Any

from signet.store.sqlite import sqlite3

TOKENIZE = "unicode61"
"""The tokenizer of the mirrored table (``memories_ctx_fts``); the helper table uses the same."""

_ASCII_TOKEN = re.compile(r"[a-z0-9]+")

_local = threading.local()


def _helper() -> Any:
    """This thread's in-memory FTS5 table and its ``instance`` vocabulary."""
    conn = getattr(_local, "conn", None)
    if conn is None:
        conn = sqlite3.connect(":memory:", check_same_thread=True, isolation_level=None)
        conn.execute(f"CREATE VIRTUAL TABLE t USING fts5(a, tokenize='{TOKENIZE}')")
        conn.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, 'instance')")
        _local.conn = conn
    return conn


def _by_fts5(text: str) -> tuple[str, ...]:
    """The tokens FTS5 itself makes of ``text``, in order."""
    conn = _helper()
    conn.execute("INSERT INTO t(rowid, a) VALUES (1, ?)", (text,))
    try:
        rows = conn.execute("SELECT offset, term FROM v WHERE doc = 1").fetchall()
    finally:
        conn.execute("DELETE FROM t")
    return tuple(term for _, term in sorted(rows))


_by_fts5_cached = lru_cache(maxsize=65_536)(_by_fts5)

CACHED_CHUNK = 64
"""Non-ASCII words up to this length are remembered (the same words recur across a store)."""


def tokens(text: str) -> list[str]:
    """The tokens FTS5 ``unicode61`` makes of ``text``, in order.

    Whitespace always separates tokens for ``unicode61`` (it is neither a letter, a number
    nor a private-use character), so the text is split at whitespace first: ASCII words go
    through the regular expression, and only the other words through FTS5, each once per
    process. A turn's text is indexed again inside its neighbours' context, so that matters.
    """
    if text.isascii():
        return _ASCII_TOKEN.findall(text.lower())
    out: list[str] = []
    for word in text.split():
        if word.isascii():
            out.extend(_ASCII_TOKEN.findall(word.lower()))
        else:
            out.extend(_by_fts5_cached(word) if len(word) <= CACHED_CHUNK else _by_fts5(word))
    return out


def token_counts(content: str, context: str) -> tuple[Counter[str], Counter[str]]:
    """Per-token counts of a row's two columns."""
    return Counter(tokens(content)), Counter(tokens(context))
