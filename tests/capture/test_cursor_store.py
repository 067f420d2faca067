"""Cursor chat stores (``state.vscdb``): every conversation of a store, in both layouts
Cursor has used, stored once per conversation by ``signet ingest``; hostile files refused."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from signet.ingest.base import TranscriptError
from signet.ingest.cursor import ADAPTER
from signet.ingest.detect import detect
from signet.store.database import connect
from signet.workspace import Workspace
from tests.conftest import DaemonProcess
from tests.harnesses.test_ingest import ingest_cli


def make_store(path: Path) -> Path:
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE ItemTable (key TEXT UNIQUE ON CONFLICT REPLACE, value BLOB)")
    conn.execute("CREATE TABLE cursorDiskKV (key TEXT UNIQUE ON CONFLICT REPLACE, value BLOB)")
    inline = {
        "_v": 2,
        "composerId": "c-inline",
        "name": "Rename the exporter",
        "createdAt": 1767261600000,
        "lastUpdatedAt": 1767261900000,
        "conversation": [
            {"type": 1, "bubbleId": "b1", "text": "Rename the invoice exporter to billing-export"},
            {"type": 2, "bubbleId": "b2", "text": "Renamed it in 3 files.", "codeBlocks": []},
        ],
    }
    split = {
        "_v": 10,
        "composerId": "c-split",
        "name": "Fix the flaky test",
        "createdAt": 1767348000000,
        "lastUpdatedAt": 1767348600000,
        "fullConversationHeadersOnly": [
            {"bubbleId": "x1", "type": 1},
            {"bubbleId": "x2", "type": 2},
            {"bubbleId": "x3", "type": 2},  # a tool call: no text
            {"bubbleId": "gone", "type": 2},  # its bubble row is missing
            {"bubbleId": "x4", "type": 1},
        ],
    }
    rows = [
        ("composerData:c-inline", json.dumps(inline)),
        ("composerData:c-split", json.dumps(split).encode()),  # BLOB values too
        ("composerData:c-broken", "{not json"),
        ("bubbleId:c-split:x1", json.dumps({"_v": 3, "type": 1, "text": "Why does test_sync fail on CI?"})),
        ("bubbleId:c-split:x2", json.dumps({"_v": 3, "type": 2, "text": "It depends on the clock; I froze it."})),
        ("bubbleId:c-split:x3", json.dumps({"_v": 3, "type": 2, "text": "", "toolFormerData": {"name": "edit"}})),
        ("bubbleId:c-split:x4", json.dumps({"_v": 3, "type": 1, "text": "Thanks, ship it"})),
        ("otherKey:zzz", "{}"),
    ]
    conn.executemany("INSERT INTO cursorDiskKV VALUES (?, ?)", rows)
    old = {
        "tabs": [
            {
                "tabId": "tab-1",
                "chatTitle": "Old chat",
                "lastSendTime": 1735725600000,
                "bubbles": [
                    {"type": "user", "text": "What port does the API use?"},
                    {"type": "ai", "rawText": "Port 8080 in production."},
                ],
            }
        ]
    }
    conn.execute(
        "INSERT INTO ItemTable VALUES (?, ?)", ("workbench.panel.aichat.view.aichat.chatdata", json.dumps(old))
    )
    conn.commit()
    conn.close()
    return path


def test_every_conversation_of_both_layouts_is_read(tmp_path: Path) -> None:
    store = make_store(tmp_path / "state.vscdb")
    assert detect(store).name == "cursor"
    many = {t.session_id: t for t in ADAPTER.parse_many(store)}
    assert set(many) == {"c-inline", "c-split", "tab-1"}
    assert [(t.role, t.content) for t in many["c-inline"].turns] == [
        ("user", "Rename the invoice exporter to billing-export"),
        ("assistant", "Renamed it in 3 files."),
    ]
    assert [(t.role, t.content) for t in many["c-split"].turns] == [
        ("user", "Why does test_sync fail on CI?"),
        ("assistant", "It depends on the clock; I froze it."),
        ("user", "Thanks, ship it"),
    ]
    assert many["c-split"].turns[0].timestamp is not None and many["c-split"].turns[0].timestamp.startswith(
        "2026-01-02"
    )
    assert [t.content for t in many["tab-1"].turns] == ["What port does the API use?", "Port 8080 in production."]
    assert ADAPTER.parse(store).session_id == "c-split"  # the most recently updated


def test_files_that_are_not_cursor_stores_are_refused_or_empty(tmp_path: Path) -> None:
    garbage = tmp_path / "fake.vscdb"
    garbage.write_bytes(b"this is not a database at all\n" * 100)
    with pytest.raises(TranscriptError, match="not a SQLite database"):
        ADAPTER.parse_many(garbage)
    other = tmp_path / "other.vscdb"
    sqlite3.connect(other).execute("CREATE TABLE unrelated (x)").connection.close()
    assert ADAPTER.parse_many(other) == []
    store = make_store(tmp_path / "state.vscdb")
    before = store.read_bytes()
    ADAPTER.parse_many(store)
    assert store.read_bytes() == before  # opened read-only


@pytest.mark.sqlite_only("counts the stored turns in the workspace's SQLite file")
def test_signet_ingest_stores_each_conversation_once(
    tmp_path: Path, make_workspace: Callable[..., Workspace], start_daemon: Callable[..., DaemonProcess]
) -> None:
    ws = make_workspace(embedding="none")
    d = start_daemon(ws)
    store = make_store(tmp_path / "state.vscdb")
    res = ingest_cli(ws, d.port, str(store))
    assert res.returncode == 0, res.stdout + res.stderr
    assert "stored 3 file(s) (7 turns), skipped 0" in res.stdout
    again = ingest_cli(ws, d.port, str(store))
    assert again.returncode == 0 and "stored 0 file(s) (0 turns), skipped 3" in again.stdout
    conn = sqlite3.connect(store)  # one conversation grows: only it is stored again
    conn.execute(
        "INSERT INTO cursorDiskKV VALUES (?, ?)",
        ("bubbleId:c-split:x5", json.dumps({"type": 2, "text": "Shipped in v2.3."})),
    )
    data = json.loads(conn.execute("SELECT value FROM cursorDiskKV WHERE key = 'composerData:c-split'").fetchone()[0])
    data["fullConversationHeadersOnly"].append({"bubbleId": "x5", "type": 2})
    conn.execute("UPDATE cursorDiskKV SET value = ? WHERE key = 'composerData:c-split'", (json.dumps(data),))
    conn.commit()
    conn.close()
    third = ingest_cli(ws, d.port, str(store))
    assert "stored 1 file(s) (4 turns), skipped 2" in third.stdout
    db = connect(ws.database_path(), readonly=True)
    try:
        keys = dict(db.execute("SELECT session_key, COUNT(*) FROM transcript_turns GROUP BY session_key").fetchall())
    finally:
        db.close()
    assert keys == {"cursor:c-inline": 2, "cursor:c-split": 4, "cursor:tab-1": 2}
