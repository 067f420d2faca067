"""The retirement ledger (docs/lifecycle.md): a memory forgotten with ``persist`` stays out,
whichever path its text comes back through (remember, batch, the pipeline re-extracting a
re-ingested transcript, an import), until it is un-retired."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient

from signet.runtime import Runtime
from signet.store.database import connect
from signet.workspace import Workspace
from tests.conftest import DaemonProcess
from tests.harnesses.test_hook_e2e import claude_transcript
from tests.harnesses.test_ingest import ingest_cli
from tests.pipeline.conftest import pipeline_config
from tests.pipeline.fake_llm import FakeLLM, as_json

Open = Callable[[Workspace], tuple[Runtime, TestClient]]
MakeWs = Callable[..., Workspace]

TEXT = "The staging database password rotates every Friday"


@pytest.fixture
def fake_llm() -> Iterator[FakeLLM]:
    f = FakeLLM().start()
    yield f
    f.stop()


def remember(api: TestClient | httpx.Client, content: str, **kw: Any) -> dict[str, Any]:
    r = api.post("/api/memory/remember", json={"content": content, **kw})
    assert r.status_code == 200, r.text
    out: dict[str, Any] = r.json()
    return out


def forget(api: TestClient | httpx.Client, ids: list[str], *, persist: bool) -> dict[str, Any]:
    r = api.post(
        "/api/memory/forget", json={"mode": "execute", "ids": ids, "reason": "wrong and stale", "persist": persist}
    )
    assert r.status_code == 200, r.text
    out: dict[str, Any] = r.json()
    return out


def live_count(rt: Runtime, content: str) -> int:
    return int(
        rt.db.read(
            lambda c: c.execute("SELECT COUNT(*) FROM memories WHERE content = ? AND is_deleted = 0", (content,))
        ).fetchone()[0]
    )


def test_a_retired_text_is_refused_on_every_write_path_until_unretired(make_workspace: MakeWs, open_app: Open) -> None:
    rt, api = open_app(make_workspace(embedding="none"))
    mid = remember(api, TEXT, project="ops")["id"]
    done = forget(api, [mid], persist=True)
    assert done["deleted"] == [mid] and done["retired"] == [mid]

    again = remember(api, TEXT, project="ops")
    assert again["retired"] is True and again["id"] == mid and live_count(rt, TEXT) == 0
    batch = api.post("/api/memory/remember/batch", json={"items": [{"content": TEXT, "project": "ops"}]})
    assert batch.status_code == 200 and batch.json()["results"][0]["retired"] is True
    assert batch.json()["created"] == 0
    assert live_count(rt, TEXT) == 0
    # The ledger is per owner: another project may say the same.
    other = remember(api, TEXT, project="billing")
    assert other["retired"] is False and live_count(rt, TEXT) == 1
    # The ledger is listed; the memory's history says it was retired.
    ledger = api.get("/api/retirements").json()
    assert [(r["memory_id"], r["project"], r["content"]) for r in ledger["items"]] == [(mid, "ops", TEXT)]
    assert [e["event"] for e in api.get(f"/api/memory/{mid}/history").json()["events"]][-2:] == [
        "deleted",
        "retired",
    ]

    # Recover brings the memory back and takes it out of the ledger.
    r = api.post(f"/api/memory/{mid}/recover", json={"reason": "it was right after all"})
    assert r.status_code == 200, r.text
    assert api.get("/api/retirements").json()["total"] == 0
    assert remember(api, TEXT, project="ops")["deduped"] is True

    # Retired again, then un-retired without recovering: the text may be stored anew.
    forget(api, [mid], persist=True)
    r = api.post(f"/api/memory/{mid[:8]}/unretire", json={"reason": "allowed again"})
    assert r.status_code == 200 and r.json()["entries"] == 1, r.text
    assert api.post(f"/api/memory/{mid}/unretire", json={"reason": "twice"}).status_code == 404
    fresh = remember(api, TEXT, project="ops")
    assert fresh["retired"] is False and fresh["id"] != mid and live_count(rt, TEXT) == 2

    # A forget without persist leaves no ledger row: the text may come back (the control).
    gone = remember(api, "A fact forgotten without persist")["id"]
    assert forget(api, [gone], persist=False)["retired"] == []
    assert remember(api, "A fact forgotten without persist")["retired"] is False


def test_a_hard_deleted_retirement_keeps_only_the_hash(make_workspace: MakeWs, open_app: Open) -> None:
    rt, api = open_app(make_workspace(embedding="none"))
    mid = remember(api, TEXT)["id"]
    r = api.post(
        "/api/memory/forget",
        json={"mode": "execute", "ids": [mid], "reason": "erase", "persist": True, "force": True},
    )
    assert r.status_code == 200 and r.json()["retired"] == [mid]
    row = api.get("/api/retirements").json()["items"][0]
    assert row["content"] is None and len(row["content_hash"]) == 64
    out = remember(api, TEXT)
    assert out["retired"] is True and live_count(rt, TEXT) == 0


def signet(d: DaemonProcess, *args: str) -> str:
    import os
    import subprocess
    import sys

    env = {
        **os.environ,
        "SIGNET_WORKSPACE": str(d.workspace.root),
        "SIGNET_PORT": str(d.port),
        "SIGNET_HOST": "127.0.0.1",
    }
    res = subprocess.run(
        [sys.executable, "-m", "signet.cli.entry", *args], capture_output=True, text=True, env=env, timeout=120
    )
    assert res.returncode == 0, res.stdout + res.stderr
    return res.stdout + res.stderr


@pytest.mark.slow
def test_the_ledger_travels_with_an_export_and_is_replayed_on_import(
    tmp_path: Path, make_workspace: MakeWs, start_daemon: Callable[..., DaemonProcess]
) -> None:
    a = start_daemon(make_workspace(embedding="none"))
    with a.client() as api:
        mid = remember(api, TEXT)["id"]
        remember(api, "Kept: the deploy script lives in ops/deploy.sh")
        forget(api, [mid], persist=True)
    dump = tmp_path / "a.jsonl"
    signet(a, "export", str(dump))
    kinds = [json.loads(x)["kind"] for x in dump.read_text().splitlines()]
    assert kinds.count("retirement") == 1 and kinds.index("retirement") < kinds.index("memory")

    # A rebuilt store that still holds the text live (an older copy): the import retires it.
    b = start_daemon(make_workspace(embedding="none"))
    with b.client() as api:
        old = remember(api, TEXT)["id"]
        out = signet(b, "import", str(dump))
        # The tombstone comes along as a tombstone; the store's live copy is retired.
        assert "imported 2 memories" in out and "retirement ledger: 1 rows, 1 memories kept out" in out, out
        assert api.get(f"/api/memory/{old}").json()["is_deleted"] is True
        assert remember(api, TEXT)["retired"] is True
        listed = api.post("/api/memory/recall", json={"query": "staging database password"}).json()["results"]
        assert not any(r["content"] == TEXT for r in listed)


def wait_jobs(ws: Workspace, n_completed: int, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        conn = connect(ws.database_path(), readonly=True)
        try:
            done = conn.execute("SELECT COUNT(*) FROM memory_jobs WHERE status = 'completed'").fetchone()[0]
            busy = conn.execute("SELECT COUNT(*) FROM memory_jobs WHERE status IN ('pending', 'leased')").fetchone()[0]
        finally:
            conn.close()
        if done >= n_completed and not busy:
            return
        time.sleep(0.1)
    raise AssertionError(f"extraction jobs did not complete ({done} completed, {busy} busy)")


RETIRED_FACT = "The checkout discount is applied after tax in cart/total.py"
OTHER_FACT = "apply_discount in cart/total.py must run before tax"


@pytest.mark.slow
@pytest.mark.sqlite_only("waits for its jobs by reading the workspace's SQLite file")
def test_a_retired_memory_does_not_come_back_when_its_transcript_is_ingested_again(
    tmp_path: Path, make_workspace: MakeWs, start_daemon: Callable[..., DaemonProcess], fake_llm: FakeLLM
) -> None:
    facts = [
        {"content": RETIRED_FACT, "type": "fact", "confidence": 0.9},  # wrong: the agent later fixed it
        {"content": OTHER_FACT, "type": "fact", "confidence": 0.9},
    ]
    fake_llm.extract = lambda text: as_json({"facts": facts if "discount" in text else [], "entities": []})
    fake_llm.decide = lambda fact, cands: as_json(
        {"action": "add", "targetId": None, "confidence": 0.9, "reason": "new"}
    )
    ws = make_workspace(embedding="none", memory=pipeline_config(fake_llm))
    d = start_daemon(ws)
    transcript = tmp_path / "projects" / "webshop" / "0b6c-session.jsonl"
    transcript.parent.mkdir(parents=True)
    claude_transcript(transcript, "0b6c", Path("/home/u/webshop"))
    first = ingest_cli(ws, d.port, str(transcript))
    assert first.returncode == 0 and "stored 1 file(s)" in first.stdout, first.stdout + first.stderr
    wait_jobs(ws, 1)

    with d.client() as api:
        mems = api.get("/api/memories", params={"limit": 50}).json()["items"]
        by_text = {m["content"]: m["id"] for m in mems}
        assert {RETIRED_FACT, OTHER_FACT} <= set(by_text), by_text
        forget(api, [by_text[RETIRED_FACT]], persist=True)  # retired for good
        forget(api, [by_text[OTHER_FACT]], persist=False)  # only forgotten: the control

        # The same file again: skipped whole (stored once by its hash).
        same = ingest_cli(ws, d.port, str(transcript))
        assert "skipped 1" in same.stdout, same.stdout
        # The session went on: the changed file is stored again and extracted again.
        with transcript.open("a") as fh:
            fh.write(
                json.dumps(
                    {
                        "type": "user",
                        "uuid": "u4",
                        "parentUuid": "u3",
                        "sessionId": "0b6c",
                        "cwd": "/home/u/webshop",
                        "timestamp": "2025-06-01T09:05:00.000Z",
                        "message": {"role": "user", "content": "Thanks, the discount total looks right now."},
                    }
                )
                + "\n"
            )
        grown = ingest_cli(ws, d.port, str(transcript))
        assert "stored 1 file(s)" in grown.stdout, grown.stdout + grown.stderr
        wait_jobs(ws, 2)
        live = [m["content"] for m in api.get("/api/memories", params={"limit": 50}).json()["items"]]
        assert OTHER_FACT in live  # re-extracted and stored again: the pipeline did run
        assert RETIRED_FACT not in live  # the retired one is not back
        found = api.post("/api/memory/recall", json={"query": "checkout discount tax"}).json()["results"]
        assert all(r["content"] != RETIRED_FACT for r in found)
