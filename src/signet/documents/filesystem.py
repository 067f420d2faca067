"""The filesystem connector's view of a folder: which files are documents.

A file counts when its path relative to the root matches one of ``include`` (gitignore-style
globs, default markdown and text), none of ``exclude``, and (with ``gitignore``) no
``.gitignore`` of its folder or the folders above it within the root. ``.git`` is never
entered. Symlinks are followed only when they resolve inside the root: one that leaves it, or
loops, is skipped with the reason (the scan goes on), so a link cannot pull outside files in.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any, ClassVar

import pathspec
from pydantic import BaseModel

from signet.config import DocumentsSettings
from signet.documents.errors import DocumentFailed
from signet.documents.paths import allowed_roots, read_file
from signet.documents.source import Listing, SourceItem
from signet.models import FilesystemConfig

DEFAULT_INCLUDE = ("**/*.md", "**/*.markdown", "**/*.txt")


def real_root(root: str) -> Path:
    if "\x00" in root:
        raise DocumentFailed("a path cannot contain a NUL character")
    try:
        real = Path(root).expanduser().resolve(strict=True)
    except (OSError, RuntimeError) as exc:
        raise DocumentFailed(
            f"the connector's root {root} cannot be read: {getattr(exc, 'strerror', None) or exc}"
        ) from None
    if not real.is_dir():
        raise DocumentFailed(f"the connector's root {root} is not a folder")
    return real


def check_globs(include: list[str], exclude: list[str]) -> None:
    """:class:`DocumentFailed` naming the first glob that is not a valid gitignore pattern."""
    for glob in [*include, *exclude]:
        try:
            pathspec.PathSpec.from_lines("gitwildmatch", [glob])
        except ValueError:
            raise DocumentFailed(f"{glob!r} is not a valid gitignore-style glob") from None


def _gitignore(folder: Path) -> pathspec.GitIgnoreSpec | None:
    f = folder / ".gitignore"
    try:
        lines = f.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None
    try:
        return pathspec.GitIgnoreSpec.from_lines(lines)
    except ValueError:  # git skips a line it cannot read; so does this
        good = []
        for line in lines:
            try:
                pathspec.GitIgnoreSpec.from_lines([line])
            except ValueError:
                continue
            good.append(line)
        return pathspec.GitIgnoreSpec.from_lines(good)


def scan(root: str, include: list[str], exclude: list[str], *, gitignore: bool = True) -> Listing:
    """Every document file under ``root`` (keys: real paths; fingerprints: mtime and size);
    :class:`DocumentFailed` when the root is unusable."""
    base = real_root(root)
    wanted = pathspec.PathSpec.from_lines("gitwildmatch", include or DEFAULT_INCLUDE)
    unwanted = pathspec.PathSpec.from_lines("gitwildmatch", exclude)
    out = Listing()
    ignores: dict[Path, pathspec.GitIgnoreSpec] = {}
    seen: set[str] = set()

    def ignored(path: Path, is_dir: bool) -> bool:
        for folder, spec in ignores.items():
            if path != folder and path.is_relative_to(folder):
                rel = path.relative_to(folder).as_posix() + ("/" if is_dir else "")
                if spec.match_file(rel):
                    return True
        return False

    for dirpath, dirnames, filenames in os.walk(base, followlinks=False):
        here = Path(dirpath)
        if gitignore:
            spec = _gitignore(here)
            if spec is not None:
                ignores[here] = spec
        dirnames[:] = sorted(d for d in dirnames if d != ".git" and not (gitignore and ignored(here / d, True)))
        for name in sorted(filenames):
            path = here / name
            rel = path.relative_to(base).as_posix()
            if not wanted.match_file(rel) or unwanted.match_file(rel) or (gitignore and ignored(path, False)):
                continue
            entry = _entry(base, path, rel, out)
            if entry is not None and entry.key not in seen:  # a link to a file inside is that file
                seen.add(entry.key)
                out.items.append(entry)
    return out


def _entry(base: Path, path: Path, rel: str, out: Listing) -> SourceItem | None:
    try:
        real = path.resolve(strict=True)
    except RuntimeError:
        out.skip(f"{rel}: a symlink loop")
        return None
    except OSError as exc:
        out.skip(f"{rel}: {exc.strerror or exc}")
        return None
    if not real.is_relative_to(base):
        out.skip(f"{rel}: points outside the root ({real})")
        return None
    try:
        st = real.stat()
    except OSError as exc:
        out.skip(f"{rel}: {exc.strerror or exc}")
        return None
    if not stat.S_ISREG(st.st_mode):
        return None
    return SourceItem(str(real), f"{st.st_mtime_ns}:{st.st_size}")


class FilesystemSource:
    """The ``filesystem`` connector: a folder under ``documents.allowed_paths`` whose files are
    read only from inside that folder."""

    config_model: ClassVar[type[BaseModel]] = FilesystemConfig

    def __init__(self, config: BaseModel, settings: DocumentsSettings) -> None:
        assert isinstance(config, FilesystemConfig)
        self.config = config
        self.settings = settings

    def prepare(self) -> dict[str, Any]:
        check_globs(self.config.include, self.config.exclude)
        root = real_root(self.config.root)
        roots = allowed_roots(self.settings.allowed_paths)
        if not any(root == r or root.is_relative_to(r) for r in roots):
            shown = ", ".join(str(r) for r in roots) or "none"
            raise DocumentFailed(
                f"{root} is outside the folders documents may be read from ({shown}; documents.allowed_paths)"
            )
        return self.config.model_copy(update={"root": str(root)}).model_dump()

    def scan(self) -> Listing:
        c = self.config
        return scan(c.root, c.include, c.exclude, gitignore=c.gitignore)

    def read(self, key: str) -> bytes:
        # Confined to the root: a file swapped for a link out of it since the scan is refused.
        return read_file(key, [self.config.root], self.settings.max_bytes)[1]

    @property
    def identity(self) -> str:
        """Two connectors of one owner may not sync the same folder."""
        return str(Path(self.config.root))

    def watch_filter(self, path: str) -> bool:
        """Whether a change at ``path`` may concern a document: a file the globs keep, or a
        folder (a renamed or removed folder is one event). Changes to other files (a database
        beside the notes, a build folder) trigger no sync."""
        p = Path(path)
        try:
            rel = p.relative_to(self.config.root).as_posix()
        except ValueError:
            return False
        if p.name == ".gitignore" or (not p.suffix and not p.is_file()):
            return True
        wanted = pathspec.PathSpec.from_lines("gitwildmatch", self.config.include or DEFAULT_INCLUDE)
        unwanted = pathspec.PathSpec.from_lines("gitwildmatch", self.config.exclude)
        return wanted.match_file(rel) and not unwanted.match_file(rel)

    @property
    def watch_path(self) -> Path | None:
        """The folder to watch for live updates (None: watching is off)."""
        return Path(self.config.root) if self.config.watch else None
