"""Live output of tasks to subscribers (``GET /api/tasks/{id}/stream``).

Runs happen on worker threads, streams are served on the event loop: each subscriber is a
bounded asyncio queue fed with ``loop.call_soon_threadsafe``, so a run never waits for a
client; a client that does not keep up loses events (and is told how many with the next one
it gets). Closing the hub (the daemon stopping) ends every stream.
"""

from __future__ import annotations

import asyncio
import threading
from dataclasses import dataclass, field
from typing import Any

QUEUE_SIZE = 1000
Event = tuple[str, dict[str, Any]]
"""(event name, JSON data): ``run``, ``output``, ``done``, ``dropped``, ``end``."""


@dataclass(eq=False)
class Subscriber:
    task_id: str
    loop: asyncio.AbstractEventLoop
    queue: asyncio.Queue[Event | None] = field(default_factory=lambda: asyncio.Queue(QUEUE_SIZE))
    dropped: int = 0

    def _put(self, event: Event | None) -> None:
        if event is None:
            while self.queue.full():  # make room for the end marker
                self.queue.get_nowait()
            self.queue.put_nowait(None)
            return
        if self.queue.full():
            self.dropped += 1
            return
        if self.dropped:
            self.queue.put_nowait(("dropped", {"dropped": self.dropped, "reason": "slow reader"}))
            self.dropped = 0
            if self.queue.full():
                return
        self.queue.put_nowait(event)


class OutputHub:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._subs: set[Subscriber] = set()

    def subscribe(self, task_id: str, loop: asyncio.AbstractEventLoop) -> Subscriber:
        sub = Subscriber(task_id, loop)
        with self._lock:
            self._subs.add(sub)
        return sub

    def unsubscribe(self, sub: Subscriber) -> None:
        with self._lock:
            self._subs.discard(sub)

    def publish(self, task_id: str, name: str, data: dict[str, Any]) -> None:
        with self._lock:
            subs = [s for s in self._subs if s.task_id == task_id]
        for sub in subs:
            try:
                sub.loop.call_soon_threadsafe(sub._put, (name, data))
            except RuntimeError:  # its event loop is closed: the stream is gone
                self.unsubscribe(sub)

    def close(self) -> None:
        with self._lock:
            subs, self._subs = list(self._subs), set()
        for sub in subs:
            try:
                sub.loop.call_soon_threadsafe(sub._put, None)
            except RuntimeError:  # its event loop is closed: nothing to end
                continue
