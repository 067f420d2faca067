"""Git sync against a bare repository in a temp dir: setup makes the workspace a repository
that never commits secrets or the database; push, pull a change made elsewhere, and a
conflict reported with the user's file intact."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from signet.config import GitSettings
from signet.errors import InvalidRequest
from signet.gitsync import repo
from signet.gitsync.sync import GitBehind, GitConflict, GitSync, NoRemote, NotARepository
from signet.gitsync.urls import check_url
from signet.runtime import Runtime
from signet.workspace import Workspace
from tests.skills.conftest import git

App = Callable[[Workspace], tuple[Runtime, TestClient]]


def signet(root: Path, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("XDG_", "SIGNET_", "GIT_"))}
    env.update(HOME=str(home), SIGNET_WORKSPACE=str(root), SIGNET_MODEL_CACHE=os.environ["SIGNET_MODEL_CACHE"])
    return subprocess.run(
        [sys.executable, "-m", "signet.cli.entry", *args], capture_output=True, text=True, env=env, timeout=120
    )


@pytest.fixture
def bare(tmp_path: Path) -> Path:
    path = tmp_path / "remote.git"
    git("init", "-q", "--bare", "-b", "main", str(path))
    return path


@pytest.fixture
def synced(make_workspace: Callable[..., Workspace], bare: Path) -> tuple[Workspace, GitSync]:
    ws = make_workspace(embedding="none")
    repo.init(ws.root)
    sync = GitSync(ws.root, GitSettings())
    sync.set_url(str(bare))
    return ws, sync


def elsewhere(tmp_path: Path, bare: Path, name: str, text: str) -> None:
    """Another machine: clone, change ``name``, push."""
    other = tmp_path / "other"
    if not other.exists():
        git("clone", "-q", str(bare), str(other))
    git("pull", "-q", cwd=other)
    (other / name).write_text(text)
    git("commit", "-q", "-am", f"edit {name} elsewhere", cwd=other)
    git("push", "-q", cwd=other)


def test_setup_makes_a_repository_that_never_commits_secrets_or_the_database(tmp_path: Path) -> None:
    root, home = tmp_path / "ws", tmp_path / "home"
    home.mkdir()
    out = signet(root, home, "setup", "-y", "--embedding", "none", "--llm", "none", "--no-launcher")
    assert out.returncode == 0, out.stderr
    assert f"git: created repository {root} (committed)" in out.stdout
    ignore = (root / ".gitignore").read_text()
    for line in (".secrets/", ".daemon/", "memory/*.db", "memory/*.db-*", "harnesses/"):
        assert line in ignore.splitlines()
    (root / ".secrets").mkdir()
    (root / ".secrets" / "store.json").write_text('{"v": 1}')
    (root / "memory" / "memories.db").write_bytes(b"SQLite format 3\0")
    (root / "memory" / "memories.db-wal").write_bytes(b"wal")
    (root / ".daemon" / "pid").write_text("1")
    transcript = root / "memory" / "claude-code" / "transcripts" / "s1.jsonl"
    transcript.parent.mkdir(parents=True)
    transcript.write_text('{"role": "user", "content": "my password is hunter2"}\n')
    (root / "USER.md").write_text("# User\n\n- name: Ada\n")
    assert repo.commit_all(root, "after use")
    tracked = git("ls-files", cwd=root).split()
    assert "USER.md" in tracked and "agent.yaml" in tracked
    assert not [p for p in tracked if p.startswith((".secrets", ".daemon", "memory/")) or p.endswith(".db")]
    again = signet(root, home, "setup", "-y", "--embedding", "none", "--llm", "none", "--no-launcher")
    assert again.returncode == 0 and f"git: kept repository {root}" in again.stdout
    assert (root / ".gitignore").read_text() == ignore  # nothing added twice


def test_an_existing_repository_stops_tracking_a_committed_database(tmp_path: Path) -> None:
    root = tmp_path / "old"
    (root / "memory").mkdir(parents=True)
    (root / "memory" / "memories.db").write_bytes(b"db")
    (root / "AGENTS.md").write_text("# a\n")
    git("init", "-q", "-b", "main", cwd=root)
    git("add", "-A", cwd=root)
    git("commit", "-q", "-m", "before signet", cwd=root)
    (root / "AGENTS.md").write_text("# the user's edit, not for Signet to commit\n")
    report = repo.init(root)
    assert not report.created and report.untracked == ["memory/memories.db"] and report.committed
    assert git("status", "--porcelain", cwd=root).splitlines() == [" M AGENTS.md"]
    assert git("show", "--stat", "--format=%s", "HEAD", cwd=root).split()[:2] == ["signet:", "keep"]
    assert repo.init(root).committed is False  # nothing more to do
    assert (root / "memory" / "memories.db").read_bytes() == b"db"  # still on disk
    assert "memory/memories.db" not in git("ls-files", cwd=root).split()


def test_push_then_pull_a_change_made_elsewhere(synced: tuple[Workspace, GitSync], bare: Path, tmp_path: Path) -> None:
    ws, sync = synced
    pushed = sync.push()
    assert pushed.pushed and git("rev-parse", "main", cwd=bare).strip() == pushed.head
    (ws.root / "SOUL.md").write_text("# Soul\n\nTerse.\n")
    second = sync.push()
    assert second.committed and second.pushed
    assert sync.push().pushed is False  # nothing new
    elsewhere(tmp_path, bare, "USER.md", "# User\n\n- name: changed elsewhere\n")
    pulled = sync.pull()
    assert pulled.pulled and (ws.root / "USER.md").read_text() == "# User\n\n- name: changed elsewhere\n"
    assert (ws.root / "SOUL.md").read_text() == "# Soul\n\nTerse.\n"
    st = sync.status()
    assert st.repository and st.branch == "main" and st.url == str(bare) and st.ahead == 0 and st.behind == 0
    assert st.changed == [] and st.conflicts == []


def test_a_conflict_is_reported_and_the_users_file_is_intact(
    synced: tuple[Workspace, GitSync], bare: Path, tmp_path: Path
) -> None:
    ws, sync = synced
    sync.push()
    elsewhere(tmp_path, bare, "AGENTS.md", "# from the other machine\n")
    mine = "# mine, not yet committed\n"
    (ws.root / "AGENTS.md").write_text(mine)
    with pytest.raises(GitBehind):
        sync.push()  # the remote moved on: never forced
    with pytest.raises(GitConflict) as err:
        sync.pull()
    assert err.value.details["conflicts"] == ["AGENTS.md"] and "merge by hand" in err.value.message
    assert (ws.root / "AGENTS.md").read_text() == mine
    st = sync.status()
    assert st.conflicts == [] and st.changed == []  # committed here, the merge undone
    assert not (ws.root / ".git" / "MERGE_HEAD").exists()
    with pytest.raises(GitConflict):
        sync.sync()  # sync stops at the pull: nothing pushed
    assert "from the other machine" in git("show", "main:AGENTS.md", cwd=bare)


def test_no_repository_no_remote_and_hostile_urls_are_clean_errors(
    make_workspace: Callable[..., Workspace], bare: Path
) -> None:
    ws = make_workspace(embedding="none")
    sync = GitSync(ws.root, GitSettings())
    assert sync.status().repository is False
    with pytest.raises(NotARepository):
        sync.pull()
    repo.init(ws.root)
    for action in (sync.pull, sync.push, sync.sync):
        with pytest.raises(NoRemote):
            action()
    for url in (
        "--upload-pack=touch /tmp/signet-pwned",
        "ext::sh -c touch% /tmp/signet-pwned",
        "fd::7",
        "relative/path",
        "ssh://-oProxyCommand=touch%20/tmp/signet-pwned/x",
        "ssh://git@-oProxyCommand=x/y",
        "https://example.com/a\nb",
    ):
        with pytest.raises(InvalidRequest):
            sync.set_url(url)
    assert sync.url() is None and not Path("/tmp/signet-pwned").exists()
    for url in ("https://example.com/a.git", "git@github.com:me/agents.git", "ssh://h/x", f"file://{bare}", str(bare)):
        assert check_url(url) == url


def test_api_routes(make_workspace: Callable[..., Workspace], open_app: App, bare: Path, tmp_path: Path) -> None:
    ws = make_workspace(embedding="none")
    _, c = open_app(ws)
    assert c.get("/api/git/status").json()["repository"] is False
    r = c.post("/api/git/pull")
    assert r.status_code == 400 and r.json()["code"] == "not_a_repository"
    repo.init(ws.root)
    r = c.post("/api/git/push")
    assert r.status_code == 400 and r.json()["code"] == "no_remote"
    assert c.post("/api/git/config", json={"url": "ext::sh -c id"}).status_code == 400
    assert c.post("/api/git/config", json={"url": "-oProxyCommand=id"}).status_code == 400
    assert c.post("/api/git/config", json={"url": str(bare), "force": True}).status_code == 422
    assert c.post("/api/git/config", json={"url": str(bare)}).json()["url"] == str(bare)
    assert c.get("/api/git/config").json() == {"remote": "origin", "url": str(bare), "branch": "main"}
    assert c.post("/api/git/sync").json()["pushed"] is True
    elsewhere(tmp_path, bare, "AGENTS.md", "# theirs\n")
    (ws.root / "AGENTS.md").write_text("# ours\n")
    r = c.post("/api/git/pull")
    assert r.status_code == 409 and r.json()["code"] == "git_conflict" and r.json()["conflicts"] == ["AGENTS.md"]
    assert (ws.root / "AGENTS.md").read_text() == "# ours\n"
    assert c.post("/api/git/push").json()["code"] == "git_behind"


def test_cli(tmp_path: Path, bare: Path) -> None:
    root, home = tmp_path / "ws", tmp_path / "home"
    home.mkdir()
    assert signet(root, home, "setup", "-y", "--embedding", "none", "--llm", "none", "--no-launcher").returncode == 0
    no_remote = signet(root, home, "git", "push")
    assert no_remote.returncode == 1 and no_remote.stderr.count("\n") == 1 and "git config --url" in no_remote.stderr
    assert signet(root, home, "git", "config", "--url", str(bare)).returncode == 0
    out = signet(root, home, "git", "push")
    assert out.returncode == 0 and "pushed to origin/main" in out.stdout, out.stderr
    status = signet(root, home, "git", "status")
    assert f"remote: origin {bare}" in status.stdout and "ahead 0, behind 0" in status.stdout
    elsewhere(tmp_path, bare, "AGENTS.md", "# theirs\n")
    (root / "AGENTS.md").write_text("# ours\n")
    conflict = signet(root, home, "git", "sync")
    assert conflict.returncode == 1 and conflict.stderr.count("\n") == 1 and "AGENTS.md changed both" in conflict.stderr
    assert (root / "AGENTS.md").read_text() == "# ours\n"
    bad = signet(root, home, "git", "config", "--url", "ext::sh -c id")
    assert bad.returncode == 1 and bad.stderr.count("\n") == 1


def test_identity_sync_auto_commits_in_a_workspace_setup_made_a_repository(
    make_workspace: Callable[..., Workspace],
) -> None:
    from signet.config import HooksSettings
    from signet.hooks.watcher import IdentityWatcher

    ws = make_workspace(embedding="none")
    watcher = IdentityWatcher(ws.root, HooksSettings())
    assert watcher.commit(["AGENTS.md"]) is False  # not a repository: nothing to commit into
    repo.init(ws.root)
    (ws.root / "AGENTS.md").write_text("# edited\n")
    assert watcher.commit([str(ws.root / "AGENTS.md")]) is True
    assert "_auto_AGENTS.md" in git("log", "-1", "--format=%s", cwd=ws.root)
    assert git("status", "--porcelain", cwd=ws.root) == ""
