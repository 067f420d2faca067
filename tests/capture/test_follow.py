"""The follower over a real database: each turn stored once, across restarts, rotations,
two followers, and hostile paths (symlinks out of the root, FIFOs)."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import signet.cli.main  # noqa: F401  (registers every command on the app)
from signet.capture.follow import LiveCapture
from signet.cli.app import app
from signet.config import CaptureSettings
from signet.store.database import Database
from signet.workspace import Workspace
from tests.capture.transcripts import claude_line, codex_lines, openclaw_lines
from tests.conftest import write_config


@pytest.fixture
def db(tmp_path: Path) -> Iterator[Database]:
    d = Database(tmp_path / "memories.db").open()
    yield d
    d.close()


def follower(db: Database, roots: dict[str, Path], **kw: Any) -> LiveCapture:
    settings = CaptureSettings(
        harnesses=list(roots),
        roots={k: [str(v)] for k, v in roots.items()},
        extract_idle_s=kw.pop("extract_idle_s", 0),
        backfill_hours=kw.pop("backfill_hours", 24),
        poll_interval_s=kw.pop("poll_interval_s", 0.2),
    )
    return LiveCapture(db, settings, enqueue=kw.pop("enqueue", True), max_attempts=3, **kw)


def turns(db: Database, key: str | None = None) -> list[tuple[str, int, str, str]]:
    sql = "SELECT session_key, turn_index, role, content FROM transcript_turns"
    sql += " WHERE session_key = ? ORDER BY turn_index" if key else " ORDER BY session_key, turn_index"
    return [tuple(r) for r in db.read(lambda c: c.execute(sql, (key,) if key else ()).fetchall())]


def append(path: Path, text: str) -> None:
    with path.open("a", encoding="utf-8") as fh:
        fh.write(text)


def test_a_growing_claude_code_session_is_stored_turn_by_turn_once(db: Database, tmp_path: Path) -> None:
    root = tmp_path / "projects"
    (root / "-home-u-alpha").mkdir(parents=True)
    f = root / "-home-u-alpha" / "s1.jsonl"
    cap = follower(db, {"claude-code": root})
    append(f, claude_line("s1", 0, "user", "first question about the deploy") + claude_line("s1", 1, "assistant", "a"))
    line2 = claude_line("s1", 2, "user", "second question")
    append(f, line2[:25])  # half written
    assert cap.scan_once() == 2
    assert cap.scan_once() == 0  # nothing new
    append(f, line2[25:] + claude_line("s1", 3, "assistant", "second answer"))
    assert cap.scan_once() == 2
    stored = turns(db, "claude-code:s1")
    assert [(t[1], t[2], t[3]) for t in stored] == [
        (0, "user", "first question about the deploy"),
        (1, "assistant", "a"),
        (2, "user", "second question"),
        (3, "assistant", "second answer"),
    ]
    # A new follower (a restarted daemon) resumes from the durable cursor: nothing again.
    assert follower(db, {"claude-code": root}).scan_once() == 0
    row = db.read(lambda c: c.execute("SELECT * FROM capture_cursors").fetchone())
    assert row["offset"] == f.stat().st_size and row["turns"] == 4 and row["session_key"] == "claude-code:s1"
    text = db.read(lambda c: c.execute("SELECT content FROM session_transcripts").fetchone()[0])
    assert (
        text
        == "user: first question about the deploy\n\nassistant: a\n\nuser: second question\n\nassistant: second answer"
    )
    conv = db.read(lambda c: c.execute("SELECT project, harness FROM conversations").fetchone())
    assert tuple(conv) == ("alpha", "claude-code")
    # The turns are in the transcript index (recall's expand reads it).
    hits = db.read(
        lambda c: c.execute(
            "SELECT rowid FROM transcript_turns_fts WHERE transcript_turns_fts MATCH 'deploy'"
        ).fetchall()
    )
    assert len(hits) == 1


def test_capture_equals_signet_ingest_of_the_whole_file(db: Database, tmp_path: Path) -> None:
    """A speaker's consecutive lines are merged across batches, as a whole-file parse merges them."""
    from signet.ingest.claude_code import ADAPTER

    root = tmp_path / "projects"
    root.mkdir()
    f = root / "s2.jsonl"
    cap = follower(db, {"claude-code": root})
    append(f, claude_line("s2", 0, "user", "one"))
    cap.scan_once()
    append(f, claude_line("s2", 1, "user", "one more"))  # same speaker, next batch
    cap.scan_once()
    append(f, claude_line("s2", 2, "assistant", "reply"))
    cap.scan_once()
    whole = ADAPTER.parse(f).turns
    assert [(t[2], t[3]) for t in turns(db, "claude-code:s2")] == [(t.role, t.content) for t in whole]


