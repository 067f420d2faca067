"""Session checkpoints and the continuity state they capture (spec 001 session-checkpoints,
continuity-state), and continuity scores.

A harness compacts its context without telling the memory what it was working on; a crash or
a closed terminal loses even that. So the daemon keeps, per session, a small continuity state
from the hooks it already receives (the recent prompts, what was saved with remember, how many
memories were injected) and writes it as a checkpoint before compaction, every
``checkpoint_every_prompts`` prompts, at compaction's end (the harness's own summary) and at
session end (the handoff, then the LLM summary). A session that starts again with the same
session id within ``restore_window_hours`` gets its latest checkpoint back in its context.

The state lives in memory (bounded): what survives a daemon restart is the checkpoints.
"""

from __future__ import annotations

import json
import threading
import uuid
from collections import OrderedDict, deque
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from signet.search.fts import query_terms
from signet.store.records import now_iso
from signet.store.sqlite import Connection
from signet.transcript import Turn

KEEP_PROMPTS = 8
KEEP_REMEMBERED = 8
MAX_SESSIONS = 500
SNIPPET = 300


def _snip(text: str, n: int = SNIPPET) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[: n - 1] + "…"


@dataclass
class SessionState:
    harness: str
    project: str | None
    agent_id: str
    prompts: deque[str] = field(default_factory=lambda: deque(maxlen=KEEP_PROMPTS))
    remembered: deque[str] = field(default_factory=lambda: deque(maxlen=KEEP_REMEMBERED))
    prompt_count: int = 0
    injected: int = 0

    def as_dict(self) -> dict[str, Any]:
        return {
            "prompts": list(self.prompts),
            "remembered": list(self.remembered),
            "prompt_count": self.prompt_count,
            "injected": self.injected,
        }


class ContinuityTracker:
    """Per-session continuity state, the newest ``MAX_SESSIONS`` sessions (thread-safe)."""

    def __init__(self) -> None:
        self._states: OrderedDict[str, SessionState] = OrderedDict()
        self._lock = threading.Lock()

    def _state(self, key: str, harness: str, project: str | None, agent_id: str) -> SessionState:
        st = self._states.get(key)
        if st is None:
            st = self._states[key] = SessionState(harness, project, agent_id)
        else:
            self._states.move_to_end(key)
            st.project = project or st.project
        while len(self._states) > MAX_SESSIONS:
            self._states.popitem(last=False)
        return st

    def prompt(self, key: str, harness: str, project: str | None, agent_id: str, text: str, injected: int) -> int:
        """Record one prompt; returns the session's prompt count."""
        with self._lock:
            st = self._state(key, harness, project, agent_id)
            if text.strip():
                st.prompts.append(_snip(text))
            st.prompt_count += 1
            st.injected += injected
            return st.prompt_count

    def remembered(self, key: str, harness: str, project: str | None, agent_id: str, text: str) -> None:
        with self._lock:
            self._state(key, harness, project, agent_id).remembered.append(_snip(text))

    def snapshot(self, key: str) -> dict[str, Any] | None:
        with self._lock:
            st = self._states.get(key)
            return st.as_dict() if st is not None else None

    def forget(self, key: str) -> None:
        with self._lock:
            self._states.pop(key, None)


def render_state(state: dict[str, Any] | None, extra: str | None = None) -> str:
    """A checkpoint's readable text: what the session was doing."""
    lines: list[str] = []
    if extra and extra.strip():
        lines.append(extra.strip())
    if state:
        if state.get("prompts"):
            lines.append("Recent prompts:")
            lines += [f"- {p}" for p in state["prompts"]]
        if state.get("remembered"):
            lines.append("Saved with remember:")
            lines += [f"- {r}" for r in state["remembered"]]
    return "\n".join(lines)


def record(
    conn: Connection,
    key: str,
    *,
    harness: str,
    project: str | None,
    agent_id: str,
    trigger: str,
    content: str,
    state: dict[str, Any] | None = None,
    turn: int = 0,
    keep: int = 20,
) -> str | None:
    """Insert a checkpoint and prune the session's oldest beyond ``keep``; None when empty."""
    if not content.strip():
        return None
    cid = str(uuid.uuid4())
    conn.execute(
        "INSERT INTO session_checkpoints(id, session_key, harness, project, agent_id, trigger, turn, content, state,"
        " created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (cid, key, harness, project, agent_id, trigger, turn, content.strip(), json.dumps(state or {}), now_iso()),
    )
    conn.execute(
        "DELETE FROM session_checkpoints WHERE session_key = ? AND id NOT IN"
        " (SELECT id FROM session_checkpoints WHERE session_key = ? ORDER BY created_at DESC, rowid DESC LIMIT ?)",
        (key, key, keep),
    )
    return cid


