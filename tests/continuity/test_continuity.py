"""Session continuity on the real app and runtime, with the fake LLM server of tests/pipeline:
summaries as files and artifact rows, MEMORY.md synthesis, checkpoints and their restore,
continuity scores, the no-LLM mode, tombstones, hostile input."""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from signet.continuity import artifacts, synthesis
from signet.hooks.transcripts import transcript_file, write_transcript
from signet.runtime import Runtime
from signet.store.database import connect
from signet.workspace import Workspace
from tests.conftest import DaemonProcess, free_port, write_config
from tests.continuity.conftest import SUMMARY, SYNTHESIS, end_session, summary_status, wait_for
from tests.pipeline.conftest import pipeline_config
from tests.pipeline.fake_llm import FakeLLM, Reply

OpenApp = Callable[[Workspace], tuple[Runtime, TestClient]]


def summary_files(ws: Workspace) -> list[Path]:
    return sorted((ws.root / "memory").glob("*--summary.md"))


def age_checkpoints(rt: Runtime, hours: float) -> None:
    then = (datetime.now(UTC) - timedelta(hours=hours)).isoformat(timespec="microseconds")
    rt.db.write(lambda c: c.execute("UPDATE session_checkpoints SET created_at = ?", (then,)))


def test_session_end_writes_summary_artifact_memory_md_and_a_restorable_checkpoint(
    continuity_ws: Callable[..., Workspace], open_app: OpenApp, fake_llm: FakeLLM
) -> None:
    ws = continuity_ws()
    memory_md = ws.root / "MEMORY.md"
    memory_md.write_text("# Working memory\n\nMY HAND NOTE: call me Sam.\n")
    rt, api = open_app(ws)
    r = api.post(
        "/api/hooks/remember",
        json={"harness": "claude-code", "content": "The user prefers pytest over unittest", "pinned": True},
    )
    assert r.status_code == 200, r.text
    start = api.post("/api/hooks/session-start", json={"harness": "claude-code", "session_id": "s1", "project": "acme"})
    assert start.status_code == 200 and start.json()["checkpoint_id"] is None
    api.post(
        "/api/hooks/user-prompt-submit",
        json={"harness": "claude-code", "session_id": "s1", "project": "acme", "prompt": "fix the pytest login test"},
    )
    out = end_session(api, "s1")
    assert out["turns"] == 3
    wait_for(lambda: summary_status(rt).get("completed") == 1, what="summary job completed")
    wait_for(lambda: SYNTHESIS.splitlines()[1] in memory_md.read_text(), what="MEMORY.md synthesized")

    # the summary file: immutable markdown with front matter, under memory/
    files = summary_files(ws)
    assert len(files) == 1
    art = artifacts.parse(files[0])
    assert art is not None and SUMMARY.splitlines()[0] in art.body
    assert art.meta["session_key"] == "claude-code:s1" and art.meta["project"] == "acme"
    assert art.meta["model"] == "ollama:qwen3:4b"
    # its artifact row
    rows = rt.db.read(lambda c: c.execute("SELECT * FROM memory_artifacts").fetchall())
    assert len(rows) == 1
    assert rows[0]["source_path"] == f"memory/{files[0].name}"
    assert rows[0]["session_token"] == artifacts.session_token("default", "claude-code:s1")
    assert rows[0]["memory_sentence"] == "Fixed the flaky login test in acme"
    # the handoff became the summary
    handoff = rt.db.read(lambda c: c.execute("SELECT kind, content FROM session_handoffs").fetchone())
    assert handoff["kind"] == "summary" and "ship release 2.4" in handoff["content"]

    # MEMORY.md: hand note kept, the block written by the model, the material in its prompt
    text = memory_md.read_text()
    assert text.startswith("# Working memory\n\nMY HAND NOTE: call me Sam.\n")
    assert text.count(synthesis.START) == 1 and text.count(synthesis.END) == 1
    assert "written by an LLM" in text
    prompt = next(r["body"]["messages"][-1]["content"] for r in fake_llm.requests if "working memory" in str(r["body"]))
    assert "The user prefers pytest over unittest" in prompt and "Fixed the flaky login test" in prompt

    # a note added below the block survives the next synthesis; an edit inside is replaced
    memory_md.write_text(memory_md.read_text().replace(SYNTHESIS.splitlines()[1], "my edit inside") + "\nNOTE BELOW\n")
    fake_llm.synthesize = lambda text: "## Now\n- second synthesis"
    r = api.post("/api/hooks/synthesis/run", json={})
    assert r.status_code == 200 and r.json()["source"] == "llm", r.text
    text = memory_md.read_text()
    assert "MY HAND NOTE" in text and text.endswith("NOTE BELOW\n")
    assert "second synthesis" in text and "my edit inside" not in text

    # the next session start of the same session (resumed) gets its checkpoint back
    resumed = api.post(
        "/api/hooks/session-start",
        json={"harness": "claude-code", "session_id": "s1", "project": "acme", "budget_tokens": 4000},
    ).json()
    assert resumed["checkpoint_id"] is not None
    assert "Where this session left off" in resumed["context"]
    assert "ship release 2.4" in resumed["context"]
    # another session does not
    other = api.post("/api/hooks/session-start", json={"harness": "claude-code", "session_id": "s2"}).json()
    assert other["checkpoint_id"] is None and "Where this session left off" not in other["context"]
    # after the 4 h window the checkpoint is not restored
    age_checkpoints(rt, 4.5)
    late = api.post("/api/hooks/session-start", json={"harness": "claude-code", "session_id": "s1"}).json()
    assert late["checkpoint_id"] is None and "Where this session left off" not in late["context"]

    # checkpoints by session and by project
    by_session = api.get("/api/checkpoints/claude-code:s1").json()
    assert {c["trigger"] for c in by_session["checkpoints"]} == {"session_end", "session_summary"}
    assert api.get("/api/checkpoints", params={"project": "acme"}).json()["count"] == 2
    assert api.get("/api/checkpoints", params={"project": "elsewhere"}).json()["count"] == 0

    # the continuity score of the session reaches the analytics endpoint
    cont = api.get("/api/analytics/continuity").json()
    assert cont["available"] is True and cont["summary"]["count"] == 1
    score = cont["scores"][0]
    assert score["project"] == "acme" and score["memories_recalled"] >= 1
    assert 0.0 <= score["score"] <= 1.0 and "injected memories were used" in score["reasoning"]


