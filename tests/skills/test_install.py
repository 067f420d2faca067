"""Installing skills from folders, git and archives; the links into every harness; uninstall."""

from __future__ import annotations

import io
import tarfile
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from signet.errors import Conflict, InvalidRequest, NotFound
from signet.skills.service import SkillService
from signet.store.database import Database
from signet.workspace import Workspace
from tests.skills.conftest import bare_repo_with_skill, git, install_harnesses, write_skill

HARNESS_DIRS = {
    "claude-code": (".claude", "skills"),
    "codex": (".codex", "skills"),
    "opencode": (".config", "opencode", "skills"),
}


@pytest.fixture
def skills(skill_workspace: Workspace) -> Iterator[SkillService]:
    settings = skill_workspace.settings()
    with Database(skill_workspace.database_path(settings)) as db:
        yield SkillService(skill_workspace.root, settings.skills, db)


def test_folder_install_links_every_harness_and_uninstall_removes_only_its_links(
    skills: SkillService, skill_workspace: Workspace, home: Path, tmp_path: Path
) -> None:
    install_harnesses(skill_workspace, home)
    theirs = home / ".codex" / "skills" / "notes"  # the user's own skill of another name
    write_skill(theirs, "notes")
    src = write_skill(tmp_path / "src" / "git-release", "git-release")
    done = skills.install(str(src))
    dest = skill_workspace.root / "skills" / "git-release"
    assert done.skill.path == str(dest) and (dest / "scripts" / "tag.sh").is_file()
    assert sorted(done.skill.linked) == sorted(HARNESS_DIRS)
    for parts in HARNESS_DIRS.values():
        link = home.joinpath(*parts, "git-release")
        assert link.is_symlink() and link.resolve() == dest.resolve()
        assert (link / "SKILL.md").read_text().startswith("---\nname: git-release")
    listed = skills.list_skills()
    assert [s.name for s in listed.skills] == ["git-release"] and listed.skills[0].version == "1.0.0"
    assert listed.skills[0].source == str(src.resolve())

    removed = skills.uninstall("git-release")
    assert sorted(c.harness for c in removed.links) == sorted(HARNESS_DIRS)
    assert not dest.exists()
    for parts in HARNESS_DIRS.values():
        assert not home.joinpath(*parts, "git-release").is_symlink()
    assert (theirs / "SKILL.md").is_file()  # never touched
    with pytest.raises(NotFound):
        skills.uninstall("git-release")


def test_a_users_own_skill_of_the_same_name_is_kept(
    skills: SkillService, skill_workspace: Workspace, home: Path, tmp_path: Path
) -> None:
    install_harnesses(skill_workspace, home, ("claude-code",))
    mine = write_skill(home / ".claude" / "skills" / "deploy", "deploy", description="mine")
    done = skills.install(str(write_skill(tmp_path / "deploy", "deploy")))
    assert [(c.harness, c.action) for c in done.links] == [("claude-code", "kept")]
    assert not mine.is_symlink() and "mine" in (mine / "SKILL.md").read_text()
    skills.uninstall("deploy")
    assert "mine" in (mine / "SKILL.md").read_text()


def test_install_from_a_git_repository_by_file_url(skills: SkillService, tmp_path: Path) -> None:
    bare = bare_repo_with_skill(tmp_path, "pr-review")
    done = skills.install(f"file://{bare}")
    assert done.skill.name == "pr-review" and done.skill.source == f"file://{bare}"
    folder = Path(done.skill.path)
    assert (folder / "scripts" / "tag.sh").is_file() and not (folder / ".git").exists()


def test_install_twice_conflicts_force_replaces_and_keeps_the_use_count(skills: SkillService, tmp_path: Path) -> None:
    src = write_skill(tmp_path / "lint", "lint")
    skills.install(str(src))
    assert skills.record_use("lint").use_count == 1
    assert skills.record_use("lint").use_count == 2
    with pytest.raises(Conflict):
        skills.install(str(src))
    write_skill(src, "lint", description="Lint harder", version="2.0")
    again = skills.install(str(src), force=True)
    assert again.replaced and again.skill.version == "2.0" and again.skill.use_count == 2
    assert again.skill.relevance > 1.9
    assert [p.name for p in (Path(again.skill.path).parent).iterdir()] == ["lint"]  # no staging left


def _tar(path: Path, members: list[tuple[tarfile.TarInfo, bytes | None]]) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        for info, data in members:
            tar.addfile(info, io.BytesIO(data) if data is not None else None)
    return path


