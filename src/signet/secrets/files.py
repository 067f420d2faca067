"""Private files: written whole or not at all (temp file + rename), mode 0600 in a 0700 directory."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def private_dir(path: Path) -> Path:
    """Create ``path`` (0700) if needed, and tighten it if it is open to others."""
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    if os.name == "posix" and path.stat().st_mode & 0o077:
        path.chmod(0o700)
    return path


def write_private(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data`` atomically: a reader sees the old file or the new one."""
    private_dir(path.parent)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)  # created 0600
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        Path(tmp).replace(path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    if os.name == "posix":
        dir_fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)  # the rename itself survives a crash
        finally:
            os.close(dir_fd)
