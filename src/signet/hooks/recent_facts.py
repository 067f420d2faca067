"""Which entity attributes each session was handed lately, so the prompt hook does not repeat them.

Memories injected into a session are logged durably (``hook_injections``, keyed by memory id:
the orphan check and the continuity score read it as memory ids). An attribute line is a few
tokens of a fact the session already has, so its log is kept in memory only: a restart forgets it
and a session gets its entities' current facts once more, which costs a line, not a wrong answer.
Bounded: the sessions seen last (``max_sessions``), each with the turn each attribute was given.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable

MAX_SESSIONS = 1000


class RecentFacts:
    def __init__(self, max_sessions: int = MAX_SESSIONS) -> None:
        self.max_sessions = max_sessions
        self._given: OrderedDict[str, dict[str, int]] = OrderedDict()
        self._lock = threading.Lock()

    def given_since(self, session_key: str, since_turn: int) -> set[str]:
        """The attribute ids the session was given at ``since_turn`` or later."""
        with self._lock:
            turns = self._given.get(session_key, {})
            return {aid for aid, turn in turns.items() if turn >= since_turn}

    def record(self, session_key: str, attribute_ids: Iterable[str], turn: int) -> None:
        with self._lock:
            turns = self._given.setdefault(session_key, {})
            self._given.move_to_end(session_key)
            for aid in attribute_ids:
                turns[aid] = turn
            while len(self._given) > self.max_sessions:
                self._given.popitem(last=False)