def test_no_llm_jobs_wait_never_die_memory_md_is_lists_and_a_provider_drains_them(
    continuity_ws: Callable[..., Workspace], open_app: OpenApp, make_workspace: Callable[..., Workspace]
) -> None:
    ws = continuity_ws(llm=False)
    rt, api = open_app(ws)
    api.post("/api/hooks/remember", json={"content": "Deploys go through the staging cluster first", "pinned": True})
    end_session(api, "offline-1")
    wait_for(lambda: summary_status(rt).get("waiting_for_provider") == 1, what="job waiting for a provider")
    memory_md = ws.root / "MEMORY.md"
    wait_for(lambda: synthesis.START in memory_md.read_text(), what="deterministic MEMORY.md")
    text = memory_md.read_text()
    assert "no LLM configured or answering: the material as lists, no prose" in text
    assert "- Deploys go through the staging cluster first" in text
    status = api.get("/api/continuity/status").json()
    assert status["provider"] is None
    assert "provider" in status["waiting_reason"]
    assert status["summaries"]["by_status"]["dead"] == 0
    # the checkpoint is there without an LLM: the last exchanges
    cps = api.get("/api/checkpoints/claude-code:offline-1").json()["checkpoints"]
    assert cps[0]["trigger"] == "session_end" and "release 2.4" in cps[0]["content"]
    assert summary_files(ws) == []
    rt.stop()

    # a provider configured (here at a restart) drains the waiting job
    fake = FakeLLM().start()
    try:
        fake.summarize = lambda text: "- Offline session summarized later"
        write_config(ws, memory=pipeline_config(fake))
        rt2, _ = open_app(ws)
        wait_for(lambda: summary_status(rt2).get("completed") == 1, what="waiting job drained")
        files = summary_files(ws)
        assert len(files) == 1 and "summarized later" in files[0].read_text()
    finally:
        fake.stop()