def _file(name: str, data: bytes) -> tuple[tarfile.TarInfo, bytes]:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mode = 0o644
    return info, data


SKILL_MD = b"---\nname: packed\ndescription: From an archive\nversion: 0.3\n---\nDo it.\n"


def test_install_from_tar_gz_and_zip(skills: SkillService, tmp_path: Path) -> None:
    tgz = _tar(tmp_path / "packed.tar.gz", [_file("packed/SKILL.md", SKILL_MD), _file("packed/ref.md", b"x")])
    done = skills.install(str(tgz))
    assert done.skill.name == "packed" and done.skill.version == "0.3"
    assert (Path(done.skill.path) / "ref.md").read_text() == "x"
    skills.uninstall("packed")
    z = tmp_path / "packed.zip"
    with zipfile.ZipFile(z, "w") as zf:
        zf.writestr("SKILL.md", SKILL_MD)
    assert skills.install(str(z)).skill.name == "packed"


def _link(name: str, target: str, kind: bytes = tarfile.SYMTYPE) -> tuple[tarfile.TarInfo, None]:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = target
    return info, None


@pytest.mark.parametrize(
    ("members", "said"),
    [
        ([_file("SKILL.md", SKILL_MD), _file("../escaped.txt", b"owned")], "outside"),
        ([_file("SKILL.md", SKILL_MD), _file("/tmp/escaped-abs.txt", b"owned")], "outside"),
        ([_file("SKILL.md", SKILL_MD), _file("a/../../escaped.txt", b"owned")], "outside"),
        ([_file("SKILL.md", SKILL_MD), _link("passwd", "/etc/passwd")], "is a link"),
        ([_file("SKILL.md", SKILL_MD), _link("up", "../..")], "is a link"),
        ([_file("SKILL.md", SKILL_MD), _link("hard", "/etc/passwd", tarfile.LNKTYPE)], "is a link"),
    ],
)
def test_hostile_tar_archives_are_refused_whole(
    skills: SkillService,
    skill_workspace: Workspace,
    tmp_path: Path,
    members: list[tuple[tarfile.TarInfo, bytes | None]],
    said: str,
) -> None:
    tgz = _tar(tmp_path / "evil.tar.gz", members)
    with pytest.raises(InvalidRequest, match=said):
        skills.install(str(tgz))
    assert not (tmp_path / "escaped.txt").exists() and not Path("/tmp/escaped-abs.txt").exists()
    assert list((skill_workspace.root / "skills").iterdir()) == []  # nothing installed, no staging left


