"""Local files as documents: which paths may be read, and reading them.

Only local callers may name a path at all (the route checks that). The path must exist and be
a regular file once every symlink in it is resolved, and the resolved file must lie inside one
of ``documents.allowed_paths`` (themselves resolved): a symlink inside an allowed folder that
points outside it is refused, as is a symlink loop. The file is read again, with the same
checks, each time the document is ingested, so a file that vanished or moved out of bounds in
between fails the document with a readable error.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from signet.documents.errors import DocumentFailed


def allowed_roots(allowed: list[str]) -> list[Path]:
    roots: list[Path] = []
    for entry in allowed:
        try:
            roots.append(Path(entry).expanduser().resolve(strict=False))
        except (OSError, RuntimeError, ValueError):  # an unusable entry allows nothing
            continue
    return roots


def resolve_allowed(raw: str, allowed: list[str]) -> Path:
    """The real path of the file ``raw`` names; :class:`DocumentFailed` when it may not be read."""
    if "\x00" in raw:
        raise DocumentFailed("a path cannot contain a NUL character")
    try:
        given = Path(raw).expanduser()
    except RuntimeError:  # ~user of no such user
        raise DocumentFailed(f"cannot expand {raw!r}: no such user's home") from None
    if not given.is_absolute():
        raise DocumentFailed(f"give an absolute path, not {raw!r}")
    try:
        real = given.resolve(strict=True)
    except FileNotFoundError:
        raise DocumentFailed(f"no such file: {given}") from None
    except RuntimeError:  # Python < 3.13: a symlink loop
        raise DocumentFailed(f"{given} is a symlink loop") from None
    except OSError as exc:
        if exc.errno == 40:  # ELOOP
            raise DocumentFailed(f"{given} is a symlink loop") from None
        raise DocumentFailed(f"cannot read {given}: {exc.strerror or exc}") from None
    roots = allowed_roots(allowed)
    if not any(real == root or real.is_relative_to(root) for root in roots):
        shown = ", ".join(str(r) for r in roots) or "none"
        where = f" (it resolves to {real})" if real != given else ""
        raise DocumentFailed(
            f"{given}{where} is outside the folders documents may be read from ({shown}; documents.allowed_paths)"
        )
    try:
        mode = real.stat().st_mode
    except OSError as exc:
        raise DocumentFailed(f"cannot read {given}: {exc.strerror or exc}") from None
    if not stat.S_ISREG(mode):
        raise DocumentFailed(f"{given} is not a regular file")
    return real


def read_file(raw: str, allowed: list[str], max_bytes: int) -> tuple[Path, bytes]:
    """(real path, bytes) of an allowed file of at most ``max_bytes``."""
    real = resolve_allowed(raw, allowed)
    try:
        # O_NOFOLLOW: the checked real path must not have become a symlink since.
        fd = os.open(real, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError as exc:
        raise DocumentFailed(f"cannot read {raw}: {exc.strerror or exc}") from None
    try:
        with os.fdopen(fd, "rb") as fh:
            data = fh.read(max_bytes + 1)
    except OSError as exc:
        raise DocumentFailed(f"cannot read {raw}: {exc.strerror or exc}") from None
    if len(data) > max_bytes:
        raise DocumentFailed(f"{raw} is over the limit of {max_bytes} bytes (documents.max_bytes)")
    return real, data