def test_an_unreachable_llm_never_kills_a_job_bad_answers_do(
    make_workspace: Callable[..., Workspace], open_app: OpenApp
) -> None:
    late = FakeLLM(port=free_port())  # configured, not listening yet: connection refused
    ws = make_workspace(embedding="none")
    write_config(ws, memory={**pipeline_config(late), "continuity": {"summary_max_attempts": 2}})
    rt, api = open_app(ws)
    end_session(api, "outage")
    wait_for(lambda: summary_status(rt).get("waiting_for_provider") == 1, what="waiting during the outage")
    time.sleep(1.5)  # tried again several times (wait 0.4 s): still waiting, no attempt spent
    row = rt.db.read(lambda c: c.execute("SELECT status, attempts, error FROM summary_jobs").fetchone())
    assert row["status"] in ("waiting_for_provider", "leased") and row["attempts"] <= 1
    assert summary_status(rt).get("dead") is None
    assert "reachable" in row["error"]  # "unreachable" (a call) or "not reachable" (the probe)
    good = late.summarize
    late.summarize = lambda text: Reply(status=500)  # it answers, badly: those attempts count
    late.start()
    try:
        wait_for(lambda: summary_status(rt).get("dead") == 1, timeout=30, what="dead after bad answers")
        row = rt.db.read(lambda c: c.execute("SELECT id, attempts, error FROM summary_jobs").fetchone())
        assert row["attempts"] == 2 and "HTTP 500" in row["error"]
        assert summary_files(ws) == []
        # Once the LLM answers well again, `signet pipeline requeue <id>` brings the dead job back.
        late.summarize = good
        r = api.post("/api/repair/requeue-dead", json={"job_id": row["id"][:8]})
        assert r.status_code == 200 and r.json()["requeued"] == [row["id"]], r.text
        wait_for(lambda: summary_status(rt).get("completed") == 1, timeout=30, what="completed after requeue")
        assert len(summary_files(ws)) == 1
        assert api.post("/api/repair/requeue-dead", json={"job_id": "no-such-job"}).status_code == 404
    finally:
        late.stop()


def test_compaction_checkpoints_and_periodic_checkpoints(
    continuity_ws: Callable[..., Workspace], open_app: OpenApp, fake_llm: FakeLLM
) -> None:
    ws = continuity_ws(checkpoint_every_prompts=2)
    rt, api = open_app(ws)
    base = {"harness": "claude-code", "session_id": "long", "project": "acme"}
    for prompt in ("refactor the billing module", "now add tests for invoices"):
        assert api.post("/api/hooks/user-prompt-submit", json={**base, "prompt": prompt}).status_code == 200
    api.post("/api/hooks/remember", json={**base, "content": "Invoices are rounded half-even"})
    periodic = wait_for(
        lambda: api.get("/api/checkpoints/claude-code:long").json().get("checkpoints"), what="periodic checkpoint"
    )
    assert periodic[0]["trigger"] == "periodic" and "refactor the billing module" in periodic[0]["content"]
    r = api.post("/api/hooks/pre-compaction", json={**base, "trigger": "auto"})
    assert r.status_code == 200 and r.json()["instructions"]
    cps = api.get("/api/checkpoints/claude-code:long").json()["checkpoints"]
    pre = next(c for c in cps if c["trigger"] == "pre_compaction")
    assert "now add tests for invoices" in pre["content"] and "rounded half-even" in pre["content"]
    assert pre["state"]["prompt_count"] == 2
    # the compaction summary job summarizes what is known (the checkpoint) into a DB-native checkpoint
    wait_for(lambda: summary_status(rt).get("completed") == 1, what="compaction summary")
    cps = api.get("/api/checkpoints/claude-code:long").json()["checkpoints"]
    assert cps[0]["trigger"] == "compaction_summary" and "ship release 2.4" in cps[0]["content"]
    assert summary_files(ws) == []  # compaction summaries are not files (spec)
    r = api.post("/api/hooks/compaction-complete", json={**base, "summary": "Billing refactor half done"})
    assert r.status_code == 200
    cps = api.get("/api/checkpoints/claude-code:long").json()["checkpoints"]
    assert cps[0]["trigger"] == "compaction" and "Billing refactor half done" in cps[0]["content"]
    resumed = api.post("/api/hooks/session-start", json={**base, "source": "compact"}).json()
    assert resumed["checkpoint_id"] == cps[0]["id"] and "Billing refactor half done" in resumed["context"]