def test_hostile_zip_archives_are_refused(skills: SkillService, skill_workspace: Workspace, tmp_path: Path) -> None:
    escape = tmp_path / "escape.zip"
    with zipfile.ZipFile(escape, "w") as zf:
        zf.writestr("SKILL.md", SKILL_MD)
        zf.writestr("../../zip-escaped.txt", b"owned")
    with pytest.raises(InvalidRequest, match="outside"):
        skills.install(str(escape))
    link = tmp_path / "link.zip"
    with zipfile.ZipFile(link, "w") as zf:
        zf.writestr("SKILL.md", SKILL_MD)
        info = zipfile.ZipInfo("passwd")
        info.external_attr = 0o120777 << 16  # a symlink
        zf.writestr(info, "/etc/passwd")
    with pytest.raises(InvalidRequest, match="is a link"):
        skills.install(str(link))
    bomb = tmp_path / "bomb.zip"
    with zipfile.ZipFile(bomb, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("SKILL.md", SKILL_MD)
        zf.writestr("big.bin", b"\0" * (skills.settings.max_bytes + 1))
    assert bomb.stat().st_size < 1_000_000  # small on disk, large unpacked
    with pytest.raises(InvalidRequest, match=r"skills\.maxBytes"):
        skills.install(str(bomb))
    assert not (tmp_path.parent / "zip-escaped.txt").exists()
    assert list((skill_workspace.root / "skills").iterdir()) == []


def test_a_folder_with_a_link_leading_out_is_refused(skills: SkillService, tmp_path: Path) -> None:
    src = write_skill(tmp_path / "leaky", "leaky")
    (src / "creds").symlink_to(Path.home())
    with pytest.raises(InvalidRequest, match="link to outside"):
        skills.install(str(src))
    (src / "creds").unlink()
    (src / "inside").symlink_to("scripts")  # a link within the skill is fine
    assert (Path(skills.install(str(src)).skill.path) / "inside" / "tag.sh").is_file()


@pytest.mark.parametrize("name", ["../../evil", "Evil", "a--b", "-rf", "x/y", "", "a" * 65, "..", "trailing-"])
def test_skill_names_outside_the_rule_are_refused(skills: SkillService, tmp_path: Path, name: str) -> None:
    src = tmp_path / "bad"
    src.mkdir()
    (src / "SKILL.md").write_text(f"---\nname: {name!r}\ndescription: x\n---\n")
    with pytest.raises(InvalidRequest):
        skills.install(str(src))
    with pytest.raises(InvalidRequest):
        skills.show(name)


@pytest.mark.parametrize(
    "source",
    [
        "--upload-pack=touch /tmp/signet-pwned",
        "-u touch /tmp/signet-pwned",
        "ext::sh -c touch% /tmp/signet-pwned",
        "fd::3",
        "file::/tmp/x",
        "gopher://example.com/repo.git",
    ],
)
def test_hostile_git_sources_are_refused_before_git_runs(skills: SkillService, source: str) -> None:
    with pytest.raises(InvalidRequest):
        skills.install(source)
    assert not Path("/tmp/signet-pwned").exists()


def test_git_protocols_are_limited_even_inside_git(tmp_path: Path) -> None:
    """Defense in depth: git itself runs with ext:: off, even if a URL got past the check."""
    from signet.gitsync.urls import run_git

    res = run_git(["ls-remote", "ext::sh -c touch% " + str(tmp_path / "pwned")], timeout=30)
    assert res.returncode != 0 and not (tmp_path / "pwned").exists()


def test_search_finds_installed_and_index_skills(
    skill_workspace: Workspace, skills: SkillService, tmp_path: Path
) -> None:
    skills.install(str(write_skill(tmp_path / "git-release", "git-release", description="Cut a release with tags")))
    index = skill_workspace.root / "skill-index.yaml"
    index.write_text(
        "skills:\n"
        "  - {name: release-notes, description: Write release notes, source: 'https://example.com/rn.git'}\n"
        "  - {name: git-release, description: duplicate of the installed one}\n"
        "  - {name: pdf, description: Read PDFs}\n"
    )
    skills.settings = skills.settings.model_copy(update={"index": "skill-index.yaml"})
    found = skills.search("release")
    assert [(h.name, h.installed) for h in found.results] == [("git-release", True), ("release-notes", False)]
    assert found.results[1].source == "https://example.com/rn.git"
    assert [h.name for h in skills.search("pdf").results] == ["pdf"]
    assert skills.search("nothing-like-it").results == []
    with pytest.raises(InvalidRequest):
        skills.search("  ")


def test_a_hand_made_folder_without_front_matter_is_a_problem_not_a_crash(
    skill_workspace: Workspace, skills: SkillService
) -> None:
    broken = skill_workspace.root / "skills" / "broken"
    broken.mkdir(parents=True)
    (broken / "SKILL.md").write_text("no front matter")
    write_skill(skill_workspace.root / "skills" / "handmade", "handmade")
    listed = skills.list_skills()
    assert [s.name for s in listed.skills] == ["handmade"]
    assert [p.name for p in listed.problems] == ["broken"] and "front matter" in listed.problems[0].error


def test_a_repository_with_a_link_leading_out_is_refused(skills: SkillService, tmp_path: Path) -> None:
    work = write_skill(tmp_path / "linky-work", "linky")
    (work / "id_rsa").symlink_to(Path.home() / ".ssh" / "id_rsa")
    git("init", "-q", "-b", "main", cwd=work)
    git("add", "-A", cwd=work)
    git("commit", "-q", "-m", "x", cwd=work)
    with pytest.raises(InvalidRequest, match="link to outside"):
        skills.install(f"file://{work}")
    assert skills.list_skills().skills == []


def test_a_source_without_skill_md_is_refused_unread(skills: SkillService, tmp_path: Path) -> None:
    with pytest.raises(InvalidRequest, match=r"no SKILL\.md"):
        skills.install("/")  # refused before the tree is walked
    two = tmp_path / "two"
    write_skill(two / "a", "a")
    write_skill(two / "b", "b")
    with pytest.raises(InvalidRequest, match="holds 2 skills"):
        skills.install(str(two))
    wrapped = tmp_path / "wrapped"
    write_skill(wrapped / "inner", "inner")
    assert skills.install(str(wrapped)).skill.name == "inner"
