"""Content is one memory whatever its Unicode form, and invisible-only content is refused,
through the real app (the hot path and the routes agree); a session end with no LLM answering
says so once, without a traceback (real runtime, real fake-free failure: nothing listens)."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import time
import unicodedata
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
import yaml
from fastapi.testclient import TestClient

from signet.hooks.models import SessionEndRequest
from signet.runtime import Runtime
from signet.workspace import Workspace
from tests.conftest import free_port, start_runtime

TEXT = "Renée's café in Zürich serves crème brûlée"


def test_nfc_and_nfd_are_one_memory(api: TestClient) -> None:
    nfd = unicodedata.normalize("NFD", TEXT)
    assert nfd != TEXT
    first = api.post("/api/memory/remember", json={"content": TEXT}).json()
    second = api.post("/api/memory/remember", json={"content": nfd}).json()
    assert second["deduped"] is True and second["id"] == first["id"]
    assert api.get(f"/api/memory/{first['id']}").json()["content"] == TEXT  # stored composed
    batch = api.post("/api/memory/remember/batch", json={"items": [{"content": nfd}]})
    if batch.status_code == 200:
        assert batch.json()["results"][0]["id"] == first["id"]
    found = api.post("/api/memory/recall", json={"query": unicodedata.normalize("NFD", "crème brûlée")}).json()
    assert found["results"] and found["results"][0]["id"] == first["id"]


def test_a_decomposed_query_finds_by_keyword(make_workspace: Callable[..., Workspace]) -> None:
    """Keyword-only (no embedder, so no vector can mask it): FTS5 splits a decomposed accent
    into two tokens, so an NFD query must be composed before it is searched. Under load the
    test above failed this way whenever the memory's vector was not stored yet."""
    from signet.models import RecallRequest, RememberRequest

    rt = start_runtime(make_workspace(embedding="none"))
    try:
        stored = rt.service.remember(RememberRequest(content=TEXT))
        for query in ("crème brûlée", unicodedata.normalize("NFD", "crème brûlée")):
            out = rt.service.recall(RecallRequest(query=query, track_access=False))
            assert out.method == "fts" and [r.id for r in out.results] == [stored.id], query
    finally:
        rt.stop()


@pytest.mark.parametrize("content", ["\u200b", "\u200b\u200c\u200d", " \ufeff \u2060 ", "\u00ad\n\t"])
def test_invisible_only_content_is_refused(api: TestClient, content: str) -> None:
    for path, body in (
        ("/api/memory/remember", {"content": content}),
        ("/api/memory/remember", {"content": content, "tags": ["x"]}),  # past the hot path's fast shape
        ("/api/memory/modify", {"patches": [{"id": "x", "content": content}], "reason": "r"}),
    ):
        resp = api.post(path, json=body)
        # 422 invalid_request like any other malformed field (docs/api.md); the hot path's shape
        # and the route's answer the same, because the hot path validates with the route's model.
        assert resp.status_code == 422 and resp.json()["code"] == "invalid_request", (path, repr(content), resp.text)
        assert "invisible" in resp.json()["error"] or "empty" in resp.json()["error"]
    assert api.get("/api/memories").json()["total"] == 0


def test_modify_stores_nfc(api: TestClient) -> None:
    mid = api.post("/api/memory/remember", json={"content": "a placeholder fact"}).json()["id"]
    resp = api.post(
        "/api/memory/modify",
        json={"patches": [{"id": mid, "content": unicodedata.normalize("NFD", TEXT)}], "reason": "typo"},
    )
    assert resp.status_code == 200, resp.text
    assert api.get(f"/api/memory/{mid}").json()["content"] == TEXT
    again = api.post("/api/memory/remember", json={"content": TEXT}).json()
    assert again["deduped"] is True and again["id"] == mid