def test_removed_summaries_stay_removed_across_rebuilds(
    continuity_ws: Callable[..., Workspace], open_app: OpenApp
) -> None:
    ws = continuity_ws()
    rt, api = open_app(ws)
    end_session(api, "private")
    end_session(api, "kept")
    wait_for(lambda: summary_status(rt).get("completed") == 2, what="two summaries")
    end_session(api, "kept")  # a retried session-end hook: the same turns are not summarized again
    time.sleep(0.3)
    assert summary_status(rt) == {"completed": 2} and len(summary_files(ws)) == 2
    token = artifacts.session_token("default", "claude-code:private")
    (path,) = [p for p in summary_files(ws) if token in p.name]
    saved = path.read_bytes()
    # the index is derived: dropped, it is rebuilt from the files
    rt.db.write(lambda c: c.execute("DELETE FROM memory_artifacts"))
    assert rt.db.write(lambda c: artifacts.rebuild(c, ws.root))["indexed"] == 2

    r = api.post(f"/api/artifacts/{token}/remove", json={"reason": "user asked"})
    assert r.status_code == 200, r.text
    assert r.json()["removed_paths"] == [f"memory/{path.name}"]
    assert not path.exists()
    path.write_bytes(saved)  # the file comes back (a backup, a sync)
    assert rt.db.write(lambda c: artifacts.rebuild(c, ws.root)) == {"indexed": 1, "tombstoned": 1, "unreadable": 0}
    rows = rt.db.read(lambda c: c.execute("SELECT session_key FROM memory_artifacts").fetchall())
    assert [r[0] for r in rows] == ["claude-code:kept"]
    rt.stop()
    rt2, api2 = open_app(ws)  # and at the next start
    rows = rt2.db.read(lambda c: c.execute("SELECT session_key FROM memory_artifacts").fetchall())
    assert [r[0] for r in rows] == ["claude-code:kept"]
    assert api2.post(f"/api/artifacts/{token}/remove", json={}).status_code == 404


def test_harness_driven_synthesis(continuity_ws: Callable[..., Workspace], open_app: OpenApp) -> None:
    ws = continuity_ws(llm=False, synthesis_max_chars=500)
    _rt, api = open_app(ws)
    api.post("/api/hooks/remember", json={"content": "The user's name is Ada Lovelace", "pinned": True})
    req = api.get("/api/hooks/synthesis").json()
    assert req["path"] == "MEMORY.md" and req["max_chars"] == 500 and req["material"]["pinned"] == 1
    assert "Ada Lovelace" in req["prompt"] and "Write the working memory" in req["prompt"]
    body = "```markdown\n## User\n- Ada\n" + "- filler line\n" * 100 + "```"
    out = api.post("/api/hooks/synthesis", json={"content": body}).json()
    assert out["source"] == "harness" and out["truncated"] is True and out["chars"] <= 500
    text = (ws.root / "MEMORY.md").read_text()
    assert "## User\n- Ada" in text and "```" not in text and "written by the harness's model" in text


