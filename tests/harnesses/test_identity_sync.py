"""Identity sync (watcher), and the harness/identity/config endpoints."""

from __future__ import annotations

import re
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from signet.daemon.app import create_app
from signet.harnesses import install as ops
from signet.hooks.watcher import commit_message, relevant
from signet.models import RememberRequest
from signet.runtime import Runtime
from signet.workspace import Workspace

GIT_ID = ["-c", "user.name=t", "-c", "user.email=t@example.com"]


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=True).stdout


def wait_for(pred: Callable[[], bool], timeout: float) -> float:
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        if pred():
            return time.monotonic() - start
        time.sleep(0.05)
    raise AssertionError(f"not true after {timeout}s")


@pytest.mark.slow
def test_editing_agents_md_regenerates_claude_md_then_commits(
    make_workspace: Callable[..., Workspace], tmp_path: Path
) -> None:
    ws = make_workspace(embedding="none")
    home = tmp_path / "home"
    git(ws.root, "init", "-q")
    git(ws.root, "add", "-A")
    git(ws.root, *GIT_ID, "commit", "-qm", "init")
    ops.install(ops.get_harness("claude-code"), ops.make_context(ws.root, home=home))
    claude_md = home / ".claude" / "CLAUDE.md"
    rt = Runtime(ws).start()
    try:
        time.sleep(0.3)  # the watcher is up
        t0 = time.monotonic()
        (ws.root / "AGENTS.md").write_text("# Agent\n\nAlways run the linter before committing.\n")
        (ws.root / "AGENTS.md").write_text("# Agent\n\nAlways run the linter and the tests before committing.\n")
        wait_for(lambda: "linter and the tests" in claude_md.read_text(), 8)
        took = time.monotonic() - t0
        assert 1.8 <= took <= 5, f"regenerated after {took:.2f}s (debounce 2 s)"
        wait_for(lambda: "_auto_" in git(ws.root, "log", "-1", "--format=%s"), 12)
        took = time.monotonic() - t0
        assert 4.8 <= took <= 9, f"committed after {took:.2f}s (debounce 5 s)"
        subject = git(ws.root, "log", "-1", "--format=%s").strip()
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d_auto_AGENTS\.md", subject), subject
        assert git(ws.root, "log", "--format=%s").count("_auto_") == 1, "two quick saves, one commit"
        assert "linter and the tests" in git(ws.root, "show", "HEAD:AGENTS.md")
        # The regenerated file is still Signet's: uninstall restores it exactly (here: removes it).
        ops.uninstall(ops.get_harness("claude-code"), ws.root)
        assert not claude_md.exists()
    finally:
        rt.stop()


def test_watch_rules_and_message() -> None:
    root = Path("/ws")
    assert relevant(root, root / "AGENTS.md") == (True, True)
    assert relevant(root, root / "agent.yaml") == (True, False)
    assert relevant(root, root / "agents" / "bob" / "SOUL.md") == (True, True)
    assert relevant(root, root / "memory" / "memories.db-wal") == (False, False)
    assert relevant(root, root / "notes.md") == (False, False)
    from datetime import datetime

    assert commit_message("USER.md", datetime(2025, 1, 2, 3, 4, 5)) == "2025-01-02T03-04-05_auto_USER.md"


def test_watcher_can_be_turned_off(make_workspace: Callable[..., Workspace]) -> None:
    ws = make_workspace(embedding="none", hooks={"watch": False})
    with Runtime(ws) as rt:
        assert rt.watcher._threads == []


