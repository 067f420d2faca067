"""Signals (docs/lifecycle.md): an important new memory is shown once to each consumer (a
harness session at its next prompt, or a client reading ``/api/signals``), across a restart."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient

from signet.runtime import Runtime
from signet.workspace import Workspace
from tests.conftest import DaemonProcess

MakeWs = Callable[..., Workspace]

DECISION = "Decision: the payments service moves to Postgres 16 on Monday, freeze all schema changes"
LATER = "Decision: rollback plan for the payments migration is a snapshot restore from 02:00"


def prompt(api: httpx.Client | TestClient, session: str, text: str = "what should I work on next today?") -> Any:
    r = api.post(
        "/api/hooks/user-prompt-submit", json={"harness": "claude-code", "session_id": session, "prompt": text}
    )
    assert r.status_code == 200, r.text
    return r.json()


def signals(api: httpx.Client | TestClient, consumer: str) -> Any:
    r = api.get("/api/signals", params={"consumer": consumer})
    assert r.status_code == 200, r.text
    return r.json()


@pytest.mark.slow
def test_signals_are_delivered_once_per_consumer_across_a_restart(
    make_workspace: MakeWs, start_daemon: Callable[..., DaemonProcess]
) -> None:
    ws = make_workspace(embedding="none")
    d = start_daemon(ws)
    with d.client() as api:
        # Session B is running; session A makes a decision, saved as an important memory.
        assert prompt(api, "B")["signals"] == []
        r = api.post("/api/memory/remember", json={"content": DECISION, "importance": 0.95, "who": "claude-code"})
        assert r.status_code == 200, r.text
        decided = r.json()["id"]
        ordinary = api.post("/api/memory/remember", json={"content": "The office plant needs water"}).json()["id"]

        got = prompt(api, "B")
        assert [s["id"] for s in got["signals"]] == [decided]  # the ordinary memory (0.8) raises none
        assert got["context"].startswith("Signet signals") and DECISION in got["context"]
        assert prompt(api, "B")["signals"] == []  # once
        assert [s["id"] for s in prompt(api, "C")["signals"]] == [decided]  # and once for every session

        # A client that acknowledges: listed until acked.
        first = signals(api, "dashboard")
        assert [s["id"] for s in first["signals"]] == [decided] and first["watermark"] is None
        assert [s["id"] for s in signals(api, "dashboard")["signals"]] == [decided]  # not acked yet
        ack = api.post("/api/signals/ack", json={"consumer": "dashboard", "cursor": first["cursor"]})
        assert ack.status_code == 200 and ack.json()["watermark"] == first["cursor"]
        assert signals(api, "dashboard")["signals"] == []
        assert ordinary not in {s["id"] for s in first["signals"]}

    d.stop()
    d = start_daemon(ws)  # the watermarks are in the store: nothing is given twice after a restart
    with d.client() as api:
        assert prompt(api, "B")["signals"] == []
        assert prompt(api, "C")["signals"] == []
        assert signals(api, "dashboard")["signals"] == []
        assert [s["id"] for s in prompt(api, "D")["signals"]] == [decided]  # a session new since then

        later = api.post("/api/memory/remember", json={"content": LATER, "importance": 0.9}).json()["id"]
        for session in ("B", "C", "D"):
            assert [s["id"] for s in prompt(api, session)["signals"]] == [later], session
            assert prompt(api, session)["signals"] == []
        assert [s["id"] for s in signals(api, "dashboard")["signals"]] == [later]
        # What a session saved through its own hook is not news to it; the others get it.
        r = api.post(
            "/api/hooks/remember",
            json={"harness": "claude-code", "session_id": "B", "content": "critical: never deploy on Fridays"},
        )
        assert r.status_code == 200, r.text
        own = r.json()["id"]
        assert prompt(api, "B")["signals"] == []
        assert [s["id"] for s in prompt(api, "C")["signals"]] == [own]
        # Unknown fields and bad cursors are 422, never 500.
        bad = api.post("/api/signals/ack", json={"consumer": "x", "cursor": -1})
        assert bad.status_code == 422
        assert api.post("/api/signals/ack", json={"consumer": "x", "cursor": 1, "zz": 1}).status_code == 422


def test_signals_off_and_old_memories(
    make_workspace: MakeWs, open_app: Callable[[Workspace], tuple[Runtime, TestClient]]
) -> None:
    _rt, api = open_app(make_workspace(embedding="none", memory={"signals": {"enabled": False}}))
    api.post("/api/memory/remember", json={"content": DECISION, "importance": 0.95})
    assert prompt(api, "B")["signals"] == []  # off: the hook adds none
    # An imported memory with its original (old) date never signals.
    _rt2, api2 = open_app(make_workspace(embedding="none"))
    r = api2.post(
        "/api/memory/remember",
        json={"content": LATER, "importance": 0.99, "created_at": "2024-01-01T00:00:00Z"},
    )
    assert r.status_code == 200
    assert prompt(api2, "B")["signals"] == [] and signals(api2, "x")["signals"] == []