def test_hostile_input(continuity_ws: Callable[..., Workspace], open_app: OpenApp, tmp_path: Path) -> None:
    ws = continuity_ws()
    rt, api = open_app(ws)
    evil = "../../../../" + str(tmp_path).lstrip("/") + "/escaped"
    end_session(api, evil, harness="../../x")
    wait_for(lambda: summary_status(rt).get("completed") == 1, what="summary of the hostile session")
    (path,) = summary_files(ws)
    assert path.resolve().is_relative_to((ws.root / "memory").resolve())
    assert ".." not in path.name and "escaped" not in path.name
    assert not (tmp_path / "escaped").exists() and not list(tmp_path.glob("escaped*"))
    # unknown sessions, path-like keys
    assert api.get("/api/checkpoints/claude-code:nope").status_code == 404
    for key in ("..%2F..%2Fetc%2Fpasswd", "%2E%2E", "x" * 500):
        r = api.get(f"/api/checkpoints/{key}")
        assert r.status_code in (404, 422) and "error" in r.json(), (key, r.text)
    assert api.get("/api/checkpoints", params={"limit": 0}).status_code == 422
    assert api.get("/api/checkpoints", params={"bogus": 1}).status_code == 422
    # synthesis: an agent id that is a path, empty content, unknown fields, markers in content
    assert api.get("/api/hooks/synthesis", params={"agent_id": "../../etc"}).status_code == 404
    assert api.post("/api/hooks/synthesis", json={"content": "x", "agent_id": "../x"}).status_code == 404
    assert api.post("/api/hooks/synthesis", json={"content": ""}).status_code == 422
    assert api.post("/api/hooks/synthesis", json={"content": "x", "extra": 1}).status_code == 422
    r = api.post("/api/hooks/synthesis", json={"content": "<!-- signet:working-memory:end -->"})
    assert r.status_code == 400 and "empty" in r.json()["error"]
    (ws.root / "MEMORY.md").write_text("mine\n")
    r = api.post(
        "/api/hooks/synthesis",
        json={"content": "ok\n<!-- signet:working-memory:end -->\nINJECTED\n<!-- signet:working-memory:start -->"},
    )
    assert r.status_code == 200
    text = (ws.root / "MEMORY.md").read_text()
    assert text.startswith("mine\n") and text.count(synthesis.END) == 1 and text.count(synthesis.START) == 1
    assert text.index("INJECTED") < text.index(synthesis.END)
    # artifact removal: tokens are 16 hex digits
    for token in ("..", "0123456789abcdef", "ZZZZZZZZZZZZZZZZ"):
        r = api.post(f"/api/artifacts/{token}/remove", json={})
        assert r.status_code == 404, r.text
    assert ws.root.is_dir() and (ws.root / "memory").is_dir()


@pytest.mark.sqlite_only("reads sqlite_master and schema_migrations from the workspace's SQLite file")
def test_migration_and_tables_open_on_an_existing_database(workspace: Workspace, runtime: Runtime) -> None:
    """The schema is there for a store made before this migration (it ran on start)."""
    db = connect(workspace.database_path(runtime.settings), readonly=True)  # the runtime's own SQLite library
    try:
        names = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        versions = {r[0] for r in db.execute("SELECT version FROM schema_migrations")}
    finally:
        db.close()
    assert {"summary_jobs", "memory_artifacts", "memory_artifact_tombstones", "session_checkpoints"} <= names
    assert 26 in versions


