"""Extraction over whole transcripts, against the fake Ollama server: every chunk (with
overlap), whole-file mode, the dedupe pass across chunks, live capture's ``turn_from`` jobs,
and the excerpts recall's ``expand`` reads."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient

from signet.capture.follow import LiveCapture
from signet.config import CaptureSettings
from signet.pipeline.extraction import chunk_transcript
from signet.runtime import Runtime
from signet.store.excerpts import memory_excerpts, search_turns
from tests.capture.transcripts import claude_line
from tests.pipeline.conftest import rows, wait_idle
from tests.pipeline.fake_llm import FakeLLM, as_json

Make = Callable[..., tuple[Runtime, TestClient]]
MARK = re.compile(r"marker-(\d{3})")


def session_turns(n: int = 120) -> list[dict[str, Any]]:
    out = []
    for i in range(n):
        text = f"marker-{i:03d} we looked at step {i} of the schema migration " + "and checked the rows again " * 5
        if i == 57:
            text = "marker-057 decided: the deploy target is the Frankfurt cluster from now on"
        out.append({"role": "user" if i % 2 == 0 else "assistant", "content": text})
    return out


def ingest(api: TestClient, turns: list[dict[str, Any]], session: str = "long-1") -> str:
    body = {
        "path": f"/tmp/{session}.jsonl",
        "content_hash": f"{abs(hash(session)):064x}"[-64:],
        "adapter": "claude-code",
        "session_id": session,
        "harness": "claude-code",
        "turns": turns,
    }
    r = api.post("/api/ingest/transcript", json=body)
    assert r.status_code == 200, r.text
    return str(r.json()["session_key"])


def scripted(fake_llm: FakeLLM) -> list[str]:
    """Each chunk yields the same decision (worded two ways) and one fact of its own."""
    prompts: list[str] = []

    def extract(text: str) -> str:
        prompts.append(text)
        first = MARK.search(text)
        n = int(first.group(1)) if first else -1
        wording = "The deploy target is the Frankfurt cluster" + (" now" if len(prompts) % 2 else "")
        return as_json(
            {
                "facts": [
                    {"content": wording, "type": "decision", "confidence": 0.9},
                    {
                        "content": f"Migration step {n} rechecked the rows of table t{n}",
                        "type": "fact",
                        "confidence": 0.8,
                    },
                ],
                "entities": [
                    {"source": "deploy", "relationship": "targets", "target": "Frankfurt cluster", "confidence": 0.9}
                ],
            }
        )

    fake_llm.extract = extract
    fake_llm.decide = lambda fact, cands: as_json(
        {"action": "add", "targetId": None, "confidence": 0.9, "reason": "new"}
    )
    return prompts


def test_every_chunk_of_a_long_transcript_is_extracted_with_overlap_and_deduplicated(
    pipeline_rt: Make, fake_llm: FakeLLM
) -> None:
    rt, api = pipeline_rt(
        "ollama", embedding="none", transcripts={"chunkChars": 3000, "chunkOverlap": 600, "contextChars": 3000}
    )
    prompts = scripted(fake_llm)
    turns = session_turns()
    key = ingest(api, turns)
    wait_idle(rt, timeout=60)
    text = "\n".join(f"{t['role']}: {t['content']}" for t in turns)
    chunks = chunk_transcript(text, size=3000, overlap=600)
    assert len(prompts) == len(chunks) > 8  # all of it, not the last 8 chunks
    seen = {int(m) for p in prompts for m in MARK.findall(p)}
    assert seen == set(range(len(turns)))  # the beginning of the session too
    firsts = [int(MARK.search(p).group(1)) for p in prompts]  # type: ignore[union-attr]
    assert all(MARK.findall(prompts[i + 1])[0] in MARK.findall(prompts[i]) for i in range(len(prompts) - 1))  # overlap
    written = [r[0] for r in rows(rt, "SELECT content FROM memories WHERE source_type = 'pipeline' AND is_deleted = 0")]
    frankfurt = [w for w in written if "Frankfurt" in w]
    assert len(frankfurt) == 1  # one decision, stated in every chunk, worded two ways
    steps = sorted(w for w in written if w.startswith("Migration step"))
    assert steps == sorted({f"Migration step {n} rechecked the rows of table t{n}" for n in firsts})
    job = rows(rt, "SELECT result FROM memory_jobs WHERE json_extract(payload, '$.session_key') = ?", key)
    assert '"entities": 1' in job[0][0]  # the same triple from every chunk, kept once
    # recall's expand: the turns around where the decision was said
    mid = rows(rt, "SELECT id FROM memories WHERE content LIKE '%Frankfurt%'")[0][0]
    ex = rt.db.read(lambda c: memory_excerpts(c, mid, around=1))
    assert len(ex) == 1 and ex[0].session_key == key and ex[0].turn_index == 57
    assert [t["index"] for t in ex[0].turns] == [56, 57, 58] and "Frankfurt" in ex[0].turns[1]["content"]


def test_whole_file_mode_sends_a_transcript_that_fits_in_one_call(pipeline_rt: Make, fake_llm: FakeLLM) -> None:
    rt, api = pipeline_rt("ollama", embedding="none", transcripts={"mode": "whole", "contextChars": 100_000})
    prompts = scripted(fake_llm)
    ingest(api, session_turns())
    wait_idle(rt, timeout=60)
    assert len(prompts) == 1
    assert "marker-000" in prompts[0] and "marker-119" in prompts[0] and "[truncated]" not in prompts[0]


def test_chunked_mode_splits_even_what_would_fit(pipeline_rt: Make, fake_llm: FakeLLM) -> None:
    rt, api = pipeline_rt(
        "ollama",
        embedding="none",
        transcripts={"mode": "chunked", "contextChars": 100_000, "chunkChars": 4000, "chunkOverlap": 0},
    )
    prompts = scripted(fake_llm)
    ingest(api, session_turns())
    wait_idle(rt, timeout=60)
    assert len(prompts) > 4 and all(len(p) < 4200 for p in prompts)


def test_captured_sessions_extract_only_the_turns_that_arrived_since_the_last_job(
    pipeline_rt: Make, fake_llm: FakeLLM, tmp_path: Path
) -> None:
    rt, _ = pipeline_rt("ollama", embedding="none")
    prompts = scripted(fake_llm)
    root = tmp_path / "projects"
    root.mkdir()
    f = root / "cap.jsonl"
    cap = LiveCapture(
        rt.db,
        CaptureSettings(harnesses=["claude-code"], roots={"claude-code": [str(root)]}, extract_idle_s=0),
        enqueue=True,
        max_attempts=3,
    )

    def say(i: int) -> None:
        with f.open("a") as fh:
            fh.write(claude_line("cap", i, "user" if i % 2 == 0 else "assistant", f"marker-{i:03d} captured turn"))

    for i in range(6):
        say(i)
    cap.scan_once()
    wait_idle(rt)
    for i in range(6, 10):
        say(i)
    cap.scan_once()
    wait_idle(rt)
    assert len(prompts) == 2
    assert MARK.findall(prompts[0]) == [f"{i:03d}" for i in range(6)]
    assert MARK.findall(prompts[1]) == [f"{i:03d}" for i in range(4, 10)]  # two turns of context, then the new
    # int(): PostgreSQL's json_extract is `#>>`, text (signet.store.pg_dialect); SQLite's is typed
    froms = [
        int(r[0]) for r in rows(rt, "SELECT json_extract(payload, '$.turn_from') FROM memory_jobs ORDER BY created_at")
    ]
    assert froms == [0, 6]


def test_transcript_search_quotes_hostile_text(pipeline_rt: Make, fake_llm: FakeLLM) -> None:
    rt, api = pipeline_rt("ollama", embedding="none")
    scripted(fake_llm)
    key = ingest(api, session_turns(10), session="short-1")
    wait_idle(rt)
    for text in ['schema" OR migration* NEAR(', "-- ; DROP TABLE transcript_turns", "", "***", "step AND NOT"]:
        hits = rt.db.read(functools.partial(search_turns, text=text, session_key=key))
        assert isinstance(hits, list)
    assert rt.db.read(lambda c: search_turns(c, "schema migration", session_key=key))
    assert rt.db.read(lambda c: search_turns(c, "schema migration", session_key="claude-code:other")) == []
    assert rt.db.read(lambda c: memory_excerpts(c, "no-such-memory")) == []