COLUMNS = "id, session_key, harness, project, agent_id, trigger, turn, content, state, created_at"


def _as_dict(row: Any) -> dict[str, Any]:
    out = dict(row)
    try:
        out["state"] = json.loads(out.get("state") or "{}")
    except ValueError:
        out["state"] = {}
    return out


def for_restore(conn: Connection, key: str, agent_id: str, window_hours: float) -> dict[str, Any] | None:
    """The session's latest checkpoint, when it is younger than the window."""
    if window_hours <= 0:
        return None
    since = (datetime.now(UTC) - timedelta(hours=window_hours)).isoformat(timespec="microseconds")
    row = conn.execute(
        f"SELECT {COLUMNS} FROM session_checkpoints WHERE session_key = ? AND agent_id = ? AND created_at >= ?"
        " ORDER BY created_at DESC, rowid DESC LIMIT 1",
        (key, agent_id, since),
    ).fetchone()
    return _as_dict(row) if row is not None else None


def by_session(conn: Connection, key: str, agents: tuple[str, ...] | None, limit: int) -> list[dict[str, Any]]:
    where, params = _agents(agents)
    rows = conn.execute(
        f"SELECT {COLUMNS} FROM session_checkpoints WHERE session_key = ?{where}"
        " ORDER BY created_at DESC, rowid DESC LIMIT ?",
        (key, *params, limit),
    ).fetchall()
    return [_as_dict(r) for r in rows]


def by_project(
    conn: Connection, project: str | None, agents: tuple[str, ...] | None, limit: int
) -> list[dict[str, Any]]:
    where, params = _agents(agents)
    if project is not None:
        where += " AND project = ?"
        params.append(project)
    rows = conn.execute(
        f"SELECT {COLUMNS} FROM session_checkpoints WHERE 1 = 1{where} ORDER BY created_at DESC, rowid DESC LIMIT ?",
        (*params, limit),
    ).fetchall()
    return [_as_dict(r) for r in rows]


def _agents(agents: tuple[str, ...] | None) -> tuple[str, list[Any]]:
    if agents is None:
        return "", []
    return f" AND agent_id IN ({','.join('?' for _ in agents)})", list(agents)


# -- continuity scores -------------------------------------------------------------------------
USED_COVERAGE = 0.5
"""An injected memory counts as used when this share of its content words occurs in the session."""


def score_session(
    conn: Connection, key: str, turns: list[Turn], *, harness: str, project: str | None, agent_id: str
) -> dict[str, Any] | None:
    """Score how well the memory served a finished session, and record it in ``session_scores``.

    Deterministic and explainable, no LLM: of the memories injected into the session
    (``hook_injections``), the share whose content words mostly (``USED_COVERAGE``) occur in
    the session's turns is the score; ``novel_context_count`` counts the user turns that share
    no content word with any injected memory (context the memory did not have). A session
    nothing was injected into is not scored: there was nothing to judge.
    """
    rows = conn.execute(
        "SELECT m.content FROM hook_injections i JOIN memories m ON m.id = i.memory_id WHERE i.session_key = ?",
        (key,),
    ).fetchall()
    if not rows:
        return None
    words = set(query_terms(" ".join(t.content for t in turns)))
    injected_terms = [set(query_terms(str(r[0]))) for r in rows]
    used = sum(1 for ts in injected_terms if ts and len(ts & words) / len(ts) >= USED_COVERAGE)
    known = set().union(*injected_terms)
    novel = sum(1 for t in turns if t.role == "user" and not (set(query_terms(t.content)) & known))
    score = round(used / len(rows), 4)
    reasoning = (
        f"{used} of {len(rows)} injected memories were used (at least {int(USED_COVERAGE * 100)}% of their "
        f"content words occur in the session); {novel} user turns had no related memory"
    )
    sid = str(uuid.uuid4())
    conn.execute("DELETE FROM session_scores WHERE session_key = ?", (key,))  # one score per session: the last
    conn.execute(
        "INSERT INTO session_scores(id, session_key, project, harness, agent_id, score, memories_recalled,"
        " memories_used, novel_context_count, reasoning, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (sid, key, project, harness, agent_id, score, len(rows), used, novel, reasoning, now_iso()),
    )
    return {"id": sid, "score": score, "memories_recalled": len(rows), "memories_used": used, "novel": novel}
