"""Each installed skill, linked into each installed harness's skills folder.

Claude Code reads ``~/.claude/skills/<name>/SKILL.md``, Codex ``~/.codex/skills``, OpenCode
``~/.config/opencode/skills`` (``Harness.skills_folder``), under the home the harness was
installed for (its ledger, signet.harnesses.install). A link is a symlink to the skill's
folder in the workspace, so an edit there is seen by every harness at once. What is already
at a link's place and is not a link to that folder (the user's own skill of the same name) is
left alone and reported; uninstall removes only links that point at the workspace's folder.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from signet.harnesses import install as harness_install
from signet.harnesses.merge import Ledger

log = logging.getLogger(__name__)

Action = Literal["linked", "unchanged", "kept", "unlinked", "failed"]


@dataclass(frozen=True)
class LinkChange:
    harness: str
    path: str
    action: Action
    note: str = ""


def harness_skill_dirs(workspace: Path) -> dict[str, Path]:
    """The skills folder of each harness installed for this workspace, by harness name."""
    out: dict[str, Path] = {}
    state = harness_install.state_dir(workspace)
    for name in harness_install.installed(workspace):
        try:
            harness = harness_install.get_harness(name)
            ledger = Ledger.load(state, name)
        except (LookupError, OSError, ValueError) as exc:  # a broken or unknown record: skip it, say so
            log.warning("skills: harness %s skipped: %s", name, exc)
            continue
        if harness.skills_folder is None or ledger is None or not ledger.options.get("home"):
            continue
        out[name] = Path(ledger.options["home"]).joinpath(*harness.skills_folder)
    return out


def _points_at(link: Path, target: Path) -> bool:
    if not link.is_symlink():
        return False
    dest = link.readlink()
    dest = dest if dest.is_absolute() else link.parent / dest
    return os.path.normpath(dest) == os.path.normpath(target)


def link(workspace: Path, name: str, folder: Path) -> list[LinkChange]:
    """Link ``folder`` (the skill in the workspace) as ``<skills dir>/<name>`` of each harness."""
    changes = []
    for harness, skills_dir in harness_skill_dirs(workspace).items():
        path = skills_dir / name
        if _points_at(path, folder):
            changes.append(LinkChange(harness, str(path), "unchanged"))
            continue
        if path.exists() or path.is_symlink():
            changes.append(LinkChange(harness, str(path), "kept", "something else is there; left as it is"))
            continue
        try:
            skills_dir.mkdir(parents=True, exist_ok=True)
            path.symlink_to(folder, target_is_directory=True)
        except OSError as exc:
            changes.append(LinkChange(harness, str(path), "failed", exc.strerror or str(exc)))
            continue
        changes.append(LinkChange(harness, str(path), "linked"))
    return changes


def unlink(workspace: Path, name: str, folder: Path) -> list[LinkChange]:
    """Remove the links :func:`link` made; anything else at those places stays."""
    changes = []
    for harness, skills_dir in harness_skill_dirs(workspace).items():
        path = skills_dir / name
        if not _points_at(path, folder):
            continue
        try:
            path.unlink()
        except OSError as exc:
            changes.append(LinkChange(harness, str(path), "failed", exc.strerror or str(exc)))
            continue
        changes.append(LinkChange(harness, str(path), "unlinked"))
    return changes


def linked(workspace: Path, name: str, folder: Path) -> list[str]:
    """The harnesses whose skills folder links to this skill."""
    return [h for h, d in harness_skill_dirs(workspace).items() if _points_at(d / name, folder)]


def skill_folders(workspace: Path) -> list[Path]:
    """The skill folders in the workspace (hidden staging folders left out)."""
    root = workspace / "skills"
    if not root.is_dir():
        return []
    return sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith("."))


def link_harness(workspace: Path, harness: str) -> list[LinkChange]:
    """Link every skill into one harness's skills folder (after ``signet install HARNESS``)."""
    return [c for f in skill_folders(workspace) for c in link(workspace, f.name, f) if c.harness == harness]


def unlink_harness(workspace: Path, harness: str) -> list[LinkChange]:
    """Remove one harness's links to the workspace's skills (before ``signet uninstall HARNESS``)."""
    skills_dir = harness_skill_dirs(workspace).get(harness)
    if skills_dir is None:
        return []
    changes = []
    for folder in skill_folders(workspace):
        path = skills_dir / folder.name
        if _points_at(path, folder):
            try:
                path.unlink()
            except OSError as exc:
                changes.append(LinkChange(harness, str(path), "failed", exc.strerror or str(exc)))
                continue
            changes.append(LinkChange(harness, str(path), "unlinked"))
    return changes