def test_codex_and_openclaw_sessions_are_followed_under_their_session_ids(db: Database, tmp_path: Path) -> None:
    codex_root, claw_root = tmp_path / "codex", tmp_path / "openclaw"
    (codex_root / "2026" / "03" / "01").mkdir(parents=True)
    (claw_root / "main" / "sessions").mkdir(parents=True)
    rollout = codex_root / "2026" / "03" / "01" / "rollout-x.jsonl"
    claw = claw_root / "main" / "sessions" / "c1.jsonl"
    (claw_root / "main" / "other.jsonl").write_text(openclaw_lines("not-a-session", [("user", "ignored")]))
    append(rollout, codex_lines("cx-1", [("user", "codex question"), ("assistant", "codex answer")]))
    append(claw, openclaw_lines("oc-1", [("user", "claw question")]))
    cap = follower(db, {"codex": codex_root, "openclaw": claw_root})
    assert cap.scan_once() == 3
    append(rollout, codex_lines("cx-1", [("user", "later codex question")], meta=False))
    append(claw, openclaw_lines("oc-1", [("assistant", "claw answer")], header=False))
    assert cap.scan_once() == 2
    keys = {t[0] for t in turns(db)}
    assert keys == {"codex:cx-1", "openclaw:oc-1"}
    assert [t[3] for t in turns(db, "codex:cx-1")] == ["codex question", "codex answer", "later codex question"]
    assert [t[3] for t in turns(db, "openclaw:oc-1")] == ["claw question", "claw answer"]


def test_a_truncated_or_replaced_file_is_read_again_without_storing_turns_twice(db: Database, tmp_path: Path) -> None:
    root = tmp_path / "projects"
    root.mkdir()
    f = root / "s3.jsonl"
    cap = follower(db, {"claude-code": root})
    append(f, claude_line("s3", 0, "user", "kept one") + claude_line("s3", 1, "assistant", "kept two"))
    cap.scan_once()
    # Rotated: a new file at the same path (another inode) repeating the start, then more.
    new = root / "s3.new"
    new.write_text(
        claude_line("s3", 0, "user", "kept one")
        + claude_line("s3", 1, "assistant", "kept two")
        + claude_line("s3", 2, "user", "after rotation")
    )
    new.replace(f)
    assert cap.scan_once() == 1
    # Truncated in place to less than was read, then written on.
    f.write_text(claude_line("s3", 3, "assistant", "after truncation"))
    assert cap.scan_once() == 1
    assert [t[3] for t in turns(db, "claude-code:s3")] == ["kept one", "kept two", "after rotation", "after truncation"]


def test_two_followers_of_one_database_never_store_a_line_twice(db: Database, tmp_path: Path) -> None:
    root = tmp_path / "projects"
    root.mkdir()
    f = root / "s4.jsonl"
    a, b = follower(db, {"claude-code": root}), follower(db, {"claude-code": root})
    for i in range(40):
        append(f, claude_line("s4", i, "user" if i % 2 == 0 else "assistant", f"line {i}"))
        (a if i % 3 else b).scan_once()
        (b if i % 3 else a).scan_once()
    a.scan_once()
    b.scan_once()
    assert [t[3] for t in turns(db, "claude-code:s4")] == [f"line {i}" for i in range(40)]


def test_a_symlink_out_of_the_root_a_symlinked_folder_and_a_fifo_are_refused(db: Database, tmp_path: Path) -> None:
    root = tmp_path / "projects"
    (root / "p").mkdir(parents=True)
    outside = tmp_path / "outside"
    outside.mkdir()
    secret = outside / "secret.jsonl"
    secret.write_text(claude_line("stolen", 0, "user", "a private file outside the root"))
    (root / "p" / "link.jsonl").symlink_to(secret)
    (root / "linked-dir").symlink_to(outside, target_is_directory=True)
    os.mkfifo(root / "p" / "pipe.jsonl")
    inside = root / "p" / "real.jsonl"
    inside.write_text(claude_line("ok", 0, "user", "a real session"))
    (root / "p" / "inside-link.jsonl").symlink_to(inside)  # a link within the root: same file, once
    cap = follower(db, {"claude-code": root})
    started = time.monotonic()
    cap.scan_once()
    assert time.monotonic() - started < 5  # the FIFO was not opened for reading (it would block)
    assert {t[0] for t in turns(db)} == {"claude-code:ok"} and len(turns(db)) == 1
    assert cap.stats.refused == 2  # the outward link and the FIFO (the linked folder is never entered)
    paths = [r[0] for r in db.read(lambda c: c.execute("SELECT path FROM capture_cursors").fetchall())]
    assert paths == [str(inside.resolve())]


