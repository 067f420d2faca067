"""Where a skill is installed from: a local folder, a git URL, or a .tar.gz / .zip archive.

Each is brought into a staging folder the caller owns, then checked as a tree: regular files
and folders only, links only when they stay inside the skill, at most ``max_files`` files and
``max_bytes`` bytes. A git source is cloned shallow, without submodules, through the checked
URL rules of :mod:`signet.gitsync.urls` (no ``-``-prefixed URL, no ``ext::``).
"""

from __future__ import annotations

import os
import shutil
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from signet.errors import InvalidRequest
from signet.gitsync.urls import check_url, last_line, run_git
from signet.skills import archive
from signet.skills.archive import Limits
from signet.skills.manifest import SKILL_FILE

Kind = Literal["folder", "archive", "git"]
GIT_PREFIXES = ("https://", "http://", "ssh://", "git://", "file://")


@dataclass(frozen=True)
class Source:
    kind: Kind
    location: str
    """The folder or archive as an absolute path, or the git URL."""


def classify(source: str) -> Source:
    """What ``source`` names. A ``-``-prefixed or ``ext::`` source is refused here already."""
    if source.startswith("-"):
        raise InvalidRequest(f"{source[:80]!r} starts with '-'; refused")
    if source.startswith(GIT_PREFIXES) or "::" in source or (source.endswith(".git") and "@" in source):
        return Source("git", check_url(source))
    try:
        path = Path(source).expanduser()
        mode = path.stat().st_mode
    except (FileNotFoundError, NotADirectoryError):
        mode = 0
    except (OSError, ValueError, RuntimeError) as exc:  # a name too long, a NUL byte, no permission, ~nobody
        said = getattr(exc, "strerror", None) or exc
        raise InvalidRequest(f"{source[:200]!r} cannot be read ({said})") from None
    if stat.S_ISDIR(mode):
        return Source("folder", str(path.resolve()))
    if stat.S_ISREG(mode) and archive.is_archive(path):
        return Source("archive", str(path.resolve()))
    if mode:
        raise InvalidRequest(f"{source}: not a skill folder or an archive ({', '.join(archive.ARCHIVE_SUFFIXES)})")
    if "@" in source and ":" in source:  # git@host:owner/repo
        return Source("git", check_url(source))
    raise InvalidRequest(f"{source}: no such folder or archive, and not a git URL")


def check_tree(root: Path, limits: Limits) -> None:
    """Refuse a tree with a link leading out of it, a special file, or too much in it."""
    real_root = root.resolve()
    files = size = 0
    for here, dirs, names in os.walk(root):
        dirs[:] = [d for d in dirs if d != ".git"]
        for name in [*dirs, *names]:
            path = Path(here) / name
            rel = path.relative_to(root)
            if path.is_symlink():
                if not path.resolve().is_relative_to(real_root):
                    raise InvalidRequest(f"{rel} is a link to outside the skill's folder; nothing installed")
                continue
            files += 1  # folders count too: a tree of empty folders is no cheaper to walk
            if files > limits.max_files:
                raise InvalidRequest(f"the skill has more than {limits.max_files} files (skills.maxFiles)")
            if name in names:
                if not path.is_file():
                    raise InvalidRequest(f"{rel} is not a regular file; nothing installed")
                size += path.stat().st_size
                if size > limits.max_bytes:
                    raise InvalidRequest(f"the skill is larger than {limits.max_bytes} bytes (skills.maxBytes)")


def skill_root(tree: Path) -> Path:
    """The folder holding SKILL.md: the tree itself, or its one subfolder that has one (an
    archive or repository that wraps the skill in a folder)."""
    if (tree / SKILL_FILE).is_file():
        return tree
    found = sorted(p.parent for p in tree.glob(f"*/{SKILL_FILE}") if not p.parent.name.startswith("."))
    if len(found) == 1:
        return found[0]
    if not found:
        raise InvalidRequest(f"no {SKILL_FILE} at the top of the source or in one folder below it")
    names = ", ".join(p.name for p in found[:5])
    raise InvalidRequest(f"the source holds {len(found)} skills ({names}); install one folder at a time")


def fetch(source: Source, staging: Path, limits: Limits, *, git_timeout: float) -> Path:
    """Bring ``source`` under ``staging`` (an empty folder) and return the skill's folder in it,
    checked by :func:`check_tree`."""
    tree = staging / "src"
    if source.kind == "folder":
        found = skill_root(Path(source.location))  # a folder without a SKILL.md is refused unread
        check_tree(found, limits)  # before copying: a huge folder is refused unread too
        shutil.copytree(found, tree, symlinks=True, ignore=shutil.ignore_patterns(".git"))
    elif source.kind == "archive":
        tree.mkdir()
        archive.extract(Path(source.location), tree, limits)
    else:
        res = run_git(
            ["clone", "--quiet", "--depth", "1", "--no-recurse-submodules", "--", source.location, str(tree)],
            timeout=git_timeout,
        )
        if res.returncode != 0:
            raise InvalidRequest(f"git clone of {source.location} failed: {last_line(res)}")
        shutil.rmtree(tree / ".git", ignore_errors=True)
    root = skill_root(tree)
    check_tree(root, limits)
    return root
