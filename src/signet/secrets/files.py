"""Private files: written whole or not at all (temp file + rename), mode 0600 in a 0700 directory."""

from __future__ import annotations

import os
from pathlib import Path

from signet.harnesses.merge import write_atomic


def private_dir(path: Path) -> Path:
    """Create ``path`` (0700) if needed, and tighten it if it is open to others."""
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    if os.name == "posix" and path.stat().st_mode & 0o077:
        path.chmod(0o700)
    return path


def write_private(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data`` atomically and durably, mode 0600 in a 0700 directory."""
    private_dir(path.parent)
    write_atomic(path, data, mode=0o600, durable=True)