def test_old_sessions_are_followed_from_their_end_and_extraction_is_queued_for_new_turns(
    db: Database, tmp_path: Path
) -> None:
    root = tmp_path / "projects"
    root.mkdir()
    old = root / "old.jsonl"
    old.write_text(claude_line("old", 0, "user", "an old question") + claude_line("old", 1, "assistant", "old answer"))
    week_ago = time.time() - 7 * 86400
    os.utime(old, (week_ago, week_ago))
    cap = follower(db, {"claude-code": root})
    assert cap.scan_once() == 0 and turns(db) == []
    append(old, claude_line("old", 2, "user", "resumed a week later"))
    assert cap.scan_once() == 1
    assert turns(db, "claude-code:old") == [("claude-code:old", 0, "user", "resumed a week later")]
    jobs = db.read(
        lambda c: c.execute("SELECT json_extract(payload, '$.turn_from'), status FROM memory_jobs").fetchall()
    )
    assert [tuple(j) for j in jobs] == [(0, "pending")]
    append(old, claude_line("old", 3, "assistant", "and its answer"))
    cap.scan_once()  # the job is still pending: it will read the new turn too, no second job
    assert db.read(lambda c: c.execute("SELECT COUNT(*) FROM memory_jobs").fetchone()[0]) == 1


def test_the_follower_thread_picks_up_appends_from_file_events(db: Database, tmp_path: Path) -> None:
    root = tmp_path / "projects"
    root.mkdir()
    f = root / "live.jsonl"
    cap = follower(db, {"claude-code": root}, poll_interval_s=30)  # no rescans: events must drive it
    cap.start()
    try:
        time.sleep(0.5)
        for i in range(6):
            append(f, claude_line("live", i, "user" if i % 2 == 0 else "assistant", f"event {i}"))
            time.sleep(0.05)
        deadline = time.monotonic() + 10
        while len(turns(db)) < 6 and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        cap.stop()
    assert [t[3] for t in turns(db, "claude-code:live")] == [f"event {i}" for i in range(6)]


def test_signet_watch_once_status_and_a_bad_harness(make_workspace: Any, tmp_path: Path) -> None:
    ws: Workspace = make_workspace(embedding="none")
    root = tmp_path / "cc"
    root.mkdir()
    f = root / "w1.jsonl"
    f.write_text(claude_line("w1", 0, "user", "from the cli") + claude_line("w1", 1, "assistant", "hello"))
    write_config(ws, capture={"roots": {"claude-code": [str(root)]}})
    env = {"SIGNET_WORKSPACE": str(ws.root)}
    runner = CliRunner()
    res = runner.invoke(app, ["watch", "--once", "--harness", "claude-code"], env=env)
    assert res.exit_code == 0, res.output
    assert "stored 2 turn(s) from 1 new file(s); queued 1 extraction job(s)" in " ".join(res.output.split())
    again = runner.invoke(app, ["watch", "--once", "--harness", "claude-code"], env=env)
    assert "stored 0 turn(s)" in again.output
    status = runner.invoke(app, ["watch", "--status"], env=env)
    assert status.exit_code == 0 and "claude-code:w1" in status.output
    bad = runner.invoke(app, ["watch", "--harness", "cursor"], env=env)
    assert bad.exit_code == 2
    assert "unknown harness 'cursor'" in bad.output and len(bad.output.strip().splitlines()) == 1


def test_a_session_end_hook_does_not_replace_the_turns_captured_from_the_file(
    make_workspace: Any, open_app: Any, tmp_path: Path
) -> None:
    """The hook may send only the last turns that fit its request; the captured file is whole."""
    rt, api = open_app(make_workspace(embedding="none"))
    root = tmp_path / "projects"
    root.mkdir()
    f = root / "se-1.jsonl"
    for i in range(6):
        append(f, claude_line("se-1", i, "user" if i % 2 == 0 else "assistant", f"captured {i}"))
    cap = follower(rt.db, {"claude-code": root}, enqueue=False)
    assert cap.scan_once() == 6
    last_two = [{"role": "user", "content": "captured 4"}, {"role": "assistant", "content": "captured 5"}]
    r = api.post("/api/hooks/session-end", json={"harness": "claude-code", "session_id": "se-1", "turns": last_two})
    assert r.status_code == 200, r.text
    assert [t[3] for t in turns(rt.db, "claude-code:se-1")] == [f"captured {i}" for i in range(6)]


@pytest.mark.parametrize(
    ("section", "key"),
    [
        ({"harnesses": ["cursor"]}, "capture.harnesses.0"),
        ({"roots": {"vim": ["/tmp"]}}, "capture.roots"),
        ({"pollIntervalS": 0}, "capture.pollIntervalS"),
        ({"follow": True}, "capture.follow"),
    ],
)
def test_bad_capture_settings_are_refused_naming_the_key(section: dict[str, Any], key: str) -> None:
    from signet.config import parse_settings
    from signet.errors import ConfigError

    with pytest.raises(ConfigError) as exc:
        parse_settings({"capture": section})
    assert key in str(exc.value)


