"""The store agent.yaml's ``storage`` section names, built (not opened) in one place.

The runtime and the daemon's start-up probe both come here, so ``storage.backend`` means the
same everywhere. PostgreSQL support is the ``postgres`` extra: its modules are imported only
past :func:`require_postgres`, so the default install (SQLite) never imports psycopg or
sqlglot and a missing extra is one line naming what to install, not a traceback.
"""

from __future__ import annotations

import logging
import re
import socket
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, cast

from signet.config import Settings
from signet.errors import ConfigError, Conflict
from signet.store.database import Database

if TYPE_CHECKING:
    from signet.workspace import Workspace

log = logging.getLogger(__name__)

INSTALL_HINT = "pip install 'signet-memory[postgres]'"


def require_postgres(what: str = "storage.backend: postgres") -> None:
    """Refuse in one line when psycopg, psycopg_pool or sqlglot is missing."""
    try:
        import psycopg  # noqa: F401
        import psycopg_pool  # noqa: F401
        import sqlglot  # noqa: F401
    except ImportError as exc:
        raise ConfigError(
            f"{what} needs PostgreSQL support ({exc.name or exc} is not installed): {INSTALL_HINT}",
            key="storage.backend",
        ) from None


def build_store(
    workspace: Workspace, settings: Settings, secret: Callable[[str], str | None] | None = None
) -> Database:
    """The store ``settings.storage`` names, not yet opened: the workspace's SQLite file, or
    the PostgreSQL database of ``storage.url`` with the password ``storage.password`` names
    (an environment variable, or an entry of the workspace's secret store read by ``secret``:
    the caller passes :func:`signet.secrets.store.reader`, since the store layer sits below
    the secret store).

    Typed as :class:`Database` because the services are typed against it; the PostgreSQL
    store keeps the same contract (signet.store.backend.StorageBackend)."""
    storage = settings.storage
    if storage.backend == "sqlite":
        db = Database(workspace.database_path(settings), backups=settings.backup)
        db.lease_owner = lease_owner(workspace)
        return db
    require_postgres()
    from signet.store import pg_url
    from signet.store.postgres import PostgresDatabase

    assert storage.url is not None  # StorageSettings requires it with backend: postgres
    try:
        target = pg_url.resolve(storage.url, storage.password, secret=secret)
    except pg_url.PasswordUnavailable as exc:
        raise ConfigError(str(exc), key="storage.password") from None
    except ValueError as exc:  # its text never quotes the URL (it may hold a password)
        raise ConfigError(str(exc), key="storage.url") from None
    pg = PostgresDatabase(target, pool_size=storage.pool_size)
    pg.lease_owner = lease_owner(workspace)
    return cast(Database, pg)


def lease_owner(workspace: Workspace) -> str:
    """This workspace's name on the job queues' leases (``leased_by``): the host and an id kept in
    ``.daemon/lease-owner``, made on first use. Stable across restarts, so a daemon restarted
    after a crash releases its previous run's leases at once (signet.pipeline.queue.release_at_start);
    distinct per workspace and host, so it never releases another daemon's. The host is part of it
    because a workspace copied to another machine keeps the file. Unreadable or unwritable: an id
    for this process only (the leases then wait for their timeout, as before)."""
    path = workspace.daemon_dir / "lease-owner"
    host = socket.gethostname()[:64]
    try:
        text = path.read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        text = ""
    except OSError as exc:
        log.warning("lease owner: cannot read %s (%s); leases of a crashed run wait for their timeout", path, exc)
        return f"{host}/{uuid.uuid4().hex}"
    if not re.fullmatch(r"[0-9a-f]{32}", text):
        text = uuid.uuid4().hex
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(".tmp")
            tmp.write_text(text + "\n", encoding="utf-8")
            tmp.replace(path)
        except OSError as exc:
            log.warning("lease owner: cannot write %s (%s); leases of a crashed run wait for their timeout", path, exc)
    return f"{host}/{text}"


def require_sqlite(settings: Settings, what: str, instead: str) -> None:
    """Refuse, in one line, a command or route that works on the SQLite file itself (backup,
    restore, repair) when the store is PostgreSQL: ``instead`` says what to do there."""
    if settings.storage.backend != "sqlite":
        raise Conflict(
            f"{what} works on the SQLite file, but this workspace's store is PostgreSQL "
            f"(storage.backend: postgres): {instead} (docs/team.md)",
            code="storage_postgres",
        )
