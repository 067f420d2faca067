"""Safe extraction of a skill archive (.tar.gz, .tgz, .tar, .zip).

Only regular files and folders are extracted: a link, a device or a FIFO in the archive, an
absolute member name, a ``..`` component or a name that lands outside the target refuses the
whole archive before anything is written. Sizes are counted as bytes are written, not taken
from the headers (a zip bomb declares small sizes), against ``max_bytes`` in all and
``max_files`` members.
"""

from __future__ import annotations

import stat
import tarfile
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import IO

from signet.errors import InvalidRequest

ARCHIVE_SUFFIXES = (".tar.gz", ".tgz", ".tar", ".zip")
CHUNK = 64 * 1024


@dataclass(frozen=True)
class Limits:
    max_bytes: int
    max_files: int


def is_archive(path: Path) -> bool:
    return path.name.lower().endswith(ARCHIVE_SUFFIXES)


def _member_path(name: str, dest: Path) -> Path:
    """Where member ``name`` goes under ``dest``; refused when it would land anywhere else."""
    clean = name.replace("\\", "/")
    pure = PurePosixPath(clean)
    if not clean or pure.is_absolute() or clean.startswith("/") or ".." in pure.parts or ":" in pure.parts[0]:
        raise InvalidRequest(f"the archive member {name[:200]!r} points outside the skill's folder; nothing installed")
    target = (dest / Path(*[p for p in pure.parts if p not in ("", ".")])) if pure.parts else dest
    if not target.resolve().is_relative_to(dest.resolve()):
        raise InvalidRequest(f"the archive member {name[:200]!r} points outside the skill's folder; nothing installed")
    return target


class _Budget:
    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self.bytes = 0
        self.files = 0

    def file(self) -> None:
        self.files += 1
        if self.files > self.limits.max_files:
            raise InvalidRequest(f"the archive has more than {self.limits.max_files} files (skills.maxFiles)")

    def copy(self, src: IO[bytes], target: Path, executable: bool) -> None:
        target.parent.mkdir(parents=True, exist_ok=True)
        with target.open("xb") as out:
            while chunk := src.read(CHUNK):
                self.bytes += len(chunk)
                if self.bytes > self.limits.max_bytes:
                    raise InvalidRequest(
                        f"the archive unpacks to more than {self.limits.max_bytes} bytes (skills.maxBytes)"
                    )
                out.write(chunk)
        target.chmod(0o755 if executable else 0o644)


def extract(archive: Path, dest: Path, limits: Limits) -> None:
    """Unpack ``archive`` into the empty folder ``dest`` (raises :class:`InvalidRequest`
    naming the first refused member; the caller discards ``dest`` then)."""
    if archive.stat().st_size > limits.max_bytes:  # listing a huge archive's members alone takes long
        raise InvalidRequest(f"{archive.name} is larger than {limits.max_bytes} bytes (skills.maxBytes)")
    name = archive.name.lower()
    if name.endswith(".zip"):
        _extract_zip(archive, dest, limits)
    elif name.endswith(ARCHIVE_SUFFIXES):
        _extract_tar(archive, dest, limits)
    else:
        raise InvalidRequest(f"{archive.name}: not an archive Signet reads ({', '.join(ARCHIVE_SUFFIXES)})")


@contextmanager
def _opened_tar(archive: Path) -> Iterator[tarfile.TarFile]:
    try:
        with tarfile.open(archive, "r:*") as tar:
            yield tar
    except (tarfile.TarError, EOFError, OSError) as exc:
        raise InvalidRequest(f"{archive.name} is not a readable tar archive ({exc})") from None


def _extract_tar(archive: Path, dest: Path, limits: Limits) -> None:
    budget = _Budget(limits)
    with _opened_tar(archive) as tar:
        members = tar.getmembers()
        for m in members:  # check everything before writing anything
            _member_path(m.name, dest)
            if not (m.isfile() or m.isdir()):
                kind = "link" if (m.issym() or m.islnk()) else "special file"
                raise InvalidRequest(f"the archive member {m.name[:200]!r} is a {kind}; nothing installed")
        for m in members:
            target = _member_path(m.name, dest)
            if m.isdir():
                target.mkdir(parents=True, exist_ok=True)
                continue
            budget.file()
            src = tar.extractfile(m)
            if src is None:
                raise InvalidRequest(f"the archive member {m.name[:200]!r} cannot be read")
            with src:
                budget.copy(src, target, bool(m.mode & 0o111))


def _extract_zip(archive: Path, dest: Path, limits: Limits) -> None:
    budget = _Budget(limits)
    try:
        zf = zipfile.ZipFile(archive)
    except (zipfile.BadZipFile, OSError) as exc:
        raise InvalidRequest(f"{archive.name} is not a readable zip archive ({exc})") from None
    with zf:
        infos = zf.infolist()
        for info in infos:
            _member_path(info.filename, dest)
            mode = info.external_attr >> 16
            if stat.S_IFMT(mode) and not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):  # no type bits: a file
                kind = "link" if stat.S_ISLNK(mode) else "special file"
                raise InvalidRequest(f"the archive member {info.filename[:200]!r} is a {kind}; nothing installed")
        for info in infos:
            target = _member_path(info.filename, dest)
            if info.is_dir():
                target.mkdir(parents=True, exist_ok=True)
                continue
            budget.file()
            try:
                with zf.open(info) as src:
                    budget.copy(src, target, bool((info.external_attr >> 16) & 0o111))
            except (zipfile.BadZipFile, RuntimeError, NotImplementedError) as exc:  # bad CRC, encrypted, method
                raise InvalidRequest(f"the archive member {info.filename[:200]!r} cannot be read ({exc})") from None
