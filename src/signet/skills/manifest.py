"""A skill's name and its ``SKILL.md`` front matter (name, description, version).

Names follow the Agent Skills rule OpenCode enforces (``^[a-z0-9]+(-[a-z0-9]+)*$``, 1-64
characters): lowercase letters, digits and single hyphens, so a name is always one safe path
component (no ``..``, no ``/``, no leading ``-`` that a program could read as an option).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import yaml

from signet.errors import InvalidRequest

NAME_PATTERN = r"^[a-z0-9]+(-[a-z0-9]+)*$"
_NAME = re.compile(NAME_PATTERN)
MAX_NAME = 64
MAX_DESCRIPTION = 1024
SKILL_FILE = "SKILL.md"
MAX_SKILL_FILE = 256 * 1024


def check_name(name: str) -> str:
    """``name`` if it is a valid skill name, else :class:`InvalidRequest` saying why."""
    if not (1 <= len(name) <= MAX_NAME) or not _NAME.fullmatch(name):
        raise InvalidRequest(
            f"{name[:80]!r} is not a skill name: 1-64 lowercase letters, digits and single hyphens (e.g. git-release)"
        )
    return name


@dataclass(frozen=True)
class Manifest:
    name: str
    description: str
    version: str | None
    body: str


def parse(text: str, *, where: str = SKILL_FILE) -> Manifest:
    """The front matter of a SKILL.md: a ``---`` block of YAML with ``name`` and
    ``description`` (``version`` optional), then the instructions."""
    lines = text.lstrip("\ufeff").splitlines(keepends=True)
    if not lines or lines[0].strip() != "---":
        raise InvalidRequest(f"{where} does not start with a `---` front matter block")
    end = next((i for i, line in enumerate(lines[1:], 1) if line.strip() in ("---", "...")), None)
    if end is None:
        raise InvalidRequest(f"{where}: the front matter block is not closed with `---`")
    try:
        data = yaml.safe_load("".join(lines[1:end]))
    except yaml.YAMLError as exc:
        raise InvalidRequest(f"{where}: the front matter is not valid YAML ({str(exc).splitlines()[0]})") from None
    if not isinstance(data, dict):
        raise InvalidRequest(f"{where}: the front matter is not a mapping of keys")
    name, description, version = data.get("name"), data.get("description"), data.get("version")
    if not isinstance(name, str) or not name:
        raise InvalidRequest(f"{where}: the front matter has no `name`")
    if not isinstance(description, str) or not description.strip():
        raise InvalidRequest(f"{where}: the front matter has no `description`")
    if len(description) > MAX_DESCRIPTION:
        raise InvalidRequest(f"{where}: `description` is longer than {MAX_DESCRIPTION} characters")
    if version is not None and not isinstance(version, str | int | float):
        raise InvalidRequest(f"{where}: `version` is not a string")
    return Manifest(
        name=check_name(name),
        description=description.strip(),
        version=None if version is None else str(version),
        body="".join(lines[end + 1 :]),
    )


def read(folder: Path) -> Manifest:
    """The manifest of the skill in ``folder`` (its SKILL.md, a regular file, not a link)."""
    path = folder / SKILL_FILE
    if path.is_symlink() or not path.is_file():
        raise InvalidRequest(f"{folder.name}: no {SKILL_FILE} in the skill's folder")
    if path.stat().st_size > MAX_SKILL_FILE:
        raise InvalidRequest(f"{folder.name}: {SKILL_FILE} is larger than {MAX_SKILL_FILE // 1024} KiB")
    return parse(path.read_text(encoding="utf-8", errors="replace"), where=f"{folder.name}/{SKILL_FILE}")