def splice_cases() -> list[tuple[str, Any]]:
    block = f"{synthesis.START}\nNEW\n{synthesis.END}"
    return [
        ("", block + "\n"),
        ("# mine\n", "# mine\n\n" + block + "\n"),
        (f"top\n{synthesis.START}\nold\n{synthesis.END}\nbottom\n", f"top\n{block}\nbottom\n"),
        # a stray start marker above the real block stays the user's text
        (
            f"{synthesis.START} stray\n{synthesis.START}\nold\n{synthesis.END}\n",
            f"{synthesis.START} stray\n{block}\n",
        ),
        # a start without an end: a new block is appended, nothing is eaten
        (f"a\n{synthesis.START}\nb\n", f"a\n{synthesis.START}\nb\n\n{block}\n"),
    ]


def test_splice_keeps_everything_outside_the_block() -> None:
    block = f"{synthesis.START}\nNEW\n{synthesis.END}"
    for before, after in splice_cases():
        assert synthesis.splice(before, block) == after, before


def test_summary_files_are_immutable(tmp_path: Path) -> None:
    meta = {"session_token": "0123456789abcdef", "captured_at": "2026-11-25T20:00:00+00:00", "job_id": "j1"}
    first = artifacts.write_summary(tmp_path, meta, "one")
    again = artifacts.write_summary(tmp_path, meta, "one (rerun of the same job)")
    assert again == first and "rerun" not in first.read_text()
    other = artifacts.write_summary(tmp_path, {**meta, "job_id": "j2"}, "two")
    assert other != first and first.read_text().endswith("one\n") and other.read_text().endswith("two\n")
    shutil.rmtree(tmp_path / "memory")


def test_session_end_with_the_claude_cli_as_provider(
    make_workspace: Callable[..., Workspace], open_app: OpenApp, tmp_path: Path, monkeypatch: Any
) -> None:
    """The same flow with ``claude -p`` as the LLM: a fake ``claude`` on PATH prints the real
    CLI's ``--output-format json`` result object; the summary and MEMORY.md come from it."""
    from tests.pipeline.fake_cli import FakeCli

    bin_dir = tmp_path / "bin"
    claude = FakeCli(bin_dir, "claude")
    claude.answer("- Summarized by the claude CLI: login test fixed")
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    ws = make_workspace(embedding="none")
    write_config(
        ws,
        memory={
            "pipelineV2": {
                "pollIntervalMs": 50,
                "backoffMaxMs": 400,
                "extraction": {"provider": "claude-code", "model": "", "timeout": 20},
            }
        },
    )
    (ws.root / "MEMORY.md").write_text("# Working memory\n\nHAND NOTE\n")
    rt, api = open_app(ws)
    end_session(api, "cli-1")
    wait_for(lambda: summary_status(rt).get("completed") == 1, timeout=30, what="summary via the claude CLI")
    (path,) = summary_files(ws)
    text = path.read_text()
    assert "Summarized by the claude CLI" in text and "model: claude-code\n" in text
    wait_for(lambda: "written by an LLM" in (ws.root / "MEMORY.md").read_text(), timeout=30, what="MEMORY.md")
    md = (ws.root / "MEMORY.md").read_text()
    assert md.startswith("# Working memory\n\nHAND NOTE\n") and "Summarized by the claude CLI" in md
    runs = claude.runs()
    assert any("Summarize this coding-agent session" in r["stdin"] for r in runs)
    assert all("-p" in r["argv"] and "Summarize" not in " ".join(r["argv"]) for r in runs)
    resumed = api.post("/api/hooks/session-start", json={"harness": "claude-code", "session_id": "cli-1"}).json()
    assert resumed["checkpoint_id"] is not None and "login test fixed" in resumed["context"]


