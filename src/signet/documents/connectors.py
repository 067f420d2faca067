"""Connectors: sources kept in step with their documents (spec 001, "Connector Framework").

The one provider here is ``filesystem``: a folder whose markdown and text files are documents
(signet.documents.filesystem decides which). A sync compares the folder with the connector's
cursor (path -> mtime, size, content hash): a file whose mtime and size are unchanged is not even
read; one that changed is hashed, and only a new hash queues its document again (whose unchanged
chunks then keep their memories and vectors, signet.documents.index); a file that is gone takes
its document and the chunks only it held with it. ``sync/full`` ignores the cursor and queues
every file. The queueing, the deletions and the new cursor are one transaction.

A connector is ``idle``, ``syncing`` or ``error`` (``last_error`` says why, e.g. the root
vanished); one sync runs at a time per connector. With ``watch`` on, a thread per connector
syncs after changes (watchfiles) while the daemon runs.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from signet.config import Settings
from signet.documents import index
from signet.documents.errors import DocumentFailed
from signet.documents.service import DocumentService, upsert
from signet.documents.source import ConnectorSource, SourceItem, config_key, source_for
from signet.errors import Conflict, Forbidden, InvalidRequest, NotFound
from signet.models import (
    Connector,
    ConnectorCreateRequest,
    ConnectorDeleted,
    ConnectorHealth,
    ConnectorList,
    SyncResult,
)
from signet.store.records import now_iso
from signet.store.scope import UNSCOPED, ReadScope
from signet.store.sqlite import Connection

log = logging.getLogger(__name__)

WATCH_DEBOUNCE_MS = 500


def _default_name(config: dict[str, Any]) -> str | None:
    root = config.get("root")
    return Path(root).name or root if isinstance(root, str) else None


def _visible(row: Any, scope: ReadScope) -> bool:
    if scope.project is not None and row["project"] != scope.project:
        return False
    return scope.write_agent is None or row["agent_id"] == scope.write_agent


class ConnectorService:
    def __init__(self, documents: DocumentService, settings: Settings) -> None:
        self.documents = documents
        self.db = documents.db
        self.settings = settings
        self._locks: dict[str, threading.Lock] = {}
        self._guard = threading.Lock()
        self._watchers: dict[str, tuple[threading.Thread, threading.Event]] = {}
        self._running = False
        self.on_sync: list[Callable[[str, str | None, int], None]] = []
        """Told after every sync: (connector name, the error or None, documents queued);
        analytics counts them (signet.runtime). They must not raise."""

    # -- rows ------------------------------------------------------------------------------
    def _row(self, conn: Connection, given: str, scope: ReadScope) -> Any:
        row = conn.execute("SELECT * FROM connectors WHERE id = ?", (given,)).fetchone()
        if row is None and len(given) >= 4:
            rows = conn.execute(
                "SELECT * FROM connectors WHERE id >= ? AND id < ? LIMIT 2", (given, given + "\U0010ffff")
            ).fetchall()
            row = rows[0] if len(rows) == 1 else None
        if row is None or not _visible(row, scope):
            raise NotFound(f"no connector has id '{given}'", id=given)
        return row

    def _model(self, conn: Connection, row: Any) -> Connector:
        docs = conn.execute("SELECT COUNT(*) FROM documents WHERE connector_id = ?", (row["id"],)).fetchone()[0]
        return Connector(
            id=row["id"],
            provider=row["provider"],
            name=row["display_name"],
            config=json.loads(row["config_json"]),
            status=row["status"],
            last_sync_at=row["last_sync_at"],
            last_error=row["last_error"],
            last_error_at=row["last_error_at"],
            agent_id=row["agent_id"],
            project=row["project"],
            documents=int(docs),
            created_at=row["created_at"],
            updated_at=row["updated_at"],
        )

    # -- create, read, delete --------------------------------------------------------------
    def create(self, req: ConnectorCreateRequest, *, scope: ReadScope = UNSCOPED, local: bool = False) -> Connector:
        """Register a source (local admin callers only: a connector reads what this machine can
        reach). It is not synced yet: ``sync`` does that (the CLI's ``connectors add`` calls it)."""
        if not local:
            raise Forbidden("connectors are accepted from local callers only", reason="local_only")
        agent, project = scope.owner(req.agent_id, req.project)
        try:
            config = source_for(req.provider, req.config, self.settings.documents).prepare()
        except DocumentFailed as exc:
            raise InvalidRequest(exc.message) from None
        stored = config_key(config)
        identity = self._identity(req.provider, config)
        cid = str(uuid.uuid4())
        now = now_iso()
        name = req.name or _default_name(config) or req.provider

        def write(conn: Connection) -> Connector:
            for other in conn.execute(
                "SELECT id, config_json FROM connectors WHERE provider = ? AND agent_id = ? AND COALESCE(project, '') = ?",
                (req.provider, agent or "default", project or ""),
            ):
                if self._identity(req.provider, json.loads(other["config_json"])) == identity:
                    raise Conflict(
                        f"connector {other['id']} syncs this source already", id=str(other["id"]), reason="duplicate"
                    )
            conn.execute(
                "INSERT INTO connectors(id, provider, display_name, config_json, agent_id, project, created_at,"
                " updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (cid, req.provider, name, stored, agent or "default", project, now, now),
            )
            return self._model(conn, conn.execute("SELECT * FROM connectors WHERE id = ?", (cid,)).fetchone())

        made = self.db.write(write)
        if self._running:
            self._watch_if_asked(cid, req.provider, config)
        return made

    def _identity(self, provider: str, config: dict[str, Any]) -> str:
        """What makes two connectors the same source (a folder: its root), else the whole config."""
        try:
            identity = getattr(source_for(provider, config, self.settings.documents), "identity", None)
        except DocumentFailed:
            identity = None
        return identity if isinstance(identity, str) else config_key(config)

    def list(self, *, scope: ReadScope = UNSCOPED) -> ConnectorList:
        def read(conn: Connection) -> ConnectorList:
            rows = [r for r in conn.execute("SELECT * FROM connectors ORDER BY created_at, id") if _visible(r, scope)]
            return ConnectorList(items=[self._model(conn, r) for r in rows], total=len(rows))

        return self.db.read(read)

    def get(self, given: str, *, scope: ReadScope = UNSCOPED) -> Connector:
        return self.db.read(lambda c: self._model(c, self._row(c, given, scope)))

    def delete(self, given: str, *, scope: ReadScope = UNSCOPED) -> ConnectorDeleted:
        """The connector, its documents and the chunk memories only they held, in one transaction."""
        cid = self.db.read(lambda c: str(self._row(c, given, scope)["id"]))
        self._unwatch(cid)
        with self._lock(cid):

            def write(conn: Connection) -> ConnectorDeleted:
                docs = [str(r[0]) for r in conn.execute("SELECT id FROM documents WHERE connector_id = ?", (cid,))]
                removed = sum(index.remove_document(conn, self.documents.service, d) for d in docs)
                conn.execute("DELETE FROM connectors WHERE id = ?", (cid,))
                return ConnectorDeleted(id=cid, status="deleted", documents_deleted=len(docs), memories_deleted=removed)

            return self.db.write(write)

    def health(self, given: str, *, scope: ReadScope = UNSCOPED) -> ConnectorHealth:
        def read(conn: Connection) -> ConnectorHealth:
            row = self._row(conn, given, scope)
            counts = {
                str(r[0]): int(r[1])
                for r in conn.execute(
                    "SELECT status, COUNT(*) FROM documents WHERE connector_id = ? GROUP BY status", (row["id"],)
                )
            }
            counts["total"] = sum(counts.values())
            return ConnectorHealth(
                id=row["id"],
                status=row["status"],
                healthy=row["last_error"] is None and counts.get("failed", 0) == 0,
                last_sync_at=row["last_sync_at"],
                last_error=row["last_error"],
                last_error_at=row["last_error_at"],
                documents=counts,
                files=len(json.loads(row["cursor_json"])),
                watching=row["id"] in self._watchers,
            )

        return self.db.read(read)

    # -- sync ------------------------------------------------------------------------------
    def _lock(self, cid: str) -> threading.Lock:
        with self._guard:
            return self._locks.setdefault(cid, threading.Lock())

    def sync(self, given: str, *, scope: ReadScope = UNSCOPED, full: bool = False, wait: bool = False) -> SyncResult:
        """Bring the connector's documents in step with its folder. 409 when a sync of it runs
        already (``wait``: wait for it instead, as the watcher does) or when the folder cannot be read."""
        row = self.db.read(lambda c: self._row(c, given, scope))
        lock = self._lock(row["id"])
        if not lock.acquire(blocking=wait):
            raise Conflict(f"connector {row['id']} is syncing already", reason="syncing")
        try:
            self._set_status(row["id"], "syncing")
            try:
                result = self._sync(row, full)
            except DocumentFailed as exc:
                self._set_status(row["id"], "error", exc.message)
                self._synced(row, exc.message, 0)
                raise Conflict(f"sync failed: {exc.message}", reason="sync_failed") from None
            except Exception as exc:
                self._set_status(row["id"], "error", f"{type(exc).__name__}: {exc}")
                self._synced(row, f"{type(exc).__name__}: {exc}", 0)
                raise
        finally:
            lock.release()
        self._synced(row, None, result.queued)
        for fn in self.documents.on_queued:
            fn()
        return result

    def _synced(self, row: Any, error: str | None, queued: int) -> None:
        for fn in self.on_sync:
            fn(str(row["display_name"]), error, queued)

    def _set_status(self, cid: str, status: str, error: str | None = None) -> None:
        now = now_iso()

        def write(conn: Connection) -> None:
            if error is None:
                conn.execute("UPDATE connectors SET status = ?, updated_at = ? WHERE id = ?", (status, now, cid))
            else:
                conn.execute(
                    "UPDATE connectors SET status = ?, last_error = ?, last_error_at = ?, updated_at = ? WHERE id = ?",
                    (status, error[:2000], now, now, cid),
                )

        self.db.write(write)

    def source(self, row: Any) -> ConnectorSource:
        return source_for(row["provider"], json.loads(row["config_json"]), self.settings.documents)

    def _sync(self, row: Any, full: bool) -> SyncResult:
        started = time.perf_counter()
        cid = str(row["id"])
        source = self.source(row)
        found = source.scan()
        cursor: dict[str, dict[str, Any]] = {} if full else json.loads(row["cursor_json"])
        fresh: dict[str, dict[str, Any]] = {}
        changed: list[SourceItem] = []
        unchanged = 0
        for item in found.items:
            old = cursor.get(item.key)
            if old is not None and old.get("fingerprint") == item.fingerprint:
                fresh[item.key] = old
                unchanged += 1
                continue
            try:
                digest = hashlib.sha256(source.read(item.key)).hexdigest()
            except DocumentFailed as exc:  # gone or refused since the scan: the next sync looks again
                found.skip(exc.message)
                continue
            fresh[item.key] = {"fingerprint": item.fingerprint, "hash": digest}
            if old is not None and old.get("hash") == digest:
                unchanged += 1
                continue
            changed.append(item)
        present = {item.key for item in found.items}
        max_attempts = self.documents.max_attempts

        def write(conn: Connection) -> int:
            for item in changed:
                upsert(
                    conn,
                    {
                        "source_type": item.source_type,
                        "source_url": item.key,
                        "source_key": f"connector:{cid}:{item.key}",
                        "raw_content": None,
                        "kind": None,
                        "title": None,
                        "agent_id": row["agent_id"],
                        "project": row["project"],
                        "visibility": "global",
                        "connector_id": cid,
                        "created_by": f"connector:{cid}",
                    },
                    max_attempts,
                )
            gone = [
                str(r[0])
                for r in conn.execute("SELECT id, source_url FROM documents WHERE connector_id = ?", (cid,))
                if r[1] not in present
            ]
            for doc_id in gone:
                index.remove_document(conn, self.documents.service, doc_id)
            now = now_iso()
            conn.execute(
                "UPDATE connectors SET cursor_json = ?, status = 'idle', last_sync_at = ?, last_error = NULL,"
                " last_error_at = NULL, updated_at = ? WHERE id = ?",
                (json.dumps(fresh, sort_keys=True), now, now, cid),
            )
            return len(gone)

        deleted = self.db.write(write)
        return SyncResult(
            connector_id=cid,
            full=full,
            scanned=len(found.items),
            queued=len(changed),
            unchanged=unchanged,
            deleted=deleted,
            skipped=found.skipped_count,
            skipped_examples=found.skipped,
            took_ms=round((time.perf_counter() - started) * 1000, 1),
        )

    # -- live updates ----------------------------------------------------------------------
    def ensure(self, name: str, config: dict[str, Any]) -> str:
        """The id of the daemon's own filesystem connector on ``config['root']`` (made when
        missing): auto-ingestion's sources, chosen by the daemon, not a caller, so
        ``documents.allowed_paths`` does not apply (reads stay inside the root)."""
        source_for("filesystem", config, self.settings.documents)  # DocumentFailed for a bad config
        identity = self._identity("filesystem", config)
        rows = self.db.read(
            lambda c: c.execute(
                "SELECT id, config_json FROM connectors WHERE provider = 'filesystem' AND agent_id = 'default'"
                " AND project IS NULL"
            ).fetchall()
        )
        for r in rows:
            if self._identity("filesystem", json.loads(r["config_json"])) == identity:
                return str(r["id"])
        cid = str(uuid.uuid4())
        now = now_iso()
        self.db.write(
            lambda c: c.execute(
                "INSERT INTO connectors(id, provider, display_name, config_json, created_at, updated_at)"
                " VALUES (?, 'filesystem', ?, ?, ?, ?)",
                (cid, name, config_key(config), now, now),
            )
        )
        return cid

    def auto_ingest(self, workspace_root: Path, home: Path) -> tuple[str, ...]:
        """Spec 003's auto-ingestion: the workspace's ``memory/*.md`` and Claude Code's project
        memories, as connectors that are synced now and watched. Returns their ids."""
        sources = [
            ("workspace memory", workspace_root / "memory", ["/*.md"]),
            ("Claude Code memories", home / ".claude" / "projects", ["/*/memory/*.md"]),
        ]
        return tuple(
            self.ensure(
                name,
                {"root": str(root.resolve()), "include": include, "exclude": [], "gitignore": False, "watch": True},
            )
            for name, root, include in sources
            if root.is_dir()
        )

    def start(self, *, auto_ingest: tuple[Path, Path] | None = None) -> None:
        """Watch the connectors that ask for it; with ``auto_ingest`` (workspace root, home)
        make sure the auto-ingestion connectors exist and sync them in the background."""
        self._running = True
        if auto_ingest is not None:
            ids = self.auto_ingest(*auto_ingest)
            threading.Thread(target=self._sync_all, args=(ids,), name="signet-auto-ingest", daemon=True).start()
        rows = self.db.read(lambda c: c.execute("SELECT id, provider, config_json FROM connectors").fetchall())
        for r in rows:
            self._watch_if_asked(str(r["id"]), r["provider"], json.loads(r["config_json"]))

    def _watch_if_asked(self, cid: str, provider: str, config: dict[str, Any]) -> None:
        """Watch the connector's folder when its source has one to watch (``watch_path``)."""
        try:
            source = source_for(provider, config, self.settings.documents)
        except DocumentFailed as exc:  # its plugin is gone: syncs say so; nothing to watch
            log.warning("connector %s: %s", cid, exc.message)
            return
        path = getattr(source, "watch_path", None)
        if isinstance(path, Path):
            self._watch(cid, path, getattr(source, "watch_filter", None))

    def _sync_all(self, ids: tuple[str, ...]) -> None:
        for cid in ids:
            try:
                self.sync(cid, wait=True)
            except (Conflict, NotFound) as exc:  # said on the connector (status error)
                log.warning("auto-ingest: connector %s: %s", cid, exc)
            except RuntimeError:  # the daemon stopped meanwhile
                return

    def stop(self) -> None:
        self._running = False
        for cid in list(self._watchers):
            self._unwatch(cid)

    def _watch(self, cid: str, root: Path, relevant: Callable[[str], bool] | None) -> None:
        stop = threading.Event()
        t = threading.Thread(
            target=self._watch_loop,
            args=(cid, root, stop, relevant),
            name=f"signet-connector-{cid[:8]}",
            daemon=True,
        )
        self._watchers[cid] = (t, stop)
        t.start()

    def _unwatch(self, cid: str) -> None:
        entry = self._watchers.pop(cid, None)
        if entry is not None:
            entry[1].set()
            entry[0].join(timeout=5)

    def _watch_loop(self, cid: str, root: Path, stop: threading.Event, relevant: Callable[[str], bool] | None) -> None:
        from watchfiles import watch

        def keep(_change: object, path: str) -> bool:
            return relevant is None or relevant(path)

        try:
            for _changes in watch(
                root, watch_filter=keep, debounce=WATCH_DEBOUNCE_MS, step=50, stop_event=stop, raise_interrupt=False
            ):
                try:
                    self.sync(cid, wait=True)
                except (Conflict, NotFound) as exc:  # the error is on the connector; gone: stop
                    log.warning("connector %s: %s", cid, exc)
                    if isinstance(exc, NotFound):
                        return
                except RuntimeError:  # the database closed at shutdown
                    return
        except OSError as exc:  # the folder vanished or cannot be watched: the next sync says so
            log.warning("connector %s stopped watching %s: %s", cid, root, exc)
            self._set_status(cid, "error", f"stopped watching {root}: {exc}")
