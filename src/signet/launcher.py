"""The ``signet`` launcher: a symlink in the user's command directory (``$XDG_BIN_HOME``,
else ``~/.local/bin``) to the ``signet`` script of the environment Signet is installed in.

Why: after ``pip install`` into a virtualenv, ``signet`` lives in ``.venv/bin``, which no
agent's shell has on its PATH, so an instruction such as ``signet remember "..."`` fails
there. ``signet setup`` links it where users' shells look for commands, and the
instructions written into harness files (CLAUDE.md, AGENTS.md …) name ``signet`` only when
that link is what a shell finds first; otherwise they name the absolute path, which works
from any shell.

Stdlib only: the harness modules (imported by ``signet hook`` on every prompt) use
:func:`agent_command`.
"""

from __future__ import annotations

import os
import shlex
import shutil
from dataclasses import dataclass
from pathlib import Path

NAME = "signet"


def bin_dir(home: Path) -> Path:
    """Where user commands go: ``$XDG_BIN_HOME`` (the XDG base-directory rule uv and pipx
    follow too), else ``home/.local/bin``."""
    xdg = os.environ.get("XDG_BIN_HOME")
    return Path(xdg).expanduser() if xdg else home / ".local" / "bin"


def on_path(directory: Path) -> bool:
    """Whether ``directory`` is one of ``$PATH``'s entries."""
    want = _real(directory)
    return any(
        entry and _real(Path(entry).expanduser()) == want for entry in os.environ.get("PATH", "").split(os.pathsep)
    )


def _real(path: Path) -> Path:
    try:
        return path.resolve()
    except OSError:  # a symlink loop: compare it as written
        return path.absolute()


def _same_file(a: Path, b: Path) -> bool:
    try:
        return a.exists() and b.exists() and a.samefile(b)
    except OSError:
        return False


def agent_command(home: Path, signet: list[str]) -> str:
    """The command to put in instructions an agent reads: ``signet`` when the first
    ``signet`` on PATH is the launcher in :func:`bin_dir` and runs this installation,
    else the absolute command ``signet`` stands for (shell-quoted)."""
    absolute = " ".join(shlex.quote(a) for a in signet)
    if len(signet) != 1:
        return absolute
    link = bin_dir(home) / NAME
    found = shutil.which(NAME)
    if found is not None and _real(Path(found).parent) == _real(link.parent) and _same_file(link, Path(signet[0])):
        return NAME
    return absolute


@dataclass(frozen=True)
class LauncherResult:
    """What :func:`install_launcher` did: ``action`` is ``created``, ``unchanged``,
    ``replaced`` (a dangling link), ``kept`` (another ``signet`` is there: left alone) or
    ``unsupported`` (no ``signet`` script to point at)."""

    action: str
    path: Path
    target: Path | None
    on_path: bool
    found: Path | None = None
    """For ``kept``: what the existing file is or points at."""


def install_launcher(home: Path, script: Path | None) -> LauncherResult:
    """Link ``bin_dir(home)/signet`` to ``script`` (the ``signet`` console script);
    idempotent. Never replaces a working ``signet`` that is not this one: it is reported
    (``kept``) and the caller says what to do."""
    link = bin_dir(home) / NAME
    where = on_path(link.parent)
    if script is None or not script.is_file():
        return LauncherResult("unsupported", link, None, where)
    target = script.absolute()
    if link.is_symlink() or link.exists():
        if _same_file(link, target):
            return LauncherResult("unchanged", link, target, where)
        if link.is_symlink() and not link.exists():  # dangling: an old environment that is gone
            old = link.readlink()
            link.unlink()
            link.symlink_to(target)
            return LauncherResult("replaced", link, target, where, found=old)
        found = link.readlink() if link.is_symlink() else link
        return LauncherResult("kept", link, target, where, found=found)
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(target)
    return LauncherResult("created", link, target, where)
