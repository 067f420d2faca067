"""Must-show: a real daemon follows a Claude Code session as it is written, is killed
(SIGKILL) in the middle of the file, restarts, and every turn is stored exactly once."""

from __future__ import annotations

import signal
import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from signet.workspace import Workspace
from tests.capture.transcripts import claude_line
from tests.conftest import DaemonProcess

TOTAL = 60
BEFORE_RESTART = 40


def stored(ws: Workspace) -> list[tuple[int, str, str]]:
    conn = sqlite3.connect(f"file:{ws.database_path()}?mode=ro", uri=True, timeout=30)
    try:
        has = conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'transcript_turns'").fetchone()
        if has is None:
            return []
        rows = conn.execute(
            "SELECT turn_index, role, content FROM transcript_turns WHERE session_key = 'claude-code:live-1'"
            " ORDER BY turn_index"
        ).fetchall()
        return [(int(r[0]), str(r[1]), str(r[2])) for r in rows]
    finally:
        conn.close()


def wait_for(ws: Workspace, count: int, timeout: float = 60) -> list[tuple[int, str, str]]:
    deadline = time.monotonic() + timeout
    rows = stored(ws)
    while len(rows) < count and time.monotonic() < deadline:
        time.sleep(0.1)
        rows = stored(ws)
    return rows


@pytest.mark.sqlite_only("reads the stored turns from the workspace's SQLite file")
def test_sigkill_mid_file_and_restart_store_every_turn_exactly_once(
    make_workspace: Callable[..., Workspace], start_daemon: Callable[..., DaemonProcess], tmp_path: Path
) -> None:
    root = tmp_path / "claude" / "projects"
    (root / "-home-u-alpha").mkdir(parents=True)
    session = root / "-home-u-alpha" / "live-1.jsonl"
    ws = make_workspace(
        embedding="none",
        capture={
            "harnesses": ["claude-code"],
            "roots": {"claude-code": [str(root)]},
            "pollIntervalS": 0.3,
            "extractIdleS": 3600,
        },
    )
    lines = [
        claude_line("live-1", i, "user" if i % 2 == 0 else "assistant", f"marker-{i:03d} what happened at step {i}")
        for i in range(TOTAL)
    ]
    expected = [
        (i, "user" if i % 2 == 0 else "assistant", f"marker-{i:03d} what happened at step {i}") for i in range(TOTAL)
    ]

    def write(upto: range, pause: float) -> None:
        with session.open("a", encoding="utf-8") as fh:
            for i in upto:
                line = lines[i]
                if i % 7 == 3:  # a line written in two parts: the reader sees half of it first
                    fh.write(line[:40])
                    fh.flush()
                    time.sleep(pause * 2)
                    fh.write(line[40:])
                else:
                    fh.write(line)
                fh.flush()
                time.sleep(pause)

    d1 = start_daemon(ws)
    with d1.client() as c:
        capture = c.get("/api/status").json()["capture"]
    assert capture["harnesses"] == ["claude-code"] and capture["running"] is True
    write(range(12), 0.05)
    partial = wait_for(ws, 10, timeout=30)
    assert len(partial) >= 10, f"the daemon stored {len(partial)} turns while the file grew"
    # The rest of the first part is appended by a writer the kill interrupts the follower of
    # (the daemon may be mid-batch: reading, or committing turns and cursor).
    writer = threading.Thread(target=write, args=(range(12, BEFORE_RESTART), 0.08))
    writer.start()
    time.sleep(0.4)
    d1.proc.send_signal(signal.SIGKILL)  # mid-file: the writer is still appending
    d1.proc.wait()
    killed_at = len(stored(ws))
    writer.join()
    assert killed_at < BEFORE_RESTART  # the daemon died before the file was complete
    assert stored(ws) == expected[:killed_at]  # nothing half-stored by the killed daemon

    d2 = start_daemon(ws)
    write(range(BEFORE_RESTART, TOTAL), 0.02)  # appended after the restart
    rows = wait_for(ws, TOTAL)
    time.sleep(1.0)  # a few more passes: anything stored twice would show now
    rows = stored(ws)
    with d2.client() as c:
        capture = c.get("/api/status").json()["capture"]
    assert capture["files"] == 1 and capture["turns"] == TOTAL and capture["refused"] == 0
    d2.stop()
    assert rows == expected, f"{len(rows)} turns stored for {TOTAL} written"
    conn = sqlite3.connect(ws.database_path())
    try:
        offset, turns = conn.execute("SELECT offset, turns FROM capture_cursors").fetchone()
        assert offset == session.stat().st_size and turns == TOTAL
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        conn.execute("INSERT INTO transcript_turns_fts(transcript_turns_fts) VALUES ('integrity-check')")
    finally:
        conn.close()