def test_watcher_sees_agents_files_and_never_the_database(
    make_workspace: Callable[..., Workspace], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Only the root's own files and agents/ are watched, so the store's writes under memory/
    never reach the filter (a recursive watch of the root delivered every WAL write to it),
    while an agent's identity file in an agents/ folder created after start is still seen."""
    import signet.hooks.watcher as watcher_mod

    seen: list[Path] = []
    real = watcher_mod.relevant

    def counting(root: Path, path: Path) -> tuple[bool, bool]:
        seen.append(path)
        return real(root, path)

    monkeypatch.setattr(watcher_mod, "relevant", counting)
    ws = make_workspace(embedding="none")
    with Runtime(ws) as rt:
        time.sleep(0.3)  # the watcher is up
        db_dir = ws.root / "memory"
        for i in range(20):
            (db_dir / "scratch.bin").write_bytes(bytes([i]) * 100)
            rt.service.remember(RememberRequest(content=f"watcher test memory {i}"))
        (ws.root / "agents" / "bob").mkdir(parents=True)
        time.sleep(0.5)  # the agents/ watch starts when the folder appears
        (ws.root / "agents" / "bob" / "SOUL.md").write_text("# Bob\n")
        wait_for(lambda: "agents/bob/SOUL.md" in rt.watcher._changed, 5)
        (ws.root / "USER.md").write_text("# User\n\nPrefers short answers.\n")
        wait_for(lambda: "USER.md" in rt.watcher._changed, 5)
    assert not [p for p in seen if db_dir in p.parents], seen


@pytest.fixture
def quick_api(make_workspace: Callable[..., Workspace]) -> TestClient:
    ws = make_workspace(embedding="none")
    rt = Runtime(ws).start()
    with TestClient(create_app(rt, manage_runtime=False), raise_server_exceptions=False) as c:
        yield c
    rt.stop()


def test_harnesses_endpoints(quick_api: TestClient, tmp_path: Path) -> None:
    rt: Runtime = quick_api.app.state.runtime  # type: ignore[attr-defined]
    listed = quick_api.get("/api/harnesses").json()["harnesses"]
    assert {h["name"] for h in listed} == {"claude-code", "codex", "opencode", "openclaw", "cursor", "windsurf"}
    assert not any(h["installed"] for h in listed)
    home = tmp_path / "home"
    ops.install(ops.get_harness("codex"), ops.make_context(rt.workspace.root, home=home))
    codex = next(h for h in quick_api.get("/api/harnesses").json()["harnesses"] if h["name"] == "codex")
    assert codex["installed"] and codex["complete"] and len(codex["files"]) == 3
    (rt.workspace.root / "AGENTS.md").write_text("# New instructions\n")
    out = quick_api.post("/api/harnesses/regenerate").json()
    assert out["errors"] == {} and out["regenerated"][0]["action"] == "updated"
    assert "# New instructions" in (home / ".codex" / "AGENTS.md").read_text()
    assert (
        quick_api.post("/api/harnesses/regenerate", json={"harnesses": ["codex"]}).json()["regenerated"][0]["action"]
        == "unchanged"
    )
    bad = quick_api.post("/api/harnesses/regenerate", json={"harnesses": ["emacs"]})
    assert bad.status_code == 400 and "unknown harness" in bad.json()["error"]


def test_identity_and_config_endpoints(quick_api: TestClient) -> None:
    rt: Runtime = quick_api.app.state.runtime  # type: ignore[attr-defined]
    ident = quick_api.get("/api/identity").json()
    assert ident["name"] == "test-agent" and ident["fields"]["name"] == "test-agent"
    assert [f["name"] for f in ident["files"] if f["exists"]] == [
        "AGENTS.md",
        "SOUL.md",
        "IDENTITY.md",
        "USER.md",
        "MEMORY.md",
    ]
    files = {f["name"]: f for f in quick_api.get("/api/config").json()["files"]}
    assert {"agent.yaml", "AGENTS.md", "USER.md"} <= set(files)
    saved = quick_api.post("/api/config", json={"file": "USER.md", "content": "# User\n\n- name: Ada\n"})
    assert saved.status_code == 200 and saved.json()["restart_required"] is False
    assert (rt.workspace.root / "USER.md").read_text() == "# User\n\n- name: Ada\n"
    before = (rt.workspace.root / "agent.yaml").read_text()
    for body, status in [
        ({"file": "agent.yaml", "content": "search:\n  alpha: 3\n"}, 400),
        ({"file": "agent.yaml", "content": "search: [\n"}, 400),
        ({"file": "../../etc/passwd.md", "content": "x"}, 400),
        ({"file": "memory/memories.db", "content": "x"}, 400),
        ({"file": "run.sh", "content": "x"}, 400),
        ({"file": "USER.md"}, 422),
    ]:
        r = quick_api.post("/api/config", json=body)
        assert r.status_code == status, (body, r.text)
        assert "error" in r.json()
    assert (rt.workspace.root / "agent.yaml").read_text() == before
    ok = quick_api.post(
        "/api/config", json={"file": "agent.yaml", "content": before + "\nhooks:\n  prompt_max_memories: 2\n"}
    )
    assert ok.status_code == 200 and ok.json()["restart_required"] is True
