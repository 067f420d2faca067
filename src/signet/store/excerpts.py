"""Transcript excerpts: the turns around where a memory came from (recall's ``expand``).

Transcripts are kept whole, turn by turn (``transcript_turns``), with their own full-text
index (``transcript_turns_fts``, migration 28). A memory extracted from a session keeps the
session's key as its ``source_id``; the turn it came from is not recorded (an LLM read many
turns at once), so it is found again by searching the session's turns for the memory's words
and taking the best match, with a few turns either side. A memory with no session source
gets nothing: searching every transcript would show turns of sessions it has no link to.
A scoped caller gets excerpts of its own agent's (and project's) sessions only.

Every function takes a connection (``db.read``); none writes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from signet.store.scope import UNSCOPED, ReadScope
from signet.store.sqlite import Connection

_WORD = re.compile(r"[^\W_]{3,}", re.UNICODE)
MAX_QUERY_WORDS = 24
MAX_WINDOW = 20


@dataclass(frozen=True)
class Excerpt:
    session_key: str
    turn_index: int
    """The turn that matched best."""
    turns: list[dict[str, Any]]
    """The matching turn and up to ``window`` turns either side, in order: ``index``, ``role``,
    ``content``, ``timestamp``."""
    score: float
    """bm25 of the match (lower is better, as SQLite reports it)."""

    def as_dict(self) -> dict[str, Any]:
        return {
            "session_key": self.session_key,
            "turn_index": self.turn_index,
            "turns": self.turns,
            "score": self.score,
        }


def fts_query(text: str) -> str | None:
    """An FTS5 query matching any of ``text``'s words (each quoted: no operator injection)."""
    words: list[str] = []
    for w in _WORD.findall(text.lower()):
        if w not in words:
            words.append(w)
        if len(words) >= MAX_QUERY_WORDS:
            break
    return " OR ".join(f'"{w}"' for w in words) or None


def search_turns(conn: Connection, text: str, *, session_key: str, limit: int = 3) -> list[tuple[int, float]]:
    """(turn index, bm25) of the session's turns best matching ``text``'s words."""
    query = fts_query(text)
    if query is None:
        return []
    rows = conn.execute(
        "SELECT t.turn_index, bm25(transcript_turns_fts) AS score FROM transcript_turns_fts"
        " JOIN transcript_turns AS t ON t.rowid = transcript_turns_fts.rowid"
        " WHERE transcript_turns_fts MATCH ? AND t.session_key = ? ORDER BY score LIMIT ?",
        (query, session_key, max(1, limit)),
    ).fetchall()
    return [(int(r[0]), float(r[1])) for r in rows]


def window(conn: Connection, session_key: str, turn_index: int, around: int = 2) -> list[dict[str, Any]]:
    """The turns ``turn_index - around`` .. ``turn_index + around`` of a session."""
    around = max(0, min(around, MAX_WINDOW))
    rows = conn.execute(
        "SELECT turn_index, role, content, created_at FROM transcript_turns"
        " WHERE session_key = ? AND turn_index BETWEEN ? AND ? ORDER BY turn_index",
        (session_key, turn_index - around, turn_index + around),
    ).fetchall()
    return [{"index": int(r[0]), "role": r[1], "content": r[2], "timestamp": r[3]} for r in rows]


def session_excerpts(
    conn: Connection, session_key: str, text: str, *, around: int = 2, limit: int = 1
) -> list[Excerpt]:
    """Excerpts of one session around the turns that best match ``text``."""
    return [
        Excerpt(session_key, idx, window(conn, session_key, idx, around), score)
        for idx, score in search_turns(conn, text, session_key=session_key, limit=limit)
    ]


def session_scope(scope: ReadScope) -> tuple[str, list[Any]]:
    """A WHERE fragment on the session row ``s``: the sessions whose turns ``scope`` may read.

    A transcript is one agent's conversation, not a memory with a visibility: a caller scoped
    to an agent (a token, a roster policy, or a local caller naming its agent) reads its own
    agent's sessions only, even where it may read another agent's global memories; a
    project-scoped caller reads its project's sessions only. A memory's ``source_id`` is a
    field any writer sets, so this is checked on the session itself, not inferred from the
    memory: a memory written in project A naming a session of project B yields nothing."""
    clauses: list[str] = []
    params: list[Any] = []
    if scope.policy != "all" or scope.write_agent is not None:
        clauses.append("s.agent_id = ?")
        params.append(scope.write_agent or scope.agent_id)
    if scope.project is not None:
        clauses.append("s.project = ?")
        params.append(scope.project)
    return (" AND ".join(clauses) or "1=1"), params


def memory_excerpts(
    conn: Connection, memory_id: str, *, around: int = 2, limit: int = 1, scope: ReadScope = UNSCOPED
) -> list[Excerpt]:
    """Excerpts of the session a memory was extracted from, around its best-matching turns.

    Empty when the memory is gone, was not extracted from a stored session, no turn shares a
    word with it, or ``scope`` may not read the memory or the session (:func:`session_scope`).
    The session must belong to the memory's agent, and is found by the memory's own
    ``source_id`` only."""
    mem_where, mem_params = scope.sql("m")
    ses_where, ses_params = session_scope(scope)
    row = conn.execute(
        "SELECT m.content, m.source_id FROM memories AS m JOIN session_transcripts AS s"
        " ON s.session_key = m.source_id AND s.agent_id = m.agent_id"
        f" WHERE m.id = ? AND m.is_deleted = 0 AND {mem_where} AND {ses_where}",
        (memory_id, *mem_params, *ses_params),
    ).fetchone()
    if row is None:
        return []
    return session_excerpts(conn, str(row[1]), str(row[0]), around=around, limit=limit)
