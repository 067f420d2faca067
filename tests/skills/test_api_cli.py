"""``/api/skills`` on the real app and ``signet skill`` in a subprocess; ``skill_meta``."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from fastapi.testclient import TestClient

from signet.runtime import Runtime
from signet.workspace import Workspace
from tests.conftest import write_config
from tests.skills.conftest import bare_repo_with_skill, install_harnesses, run_cli, write_skill

App = Callable[[Workspace], tuple[Runtime, TestClient]]


def test_api_list_install_show_use_uninstall(
    skill_workspace: Workspace, open_app: App, home: Path, tmp_path: Path
) -> None:
    install_harnesses(skill_workspace, home, ("claude-code",))
    rt, c = open_app(skill_workspace)
    assert c.get("/api/skills").json() == {"skills": [], "problems": []}
    src = write_skill(tmp_path / "triage", "triage", description="Triage incoming issues")
    r = c.post("/api/skills/install", json={"source": str(src)})
    assert r.status_code == 201, r.text
    assert r.json()["links"][0]["harness"] == "claude-code"
    assert (home / ".claude" / "skills" / "triage").is_symlink()
    assert c.post("/api/skills/install", json={"source": str(src)}).status_code == 409
    shown = c.get("/api/skills/triage").json()
    assert shown["files"] == ["SKILL.md", "scripts/tag.sh"] and "Tag it" in shown["body"]
    assert c.post("/api/skills/triage/use").json() == {"name": "triage", "use_count": 1}
    listed = c.get("/api/skills").json()["skills"]
    assert listed[0]["use_count"] == 1 and listed[0]["linked"] == ["claude-code"]
    rows = rt.db.read(lambda conn: conn.execute("SELECT skill_name, use_count, source FROM skill_meta").fetchall())
    assert [tuple(r) for r in rows] == [("triage", 1, str(src.resolve()))]
    assert c.get("/api/skills/search", params={"q": "issues"}).json()["results"][0]["name"] == "triage"
    assert c.delete("/api/skills/triage").status_code == 200
    assert not (home / ".claude" / "skills" / "triage").exists()
    assert c.get("/api/skills/triage").status_code == 404
    assert rt.db.read(lambda conn: conn.execute("SELECT count(*) FROM skill_meta").fetchone()[0]) == 0


def test_api_refuses_remote_and_hostile_sources(
    make_workspace: Callable[..., Workspace], open_app: App, tmp_path: Path
) -> None:
    ws = make_workspace(embedding="none")
    _, c = open_app(ws)
    bare = bare_repo_with_skill(tmp_path, "remote-one")
    off = c.post("/api/skills/install", json={"source": f"file://{bare}"})
    assert off.status_code == 400 and "skills.allowRemote" in off.json()["error"]
    for source in ("--upload-pack=touch /tmp/signet-pwned", "ext::sh -c touch% /tmp/signet-pwned", "/no/such/dir"):
        r = c.post("/api/skills/install", json={"source": source})
        assert r.status_code == 400, (source, r.text)
    assert not Path("/tmp/signet-pwned").exists()
    assert c.post("/api/skills/install", json={"source": "x", "extra": 1}).status_code == 422
    for bad in ("..", "Evil", "a--b"):
        assert c.get(f"/api/skills/{bad}").status_code in (400, 404)
    assert c.delete("/api/skills/..%2F..%2Fetc").status_code in (400, 404)
    # with allowRemote, the same git URL installs
    allowed = make_workspace(embedding="none", skills={"allowRemote": True})
    _, c2 = open_app(allowed)
    r = c2.post("/api/skills/install", json={"source": f"file://{bare}"})
    assert r.status_code == 201, r.text


def test_api_local_sources_need_a_local_caller(
    make_workspace: Callable[..., Workspace], open_app: App, tmp_path: Path
) -> None:
    ws = make_workspace(embedding="none")
    _, c = open_app(ws)
    src = write_skill(tmp_path / "relayed", "relayed")
    r = c.post("/api/skills/install", json={"source": str(src)}, headers={"X-Forwarded-For": "203.0.113.9"})
    assert r.status_code == 403, r.text
    assert not (ws.root / "skills" / "relayed").exists()


def test_cli_install_list_show_search_uninstall(skill_workspace: Workspace, home: Path, tmp_path: Path) -> None:
    install_harnesses(skill_workspace, home, ("codex",))
    bare = bare_repo_with_skill(tmp_path, "from-git")
    out = run_cli(skill_workspace, home, "skill", "install", f"file://{bare}")
    assert out.returncode == 0, out.stderr
    assert "installed skill from-git 1.0.0" in out.stdout and "codex: linked" in out.stdout
    assert (home / ".codex" / "skills" / "from-git").is_symlink()
    listed = run_cli(skill_workspace, home, "skill", "list")
    assert listed.stdout.startswith("from-git 1.0.0  Cut a release  [codex]")
    assert (
        json.loads(run_cli(skill_workspace, home, "skill", "show", "from-git", "--json").stdout)["name"] == "from-git"
    )
    write_config(skill_workspace, skills={"index": str(tmp_path / "index.json")})
    (tmp_path / "index.json").write_text(json.dumps([{"name": "changelog", "description": "Release changelog"}]))
    found = run_cli(skill_workspace, home, "skill", "search", "release")
    assert found.stdout.splitlines() == [
        "from-git  Cut a release  (installed)",
        "changelog  Release changelog  (index)",
    ]
    gone = run_cli(skill_workspace, home, "skill", "uninstall", "from-git")
    assert gone.returncode == 0 and "codex: unlinked" in gone.stdout
    assert not (home / ".codex" / "skills" / "from-git").exists()
    for args in (
        ("skill", "install", "--", "--upload-pack=touch /tmp/signet-pwned"),
        ("skill", "install", "ext::sh -c touch% /tmp/signet-pwned"),
        ("skill", "uninstall", "from-git"),
        ("skill", "show", "../etc"),
    ):
        bad = run_cli(skill_workspace, home, *args)
        assert bad.returncode != 0 and bad.stderr.count("\n") == 1 and bad.stderr.startswith("error: "), (args, bad)
    assert not Path("/tmp/signet-pwned").exists()


def test_harness_install_links_existing_skills_and_uninstall_unlinks(
    skill_workspace: Workspace, home: Path, tmp_path: Path
) -> None:
    assert run_cli(skill_workspace, home, "skill", "install", str(write_skill(tmp_path / "a", "alpha"))).returncode == 0
    out = run_cli(skill_workspace, home, "install", "claude-code")
    assert out.returncode == 0 and "linked 1 skill(s) into Claude Code" in out.stdout, out.stderr
    assert (home / ".claude" / "skills" / "alpha").is_symlink()
    out = run_cli(skill_workspace, home, "uninstall", "claude-code")
    assert out.returncode == 0 and "unlinked 1 skill(s)" in out.stdout
    assert not (home / ".claude" / "skills" / "alpha").exists()
    assert (skill_workspace.root / "skills" / "alpha" / "SKILL.md").is_file()
