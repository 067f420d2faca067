"""/api/hooks/* over the real app, real SQLite and the real local embedder."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient

from signet.daemon.app import create_app
from signet.hooks.budget import estimate_tokens
from signet.hooks.transcripts import transcript_file, write_transcript
from signet.runtime import Runtime
from signet.workspace import Workspace
from tests.conftest import start_runtime

CORPUS = [
    "The user prefers PostgreSQL over MySQL for new projects.",
    "Deployments go out every Thursday afternoon after the QA sign-off.",
    "Alice's cat is called Miso and is afraid of the vacuum cleaner.",
    "The CI pipeline caches pip wheels in a shared volume to save time.",
    "The staging cluster runs in eu-west-1 with three worker nodes.",
]


def seed(api: TestClient, runtime: Runtime, **kw: Any) -> dict[str, str]:
    ids = {}
    for c in CORPUS:
        r = api.post("/api/memory/remember", json={"content": c, **kw})
        assert r.status_code == 200, r.text
        ids[c] = r.json()["id"]
    assert runtime.embeddings.wait_idle(60)
    return ids


def post(api: TestClient, event: str, **body: Any) -> dict[str, Any]:
    r = api.post(f"/api/hooks/{event}", json=body)
    assert r.status_code == 200, r.text
    return r.json()


def test_session_start_has_identity_memories_and_stays_in_budget(api: TestClient, runtime: Runtime) -> None:
    seed(api, runtime, project="shop")
    # A long instruction file must be cut, not blow the budget.
    (runtime.workspace.root / "AGENTS.md").write_text("# Agent\n\n" + "Follow the house rules carefully. " * 800)
    for budget in (0, 20, 150, 400, 1000, 3000):
        out = post(
            api, "session-start", harness="claude-code", session_id=f"b{budget}", project="shop", budget_tokens=budget
        )
        assert out["tokens"] <= budget
        assert estimate_tokens(out["context"]) <= budget
        assert out["budget"] == budget
    out = post(api, "session-start", harness="claude-code", session_id="full", project="shop", budget_tokens=3000)
    text = out["context"]
    assert "## Instructions (AGENTS.md)" in text and "…[truncated]" in text
    assert "## About the user (USER.md)" in text and "Tester" in text
    assert "## Relevant memories" in text and "PostgreSQL" in text
    assert len(out["memory_ids"]) >= 3


def test_session_start_skips_files_the_harness_loads_itself(api: TestClient) -> None:
    out = post(api, "session-start", harness="claude-code", skip_files=["AGENTS.md"])
    assert "AGENTS.md" not in [s["name"] for s in out["sections"]]
    assert "(AGENTS.md)" not in out["context"]
    assert "(SOUL.md)" in out["context"]


def test_prompt_submit_injects_relevant_memory_once(api: TestClient, runtime: Runtime) -> None:
    ids = seed(api, runtime)
    out = post(
        api,
        "user-prompt-submit",
        harness="codex",
        session_id="p1",
        prompt="Should the new service use PostgreSQL or MySQL?",
    )
    assert out["outcome"] == "injected", out
    assert out["memories"][0]["id"] == ids[CORPUS[0]]
    assert "PostgreSQL" in out["context"] and out["tokens"] <= 300
    assert len(out["memories"]) <= 3
    # Asked again in the same session: already in context, not injected twice.
    again = post(
        api,
        "user-prompt-submit",
        harness="codex",
        session_id="p1",
        prompt="Remind me: PostgreSQL or MySQL for the new service?",
    )
    assert ids[CORPUS[0]] not in [m["id"] for m in again["memories"]]
    # Another session gets it again.
    other = post(
        api,
        "user-prompt-submit",
        harness="codex",
        session_id="p2",
        prompt="Should the new service use PostgreSQL or MySQL?",
    )
    assert other["memories"][0]["id"] == ids[CORPUS[0]]


@pytest.mark.parametrize(
    "prompt",
    [
        "Write a haiku about autumn leaves falling in the wind",
        "How do I reverse a linked list in Rust?",
        "ok",
        "/clear",
    ],
)
def test_prompt_submit_injects_nothing_for_unrelated_prompts(api: TestClient, runtime: Runtime, prompt: str) -> None:
    seed(api, runtime)
    out = post(api, "user-prompt-submit", harness="claude-code", session_id="u", prompt=prompt)
    assert out["context"] == "" and out["memories"] == [], out
    assert out["outcome"] in ("below_threshold", "no_results", "skipped")


def test_prompt_submit_respects_a_tiny_budget(api: TestClient, runtime: Runtime) -> None:
    seed(api, runtime)
    out = post(
        api,
        "user-prompt-submit",
        harness="claude-code",
        session_id="t",
        prompt="Which database do we prefer, PostgreSQL or MySQL?",
        budget_tokens=30,
    )
    assert out["tokens"] <= 30


TURNS = [
    {"role": "user", "content": "Let's move the billing service to PostgreSQL.", "timestamp": "2025-03-01T10:00:00Z"},
    {
        "role": "assistant",
        "content": "Done: migrations are in db/migrate, tests pass.",
        "timestamp": "2025-03-01T10:05:00Z",
    },
    {"role": "user", "content": "Next time, start with the invoice exporter.", "timestamp": "2025-03-01T10:06:00Z"},
    {"role": "assistant", "content": "Noted: the invoice exporter is next.", "timestamp": "2025-03-01T10:07:00Z"},
]


def test_session_end_keeps_transcript_handoff_and_queues_extraction(api: TestClient, runtime: Runtime) -> None:
    out = post(
        api, "session-end", harness="claude-code", session_id="s-1", project="billing", turns=TURNS, reason="exit"
    )
    assert out["turns"] == 4 and out["session_key"] == "claude-code:s-1"
    lines = (runtime.workspace.root / "memory" / "claude-code" / "transcripts" / "s-1.jsonl").read_text().splitlines()
    assert len(lines) == 4 and "2025-03-01T10:00:00" in lines[0]

    def read(conn: Any) -> tuple[Any, ...]:
        return (
            conn.execute(
                "SELECT role, content, created_at FROM transcript_turns WHERE session_key = 'claude-code:s-1'"
                " ORDER BY turn_index"
            ).fetchall(),
            conn.execute("SELECT * FROM session_transcripts WHERE session_key = 'claude-code:s-1'").fetchone(),
            conn.execute("SELECT * FROM conversations WHERE id = 'claude-code:s-1'").fetchone(),
            conn.execute("SELECT job_type, status, payload FROM memory_jobs").fetchall(),
        )

    turns, transcript, convo, jobs = runtime.db.read(read)
    assert [t[0] for t in turns] == ["user", "assistant", "user", "assistant"]
    assert turns[0][2].startswith("2025-03-01T10:00:00")
    assert "user: Let's move the billing service" in transcript["content"]
    assert convo["harness"] == "claude-code" and convo["ended_at"].startswith("2025-03-01T10:07")
    assert len(jobs) == 1 and jobs[0][0] == "extract" and '"claude-code:s-1"' in jobs[0][2]
    # Sent again (Codex's Stop fires every turn): still one transcript, one pending job.
    post(api, "session-end", harness="claude-code", session_id="s-1", project="billing", turns=TURNS)
    assert len(runtime.db.read(read)[3]) == 1
    # The next session in the project starts with the handoff.
    nxt = post(api, "session-start", harness="claude-code", session_id="s-2", project="billing")
    assert nxt["handoff_id"] == out["handoff_id"]
    assert "Last session" in nxt["context"] and "invoice exporter" in nxt["context"]


def test_queued_extractions_get_the_configured_max_attempts(make_workspace: Callable[..., Workspace]) -> None:
    """Every path that queues an extract job outside the pipeline (session-end, transcript
    ingest, recovery of a transcript kept while the daemon was down) uses ``maxAttempts``."""
    ws = make_workspace(embedding="none", memory={"pipelineV2": {"maxAttempts": 7, "workers": 0}})
    offline = [{"role": "user", "content": "the deploy key rotates monthly", "timestamp": "2025-03-01T09:00:00Z"}]
    write_transcript(transcript_file(ws.root, "codex", "offline-1"), "codex:offline-1", offline)
    rt = start_runtime(ws)  # recovers the offline transcript and queues its extraction
    app = create_app(rt, manage_runtime=False)

    async def queue_the_others() -> None:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1:3850") as c:
            end = await c.post(
                "/api/hooks/session-end",
                json={"harness": "claude-code", "session_id": "s-7", "project": "billing", "turns": TURNS},
            )
            assert end.status_code == 200 and end.json()["job_id"], end.text
            ingested = await c.post(
                "/api/ingest/transcript",
                json={
                    "path": "/x/chat.jsonl",
                    "content_hash": "b" * 64,
                    "adapter": "jsonl",
                    "session_id": "i-1",
                    "turns": [{"role": "user", "content": "invoices go out on the 1st"}],
                },
            )
            assert ingested.status_code == 200 and ingested.json()["job_id"], ingested.text

    try:
        asyncio.run(queue_the_others())
        jobs = rt.db.read(
            lambda conn: sorted(
                tuple(r)
                for r in conn.execute(
                    "SELECT json_extract(payload, '$.source'), max_attempts FROM memory_jobs WHERE job_type = 'extract'"
                )
            )
        )
        assert jobs == [("ingest", 7), ("ingest", 7), ("session_transcript", 7)]
    finally:
        rt.stop()


def test_session_end_without_turns_stores_nothing(api: TestClient, runtime: Runtime) -> None:
    out = post(api, "session-end", harness="codex", session_id="empty")
    assert out["turns"] == 0 and out["job_id"] is None and out["transcript_path"] is None


def test_remember_recall_and_compaction(api: TestClient, runtime: Runtime) -> None:
    saved = post(
        api,
        "remember",
        harness="opencode",
        content="The release branch is cut on Mondays.",
        project="rel",
        tags=["process"],
    )
    assert saved["deduped"] is False
    runtime.embeddings.wait_idle(60)
    found = post(api, "recall", harness="opencode", query="when is the release branch cut?")
    assert found["results"][0]["id"] == saved["id"]
    got = api.get(f"/api/memory/{saved['id']}").json()
    assert got["who"] == "opencode" and got["source_type"] == "hook"
    pre = post(api, "pre-compaction", harness="claude-code", trigger="auto", custom_instructions="keep the TODOs")
    assert "decisions" in pre["instructions"] and "keep the TODOs" in pre["instructions"]
    done = post(
        api,
        "compaction-complete",
        harness="claude-code",
        session_id="c1",
        project="rel",
        summary="We fixed the flaky login test and planned the cache rewrite.",
    )
    mem = api.get(f"/api/memory/{done['memory_id']}").json()
    assert "flaky login test" in mem["content"] and "compaction" in mem["tags"]
    nxt = post(api, "session-start", harness="claude-code", session_id="c2", project="rel")
    assert "cache rewrite" in nxt["context"]


@pytest.mark.parametrize(
    ("event", "body"),
    [
        ("session-start", {"budget_tokens": -5}),
        ("session-start", {"skip_files": ["../etc/passwd"]}),
        ("session-start", {"surprise": 1}),
        ("user-prompt-submit", {}),
        ("session-end", {"turns": []}),
        ("session-end", {"session_id": "x", "turns": [{"role": "tool", "content": "ls"}]}),
        ("remember", {"content": "   "}),
        ("recall", {"query": ""}),
        ("compaction-complete", {}),
    ],
)
def test_bad_input_is_a_clear_4xx(api: TestClient, event: str, body: dict[str, Any]) -> None:
    r = api.post(f"/api/hooks/{event}", json=body)
    assert r.status_code in (400, 422), r.text
    assert "error" in r.json()


def test_a_configured_summarizer_replaces_the_fallback_handoff(api: TestClient, runtime: Runtime) -> None:
    import time

    svc = runtime.hooks
    svc.summarizer = lambda turns: f"Summary of {len(turns)} turns: billing moved to PostgreSQL; exporter next."
    try:
        post(api, "session-end", harness="claude-code", session_id="sum-1", project="ledger", turns=TURNS)
        deadline = time.monotonic() + 10
        row = None
        while time.monotonic() < deadline:
            row = runtime.db.read(
                lambda c: c.execute(
                    "SELECT kind, content FROM session_handoffs WHERE session_key = 'claude-code:sum-1'"
                ).fetchone()
            )
            if row is not None and row[0] == "summary":
                break
            time.sleep(0.05)
        assert row is not None and tuple(row) == (
            "summary",
            "Summary of 4 turns: billing moved to PostgreSQL; exporter next.",
        )
        nxt = post(api, "session-start", harness="claude-code", session_id="sum-2", project="ledger")
        assert "Summary of 4 turns" in nxt["context"]
    finally:
        svc.summarizer = None
