"""Projects as small integer codes, so the in-memory indexes filter by project with one array
comparison instead of a string comparison per row (signet.search.vectors, .keywords)."""

from __future__ import annotations

NO_PROJECT = -1
"""The code of a memory without a project."""


class ProjectCodes:
    """Project name -> code, assigned on first sight (not thread-safe: callers hold their lock)."""

    def __init__(self) -> None:
        self._codes: dict[str, int] = {}

    def code(self, project: str | None) -> int:
        """The project's code, assigning the next one to a project not seen before."""
        if project is None:
            return NO_PROJECT
        code = self._codes.get(project)
        if code is None:
            code = self._codes[project] = len(self._codes)
        return code

    def known(self, project: str) -> int | None:
        """The code of a project already seen, else None (no row can be in it)."""
        return self._codes.get(project)
