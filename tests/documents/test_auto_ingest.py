"""Spec 003's auto-ingestion (``documents.auto_ingest``): the workspace's memory/*.md and Claude
Code's project memories become documents at start and stay in step as they change."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from signet.runtime import Runtime
from signet.workspace import Workspace
from tests.documents.test_connectors import stored


def wait_for(what: Callable[[], bool], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not what():
        assert time.monotonic() < deadline
        time.sleep(0.1)


def test_memory_files_are_documents_and_follow_their_changes(
    make_workspace: Callable[..., Workspace],
    open_app: Callable[[Workspace], tuple[Runtime, TestClient]],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    home = tmp_path / "home"
    claude = home / ".claude" / "projects" / "-work-web" / "memory"
    claude.mkdir(parents=True)
    (claude / "MEMORY.md").write_text("# Web project\n\nThe web app deploys from the main branch.\n")
    (claude.parent / "notes.md").write_text("# Not a memory file\n\nleft alone\n")
    monkeypatch.setenv("HOME", str(home))
    ws = make_workspace("none", documents={"auto_ingest": True, "poll_interval_ms": 50})
    daily = ws.root / "memory" / "2026-01-05.md"
    daily.parent.mkdir(exist_ok=True)
    daily.write_text("# 2026-01-05\n\nMoved the standup to 9:30.\n")
    (ws.root / "memory" / "sub").mkdir()
    (ws.root / "memory" / "sub" / "deep.md").write_text("# Deeper\n\nnot a top-level memory file\n")
    rt, api = open_app(ws)

    connectors = {c["name"]: c for c in api.get("/api/connectors").json()["items"]}
    assert set(connectors) == {"workspace memory", "Claude Code memories"}
    mem, cc = connectors["workspace memory"]["id"], connectors["Claude Code memories"]["id"]

    def both_done() -> bool:
        docs = api.get("/api/documents", params={"status": "done"}).json()
        return bool(docs["total"] == 2)

    wait_for(both_done)
    assert list(stored(rt, mem)) == [str(daily.resolve())]
    assert list(stored(rt, cc)) == [str((claude / "MEMORY.md").resolve())]
    daily.write_text("# 2026-01-05\n\nMoved the standup to 10:00.\n")
    wait_for(lambda: any("10:00" in c for c in stored(rt, mem).get(str(daily.resolve()), [])))
    assert not any("9:30" in c for cs in stored(rt, mem).values() for c in cs)


def test_auto_ingest_is_idempotent(
    make_workspace: Callable[..., Workspace],
    open_app: Callable[[Workspace], tuple[Runtime, TestClient]],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "empty-home"))
    ws = make_workspace("none", documents={"auto_ingest": True})
    rt, api = open_app(ws)
    assert [c["name"] for c in api.get("/api/connectors").json()["items"]] == ["workspace memory"]
    rt.stop()
    _rt2, api2 = open_app(ws)  # a second start finds its connector: none is added
    assert api2.get("/api/connectors").json()["total"] == 1
