"""The identity files a session starts with, and the static context used when the daemon
is down. Stdlib only: the ``signet hook`` command imports this on every session start.
"""

from __future__ import annotations

import os
from pathlib import Path

from signet.hooks.budget import Assembled, Section, assemble

# Order is priority: instructions first, then who the agent is, who the user is, and the
# generated working memory. Mirrors signet.workspace.IDENTITY_FILES (kept in sync by a test;
# importing signet.workspace here would pull pydantic into the hook's start-up).
IDENTITY_FILES = ("AGENTS.md", "SOUL.md", "IDENTITY.md", "USER.md", "MEMORY.md")

SECTION_TITLES = {
    "AGENTS.md": "Instructions (AGENTS.md)",
    "SOUL.md": "Personality (SOUL.md)",
    "IDENTITY.md": "Identity (IDENTITY.md)",
    "USER.md": "About the user (USER.md)",
    "MEMORY.md": "Working memory (MEMORY.md)",
}

# Largest fraction of the session-start budget each file may take.
SHARES = {"AGENTS.md": 0.35, "SOUL.md": 0.1, "IDENTITY.md": 0.1, "USER.md": 0.15, "MEMORY.md": 0.25}

HEADER = "# Signet memory\nContext from your Signet workspace: who you are, who the user is, and what you know."


def workspace_root() -> Path:
    """``$SIGNET_WORKSPACE`` or ``~/.agents`` (the same rule as ``signet.workspace``)."""
    env = os.environ.get("SIGNET_WORKSPACE")
    return Path(env).expanduser() if env else Path.home() / ".agents"


def identity_path(root: Path, name: str, agent_id: str | None = None) -> Path:
    """An agent's own copy under ``agents/{id}/`` wins over the workspace root's."""
    if agent_id and agent_id != "default":
        own = root / "agents" / agent_id / name
        if own.is_file():
            return own
    return root / name


def read_identity(root: Path, agent_id: str | None = None, *, skip: frozenset[str] = frozenset()) -> dict[str, str]:
    out: dict[str, str] = {}
    for name in IDENTITY_FILES:
        if name in skip:
            continue
        p = identity_path(root, name, agent_id)
        try:
            out[name] = p.read_text(encoding="utf-8", errors="replace")
        except (FileNotFoundError, IsADirectoryError, PermissionError):
            continue
    return out


def identity_sections(files: dict[str, str]) -> list[Section]:
    return [
        Section(name=name, title=SECTION_TITLES[name], body=text, share=SHARES[name])
        for name, text in files.items()
        if text.strip()
    ]


def static_context(
    root: Path, budget: int, *, agent_id: str | None = None, skip: frozenset[str] = frozenset(), notice: str = ""
) -> Assembled:
    """What a session gets without the daemon: the identity files, within the budget."""
    sections = identity_sections(read_identity(root, agent_id, skip=skip))
    header = HEADER + (f"\n\n> {notice}" if notice else "")
    return assemble(sections, budget, header=header)