def test_session_end_without_an_llm_warns_once(
    make_workspace: Callable[..., Workspace], caplog: pytest.LogCaptureFixture
) -> None:
    dead = f"http://127.0.0.1:{free_port()}"  # nothing listens: every call is refused at once
    ws = make_workspace(
        embedding="none",
        memory={
            "pipelineV2": {
                "extraction": {"provider": "ollama", "endpoint": dead, "timeout": 2},
                "summarizeHandoff": True,
            }
        },
    )
    rt: Runtime = start_runtime(ws)
    try:
        caplog.set_level(logging.INFO)
        for i in range(3):
            rt.hooks.session_end(
                SessionEndRequest(
                    harness="claude-code",
                    session_id=f"s{i}",
                    turns=[{"role": "user", "content": f"question {i}"}, {"role": "assistant", "content": "answer"}],
                )
            )
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and not any("LLM did not answer" in r.message for r in caplog.records):
            time.sleep(0.05)
        time.sleep(0.5)  # the other sessions' summaries have failed too by now
        said = [r for r in caplog.records if "LLM did not answer" in r.getMessage()]
        assert len(said) == 1 and said[0].levelno == logging.WARNING and said[0].exc_info is None
        assert not [r for r in caplog.records if r.exc_info is not None and r.name.startswith("signet.hooks")]
    finally:
        rt.stop()


def test_no_llm_by_choice_is_not_an_outage(
    make_workspace: Callable[..., Workspace], caplog: pytest.LogCaptureFixture
) -> None:
    """provider: none is a choice: jobs wait (said at INFO), and no "did not answer" warning."""
    rt: Runtime = start_runtime(make_workspace(embedding="none"))
    try:
        caplog.set_level(logging.INFO)
        rt.hooks.session_end(
            SessionEndRequest(
                harness="claude-code",
                session_id="s-none",
                turns=[{"role": "user", "content": "question"}, {"role": "assistant", "content": "answer"}],
            )
        )
        assert rt.pipeline.supply.blocked() is not None  # jobs wait for a provider
        assert rt.pipeline.supply.status()["name"] == "none"  # status probes the provider, as the dashboard does
        time.sleep(0.5)
        assert not [r for r in caplog.records if "did not answer" in r.getMessage()]
    finally:
        rt.stop()


def test_a_daemon_without_its_llm_says_so_once_in_its_log(tmp_path: Path) -> None:
    """The real daemon process and its log file: three session ends, the configured LLM refuses
    every connection; one warning line for the run, no traceback."""
    ws, port = tmp_path / "ws", free_port()
    env = {**os.environ, "SIGNET_WORKSPACE": str(ws), "SIGNET_PORT": str(port), "SIGNET_HOST": "127.0.0.1"}

    def signet(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "signet.cli.entry", *args], capture_output=True, text=True, env=env, timeout=120
        )

    assert signet("setup", "-y", "--embedding", "none", "--llm", "none").returncode == 0
    cfg = yaml.safe_load((ws / "agent.yaml").read_text())
    cfg.setdefault("memory", {})["pipelineV2"] = {
        "summarizeHandoff": True,
        "extraction": {"provider": "ollama", "endpoint": f"http://127.0.0.1:{free_port()}", "timeout": 2},
    }
    (ws / "agent.yaml").write_text(yaml.safe_dump(cfg))
    started = signet("start")
    assert started.returncode == 0, started.stderr
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30) as c:
            for i in range(3):
                resp = c.post(
                    "/api/hooks/session-end",
                    json={
                        "harness": "claude-code",
                        "session_id": f"s{i}",
                        "turns": [
                            {"role": "user", "content": f"question {i}"},
                            {"role": "assistant", "content": "answer"},
                        ],
                    },
                )
                assert resp.status_code == 200, resp.text
        logs = ws / ".daemon" / "logs"
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and "LLM did not answer" not in _read(logs):
            time.sleep(0.1)
        time.sleep(1.0)  # the other sessions' summaries have failed by now too
    finally:
        assert signet("stop").returncode == 0
    text = _read(logs)
    said = [line for line in text.splitlines() if "LLM did not answer" in line]
    assert len(said) == 1 and json.loads(said[0])["level"] == "WARNING", said  # JSON Lines (signet.ops.logs)
    assert "Traceback" not in text, text


def _read(logs: Path) -> str:
    return "".join(p.read_text(encoding="utf-8") for p in sorted(logs.glob("daemon-*.log")))
