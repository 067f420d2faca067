"""Which program a secret run may start: ``secrets.exec.allow`` in agent.yaml.

An entry is a program name looked up on the daemon's ``PATH`` (``gh``) or an absolute path
(``/usr/local/bin/deploy``). A command is allowed when the program its first word names, found
the same way, is the very path an entry names. Paths are compared as found, never with
symlinks resolved: on a system where ``ls`` and ``sh`` are both links to one multi-call
binary, allowing ``ls`` must not allow ``sh``. Nothing runs through a shell unless a shell is
on the list, and listing a shell or an interpreter (``sh``, ``bash``, ``python3``) allows any
command at all: docs/secrets.md says so.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Sequence
from pathlib import Path, PurePath

from signet.errors import Forbidden, InvalidRequest


class CommandNotAllowed(Forbidden):
    code = "command_not_allowed"


def _normal(path: str) -> str:
    """An absolute path with ``.`` and ``..`` folded, symlinks left as they are."""
    return os.path.normpath(path)


def _find(program: str, path: str | None) -> str | None:
    if PurePath(program).is_absolute():
        found = shutil.which(program)  # an absolute path: itself, if it is an executable file
        return _normal(program) if found else None
    if "/" in program:
        return None  # a relative path depends on the working directory: never allowed
    found = shutil.which(program, path=path)
    return _normal(str(Path.cwd() / found)) if found else None


def resolve(argv0: str, allow: Sequence[str], path: str | None = None, *, what: str = "secrets.exec.allow") -> str:
    """The absolute path of the program ``argv0`` names, when ``allow`` (the setting ``what``)
    permits it. Scheduled tasks use the same rule with ``tasks.allow``."""
    if not allow:
        raise CommandNotAllowed(
            f"no command is allowed: list the programs that may run in {what} in agent.yaml "
            "(docs/secrets.md, docs/tasks.md)"
        )
    if not argv0 or ("/" in argv0 and not PurePath(argv0).is_absolute()):
        raise InvalidRequest("the command must be a program name or an absolute path", code="invalid_command")
    program = _find(argv0, path)
    allowed = {p for p in (_find(entry, path) for entry in allow) if p is not None}
    if program is None or program not in allowed:
        shown = argv0[:120]
        raise CommandNotAllowed(
            f"command {shown!r} is not in {what} ({', '.join(a[:60] for a in allow[:10])})"
            if program is not None
            else f"command {shown!r} is not in {what} (and is not an executable on PATH)"
        )
    return program