def test_on_a_real_daemon(
    continuity_ws: Callable[..., Workspace], start_daemon: Callable[..., DaemonProcess], fake_llm: FakeLLM
) -> None:
    """The daemon process (uvicorn on loopback) runs the worker: session end over HTTP gives a
    summary file and MEMORY.md, and the resumed session's start restores the checkpoint."""
    ws = continuity_ws()
    (ws.root / "MEMORY.md").write_text("HAND\n")
    d = start_daemon(ws)
    with d.client() as c:
        r = c.post(
            "/api/hooks/session-end",
            json={
                "harness": "codex",
                "session_id": "d-1",
                "project": "acme",
                "turns": [{"role": "user", "content": "ship it"}, {"role": "assistant", "content": "shipped"}],
            },
        )
        assert r.status_code == 200, r.text
        wait_for(
            lambda: c.get("/api/continuity/status").json()["summaries"]["by_status"]["completed"] == 1,
            what="summary on the daemon",
        )
        wait_for(lambda: "written by an LLM" in (ws.root / "MEMORY.md").read_text(), what="MEMORY.md on the daemon")
        assert (ws.root / "MEMORY.md").read_text().startswith("HAND\n")
        assert len(summary_files(ws)) == 1
        start = c.post("/api/hooks/session-start", json={"harness": "codex", "session_id": "d-1"}).json()
        assert start["checkpoint_id"] and "ship release 2.4" in start["context"]
        assert c.get("/api/checkpoints/codex:d-1").json()["count"] == 2
        assert c.get("/api/checkpoints/codex:unknown").status_code == 404


def test_a_spent_budget_makes_summary_jobs_wait_never_die(
    make_workspace: Callable[..., Workspace], open_app: OpenApp, fake_llm: FakeLLM
) -> None:
    """With one call per hour, the first session's summary takes it; MEMORY.md falls back to
    lists (no call is made), and the next session's summary waits for the budget."""
    ws = make_workspace(embedding="none")
    cfg = pipeline_config(fake_llm)
    cfg["pipelineV2"]["budgets"] = {"ollama": {"callsPerHour": 1}}
    cfg["pipelineV2"]["enabled"] = False  # no extraction calls: the summary is the only caller
    write_config(ws, memory=cfg)
    rt, api = open_app(ws)
    end_session(api, "b-1")
    wait_for(lambda: summary_status(rt).get("completed") == 1, what="first summary")
    wait_for(lambda: "material as lists" in (ws.root / "MEMORY.md").read_text(), what="lists: no budget left")
    end_session(api, "b-2")
    wait_for(lambda: summary_status(rt).get("waiting_for_budget") == 1, what="second summary waits")
    time.sleep(1.0)
    assert summary_status(rt) == {"completed": 1, "waiting_for_budget": 1}
    status = api.get("/api/continuity/status").json()
    assert "budget" in status["waiting_reason"] and status["summaries"]["by_status"]["dead"] == 0
    summaries = [r for r in fake_llm.requests if "Summarize this coding-agent session" in str(r["body"])]
    assert len(summaries) == 1  # the call over the limit was never made


def test_a_session_recovered_at_start_up_gets_its_checkpoint_score_and_summary(
    continuity_ws: Callable[..., Workspace], open_app: OpenApp
) -> None:
    """A session that ended while the daemon was down (the hook kept its transcript) is
    stored at start-up; it gets what its session-end hook would have given it."""
    ws = continuity_ws()
    turns = [
        {"role": "user", "content": "The staging database moved to db-staging-2 last night"},
        {"role": "assistant", "content": "Noted: staging now points at db-staging-2"},
    ]
    write_transcript(transcript_file(ws.root, "claude-code", "down-1"), "claude-code:down-1", turns)
    rt, api = open_app(ws)
    wait_for(lambda: summary_status(rt).get("completed") == 1, timeout=30, what="recovered session summarized")
    assert len(summary_files(ws)) == 1
    cps = api.get("/api/checkpoints/claude-code:down-1").json()["checkpoints"]
    ended = [c for c in cps if c["trigger"] == "session_end"]
    assert len(ended) == 1 and "db-staging-2" in ended[0]["content"], cps
