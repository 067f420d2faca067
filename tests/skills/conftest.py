"""Skills on real folders, archives and git repositories in temp dirs; harnesses installed
into a temp HOME (never the user's)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from signet.harnesses import install as harness_install
from signet.workspace import Workspace

SKILL_HARNESSES = ("claude-code", "codex", "opencode")


def write_skill(folder: Path, name: str, description: str = "Cut a release", version: str | None = "1.0.0") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    front = [f"name: {name}", f"description: {description}"] + ([f"version: {version}"] if version else [])
    (folder / "SKILL.md").write_text("---\n" + "\n".join(front) + "\n---\n\n# Steps\n\n1. Tag it.\n")
    (folder / "scripts").mkdir(exist_ok=True)
    (folder / "scripts" / "tag.sh").write_text("#!/bin/sh\necho tag\n")
    return folder


def install_harnesses(ws: Workspace, home: Path, names: tuple[str, ...] = SKILL_HARNESSES) -> None:
    for name in names:
        harness_install.install(harness_install.get_harness(name), harness_install.make_context(ws.root, home=home))


def git(*args: str, cwd: Path | None = None) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "T", "GIT_AUTHOR_EMAIL": "t@x", "GIT_COMMITTER_NAME": "T"}
    env["GIT_COMMITTER_EMAIL"] = "t@x"
    res = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, env=env, timeout=60)
    assert res.returncode == 0, res.stderr
    return res.stdout


def bare_repo_with_skill(base: Path, name: str) -> Path:
    """A bare repository (``file://`` clonable) whose tree is one skill."""
    work = write_skill(base / f"{name}-work", name)
    git("init", "-q", "-b", "main", cwd=work)
    git("add", "-A", cwd=work)
    git("commit", "-q", "-m", "skill", cwd=work)
    bare = base / f"{name}.git"
    git("clone", "-q", "--bare", str(work), str(bare))
    return bare


@pytest.fixture
def home(tmp_path: Path) -> Path:
    h = tmp_path / "home"
    h.mkdir()
    return h


def run_cli(ws: Workspace, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("XDG_")}
    env.update(HOME=str(home), SIGNET_WORKSPACE=str(ws.root))
    return subprocess.run(
        [sys.executable, "-m", "signet.cli.entry", *args], capture_output=True, text=True, env=env, timeout=120
    )


@pytest.fixture
def skill_workspace(make_workspace: Callable[..., Workspace]) -> Workspace:
    return make_workspace(embedding="none")