def test_the_transcript_index_still_points_at_the_right_turns_after_a_full_vacuum(tmp_path: Path) -> None:
    from signet.store import space
    from signet.store.database import connect
    from signet.store.excerpts import session_excerpts

    path = tmp_path / "vac.db"
    db = Database(path).open()
    root = tmp_path / "projects"
    root.mkdir()
    for name in ("a", "b"):
        for i in range(20):
            append(
                root / f"{name}.jsonl", claude_line(name, i, "user" if i % 2 == 0 else "assistant", f"{name} topic{i}")
            )
    follower(db, {"claude-code": root}, enqueue=False).scan_once()
    db.write(lambda c: c.execute("DELETE FROM transcript_turns WHERE session_key = 'claude-code:a'"))
    db.close()
    conn = connect(path)
    try:
        space.convert(conn)
        conn.execute("INSERT INTO transcript_turns_fts(transcript_turns_fts) VALUES ('integrity-check')")
        found = session_excerpts(conn, "claude-code:b", "topic13", around=0)
        assert [t["content"] for e in found for t in e.turns] == ["b topic13"]
    finally:
        conn.close()


def test_a_session_end_hook_for_a_captured_session_queues_no_second_extraction(
    make_workspace: Any, open_app: Any, tmp_path: Path
) -> None:
    """Capture extracts a followed session from its captured turns; the hook's whole transcript
    would be the same turns again (the LLM paid twice). The hook queues what capture had not."""
    rt, api = open_app(make_workspace(embedding="none"))
    assert rt.hooks.pipeline_enabled
    root = tmp_path / "projects"
    root.mkdir()
    f = root / "se-2.jsonl"
    for i in range(6):
        append(f, claude_line("se-2", i, "user" if i % 2 == 0 else "assistant", f"captured {i}"))
    cap = follower(rt.db, {"claude-code": root}, extract_idle_s=3600)
    assert cap.scan_once() == 6

    def jobs() -> list[dict[str, Any]]:
        rows = rt.db.read(
            lambda c: c.execute(
                "SELECT payload FROM memory_jobs WHERE job_type = 'extract' ORDER BY created_at"
            ).fetchall()
        )
        return [json.loads(r[0]) for r in rows]

    assert jobs() == []  # not quiet for an hour yet
    every = [{"role": "user" if i % 2 == 0 else "assistant", "content": f"captured {i}"} for i in range(6)]
    for _ in range(2):  # a re-sent session-end queues nothing more
        r = api.post("/api/hooks/session-end", json={"harness": "claude-code", "session_id": "se-2", "turns": every})
        assert r.status_code == 200, r.text
    queued = jobs()
    assert [(j["source"], j["session_key"], j["turn_from"]) for j in queued] == [("capture", "claude-code:se-2", 0)]
    assert cap.queue_due(now=True) == 0  # the hook queued capture's backlog: nothing left
    # The worker has done that job; a turn the file gets afterwards is capture's next job.
    rt.db.write(lambda c: c.execute("UPDATE memory_jobs SET status = 'completed'"))
    append(f, claude_line("se-2", 6, "user", "one more after the end"))
    assert cap.scan_once() == 1
    assert cap.queue_due(now=True) == 1
    assert [(j["source"], j["turn_from"]) for j in jobs()] == [("capture", 0), ("capture", 6)]


def test_capture_settings_changed_in_agent_yaml_apply_to_a_running_daemon(
    make_workspace: Any, open_app: Any, tmp_path: Path
) -> None:
    ws = make_workspace(embedding="none")
    rt, _api = open_app(ws)
    assert rt.capture.status()["harnesses"] == [] and not rt.capture.status()["running"]
    root = tmp_path / "projects"
    root.mkdir()
    f = root / "live-1.jsonl"
    append(f, claude_line("live-1", 0, "user", "turned on while running"))
    write_config(ws, capture={"harnesses": ["claude-code"], "roots": {"claude-code": [str(root)]}, "backfillHours": 24})
    assert rt.reload_config() or rt.capture.status()["running"]  # the file watcher may have been first
    deadline = time.monotonic() + 20
    while not turns(rt.db, "claude-code:live-1") and time.monotonic() < deadline:
        time.sleep(0.1)
    assert [t[3] for t in turns(rt.db, "claude-code:live-1")] == ["turned on while running"]
    assert rt.capture.status()["harnesses"] == ["claude-code"] and rt.capture.status()["running"]
    write_config(ws, capture={"harnesses": []})
    rt.reload_config()
    assert not rt.capture.status()["running"] and rt.capture.status()["harnesses"] == []
    append(f, claude_line("live-1", 1, "assistant", "written while capture is off"))
    time.sleep(0.5)
    assert len(turns(rt.db, "claude-code:live-1")) == 1
