"""The token signing secret on a PostgreSQL store: one for every daemon of the store.

On SQLite the secret is a file in the workspace (signet.auth.tokens.load_secret): one daemon,
one file. Daemons sharing a PostgreSQL store each have their own workspace, so a token signed
by one must verify on the others: the secret lives in the database (``signet_auth_keys``,
PostgreSQL migration 31). The first daemon to need it stores its workspace's secret there
(tokens that workspace already issued stay valid); every later one adopts the stored secret
and writes it to its own workspace file, so ``signet token create`` on that host (which signs
offline, with the file) issues tokens every daemon accepts.

The stored secret is as sensitive as the file: whoever can read the table (or a ``pg_dump``)
can sign tokens (docs/team.md).
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

from signet.auth.tokens import SECRET_BYTES, load_secret, secret_path

log = logging.getLogger(__name__)

KEY_NAME = "token_signing"


def shared_secret(db: Any, workspace_root: Path) -> bytes:
    """The store's signing secret, seeded from this workspace's file when the store has none."""
    local = load_secret(workspace_root)

    def get_or_seed(conn: Any) -> bytes:
        conn.raw.execute(
            "INSERT INTO signet_auth_keys(name, value) VALUES (%s, %s) ON CONFLICT (name) DO NOTHING",
            (KEY_NAME, local),
        )
        row = conn.raw.execute("SELECT value FROM signet_auth_keys WHERE name = %s", (KEY_NAME,)).fetchone()
        return bytes(row[0])

    stored: bytes = db.write(get_or_seed)
    if len(stored) != SECRET_BYTES:
        raise ValueError(f"the store's token signing secret is not {SECRET_BYTES} bytes; delete its row to make one")
    if stored != local:
        _replace_file(secret_path(workspace_root), stored)
        log.warning(
            "this workspace's token secret differs from the shared store's; the store's is used "
            "(tokens this workspace signed before joining no longer verify)"
        )
    return stored


def _replace_file(path: Path, data: bytes) -> None:
    """Write the secret atomically with mode 0600 (a reader sees the old file or the new one)."""
    tmp = path.with_name(f".auth.secret.{os.getpid()}.shared.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    tmp.replace(path)
