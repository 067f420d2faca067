"""Transcript adapters and ``signet ingest``: each harness's real format, stored once."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from signet.ingest.detect import builtin_adapters, detect
from signet.workspace import Workspace
from tests.conftest import DaemonProcess
from tests.harnesses.test_hook_e2e import claude_transcript, codex_rollout


def jsonl(path: Path, rows: list[dict[str, object]]) -> Path:
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return path


def samples(d: Path) -> dict[str, Path]:
    d.mkdir(parents=True, exist_ok=True)
    claude = d / "claude" / "0b6c-session.jsonl"
    claude.parent.mkdir()
    claude_transcript(claude, "0b6c", Path("/home/u/webshop"))
    codex = d / "rollout-2025-07-02T08-00-00-abc.jsonl"
    codex_rollout(codex, "abc", Path("/home/u/billing"))
    openclaw = jsonl(
        d / "claw.jsonl",
        [
            {"type": "session", "version": 3, "id": "cs1", "timestamp": "2025-09-01T12:00:00.000Z", "cwd": "/w/garden"},
            {
                "type": "message",
                "id": "m1",
                "parentId": None,
                "timestamp": "2025-09-01T12:00:01.000Z",
                "message": {
                    "role": "user",
                    "content": [{"type": "text", "text": "water the tomatoes at 7"}],
                    "timestamp": 1756728001000,
                },
            },
            {
                "type": "message",
                "id": "m2",
                "parentId": "m1",
                "timestamp": "2025-09-01T12:00:04.000Z",
                "message": {"role": "toolResult", "content": [{"type": "text", "text": "TOOL"}]},
            },
            {
                "type": "message",
                "id": "m3",
                "parentId": "m2",
                "timestamp": "2025-09-01T12:00:05.000Z",
                "message": {"role": "assistant", "content": [{"type": "text", "text": "Reminder set for 7:00."}]},
            },
        ],
    )
    generic = jsonl(
        d / "chat.ndjson",
        [
            {"speaker": "human", "text": "What's our refund window?", "time": 1735725600},
            {"speaker": "ai", "text": "30 days from delivery.", "time": 1735725660},
        ],
    )
    md = d / "notes.md"
    md.write_text("# Standup 2025-05-05\n\nShipped search filters.\n\n## Blockers\n\nWaiting on the API key.\n")
    chat_md = d / "pairing.md"
    chat_md.write_text("## User\n\nCan we cache the token?\n\n## Assistant\n\nYes, in Redis with a 1h TTL.\n")
    txt = d / "call.txt"
    txt.write_text(
        "[2025-04-01T10:00:00Z] User: the invoice PDF is blank\n"
        "[2025-04-01T10:01:00Z] Assistant: fonts were missing; fixed\n"
    )
    return {
        "claude-code": claude,
        "codex": codex,
        "openclaw": openclaw,
        "jsonl": generic,
        "markdown": md,
        "markdown-chat": chat_md,
        "text": txt,
    }


def test_detection_and_parsing_of_every_format(tmp_path: Path) -> None:
    files = samples(tmp_path)
    adapters = builtin_adapters()
    expect = {
        "claude-code": "claude-code",
        "codex": "codex",
        "openclaw": "openclaw",
        "jsonl": "jsonl",
        "markdown": "markdown",
        "markdown-chat": "markdown",
        "text": "text",
    }
    for key, path in files.items():
        assert detect(path, adapters).name == expect[key], key
    cc = adapters["claude-code"].parse(files["claude-code"])
    assert cc.session_id == "0b6c" and cc.project == "webshop"
    assert [(t.role, t.timestamp) for t in cc.turns] == [
        ("user", "2025-06-01T09:00:00.000000+00:00"),
        ("assistant", "2025-06-01T09:00:05.000000+00:00"),
    ]
    assert "RAW TOOL OUTPUT" not in cc.turns[1].content and "apply_discount" in cc.turns[1].content
    cx = adapters["codex"].parse(files["codex"])
    assert cx.session_id == "abc" and [t.content for t in cx.turns] == [
        "Rename the Invoice model to Bill.",
        "Renamed Invoice to Bill in 4 files.",
    ]
    oc = adapters["openclaw"].parse(files["openclaw"])
    assert [t.content for t in oc.turns] == ["water the tomatoes at 7", "Reminder set for 7:00."]
    gen = adapters["jsonl"].parse(files["jsonl"])
    assert [(t.role, t.timestamp) for t in gen.turns] == [
        ("user", "2025-01-01T10:00:00.000000+00:00"),
        ("assistant", "2025-01-01T10:01:00.000000+00:00"),
    ]
    notes = adapters["markdown"].parse(files["markdown"])
    assert [t.role for t in notes.turns] == ["note", "note"] and notes.turns[1].content.startswith("## Blockers")
    chat = adapters["markdown"].parse(files["markdown-chat"])
    assert [(t.role, t.content) for t in chat.turns] == [
        ("user", "Can we cache the token?"),
        ("assistant", "Yes, in Redis with a 1h TTL."),
    ]
    call = adapters["text"].parse(files["text"])
    assert [(t.role, t.content, t.timestamp) for t in call.turns] == [
        ("user", "the invoice PDF is blank", "2025-04-01T10:00:00.000000+00:00"),
        ("assistant", "fonts were missing; fixed", "2025-04-01T10:01:00.000000+00:00"),
    ]


def test_truncated_last_line_is_tolerated_but_corruption_is_reported(tmp_path: Path) -> None:
    from signet.ingest.base import TranscriptError

    p = tmp_path / "c.jsonl"
    p.write_text('{"speaker": "user", "text": "hi"}\n{"speaker": "ai", "te')
    assert len(builtin_adapters()["jsonl"].parse(p).turns) == 1
    p.write_text('{"speaker": "user", "text": "hi"}\n{oops\n{"speaker": "ai", "text": "x"}\n')
    with pytest.raises(TranscriptError, match=r"c\.jsonl:2"):
        builtin_adapters()["jsonl"].parse(p)


def ingest_cli(ws: Workspace, port: int, *args: str) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "SIGNET_WORKSPACE": str(ws.root),
        "SIGNET_PORT": str(port),
        "SIGNET_HOST": "127.0.0.1",
        "COLUMNS": "120",
    }
    return subprocess.run(
        [sys.executable, "-m", "signet.cli.entry", "ingest", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )


@pytest.mark.slow
@pytest.mark.sqlite_only("reads the stored transcript turns from the workspace's SQLite file")
def test_signet_ingest_stores_turns_with_times_once(
    tmp_path: Path, make_workspace: Callable[..., Workspace], start_daemon: Callable[..., DaemonProcess]
) -> None:
    ws = make_workspace(embedding="none")
    d = start_daemon(ws)
    files = samples(tmp_path / "in")
    res = ingest_cli(ws, d.port, str(tmp_path / "in"))
    assert res.returncode == 0, res.stdout + res.stderr
    assert "stored 7 file(s) (14 turns), skipped 0" in res.stdout
    assert "ingest" in res.stdout and "7/7" in res.stdout  # the progress bar's last frame
    again = ingest_cli(ws, d.port, str(tmp_path / "in"), str(files["codex"]))
    assert again.returncode == 0 and "stored 0 file(s) (0 turns), skipped 7" in again.stdout

    from signet.store.database import connect

    conn = connect(ws.database_path(), readonly=True)
    try:
        rows = conn.execute(
            "SELECT session_key, role, content, created_at FROM transcript_turns ORDER BY session_key, turn_index"
        ).fetchall()
        by_key = {}
        for r in rows:
            by_key.setdefault(r[0], []).append((r[1], r[2], r[3]))
        assert by_key["claude-code:0b6c"][0][2].startswith("2025-06-01T09:00:00")
        assert by_key["codex:abc"][1] == (
            "assistant",
            "Renamed Invoice to Bill in 4 files.",
            "2025-07-02T08:00:09.000000+00:00",
        )
        assert by_key["openclaw:cs1"][0][2].startswith("2025-09-01T12:00:01")
        jobs = conn.execute("SELECT COUNT(*) FROM memory_jobs WHERE job_type = 'extract'").fetchone()[0]
        assert jobs == 7
        convo = conn.execute("SELECT started_at, ended_at FROM conversations WHERE id = 'codex:abc'").fetchone()
        assert convo[0].startswith("2025-07-02T08:00:01") and convo[1].startswith("2025-07-02T08:00:09")
    finally:
        conn.close()

    # A changed file is ingested again and replaces its session's turns.
    with files["jsonl"].open("a") as fh:
        fh.write(json.dumps({"speaker": "human", "text": "And for digital goods?", "time": 1735725700}) + "\n")
    changed = ingest_cli(ws, d.port, str(files["jsonl"]))
    assert "stored 1 file(s) (3 turns)" in changed.stdout
    missing = ingest_cli(ws, d.port, str(tmp_path / "nope.jsonl"))
    assert missing.returncode != 0 and "no such file" in (missing.stdout + missing.stderr)


def test_ingest_endpoint_validates_and_is_idempotent(make_workspace: Callable[..., Workspace]) -> None:
    from fastapi.testclient import TestClient

    from signet.daemon.app import create_app
    from signet.runtime import Runtime

    with Runtime(make_workspace(embedding="none")) as rt, TestClient(create_app(rt, manage_runtime=False)) as api:
        body = {
            "path": "/x/chat.jsonl",
            "content_hash": "a" * 64,
            "adapter": "jsonl",
            "turns": [
                {"role": "user", "content": "hello", "timestamp": "2025-01-01T00:00:00Z"},
                {"role": "note", "content": "a note"},
            ],
        }
        first = api.post("/api/ingest/transcript", json=body).json()
        assert first["status"] == "stored" and first["turns"] == 2 and first["job_id"]
        again = api.post("/api/ingest/transcript", json=body).json()
        assert again == {**first, "status": "skipped", "job_id": None}
        for bad in (
            {"content_hash": "xyz"},
            {"turns": [{"role": "tool", "content": "ls"}]},
            {"turns": [{"role": "user", "content": ""}]},
            {"path": ""},
            {"extra": 1},
        ):
            r = api.post("/api/ingest/transcript", json={**body, **bad})
            assert r.status_code in (400, 422) and "error" in r.json(), bad
