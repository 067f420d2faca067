"""Everything a running Signet holds: settings, database, embedder, index, service.

The daemon, the benchmarks and the tests build the same Runtime, so they exercise the same
code. Areas that run background work (pipeline worker, file watcher) register start/stop
callables instead of the runtime knowing about them.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from signet.config import Settings
from signet.daemon.condition import Condition
from signet.daemon.watcher import IdentityWatcher
from signet.embedding.service import EmbeddingService
from signet.hooks.recovery import recover as recover_transcripts
from signet.memory.retention import RetentionWorker
from signet.memory.service import MemoryService
from signet.pipeline import install as install_pipeline
from signet.search.keyword_mirror import KeywordMirror
from signet.search.vectors import VectorIndex, limit_blas_threads
from signet.store.database import Database
from signet.workspace import Workspace

log = logging.getLogger(__name__)


class Runtime:
    def __init__(self, workspace: Workspace, settings: Settings | None = None) -> None:
        self.workspace = workspace
        self.settings = settings if settings is not None else workspace.settings()
        self.db_path = workspace.database_path(self.settings)
        self.db = Database(self.db_path)
        self.index = VectorIndex()
        self.keywords = KeywordMirror(self.db) if self.settings.search.keyword_index else None
        self.embeddings = EmbeddingService(self.db, self.settings.embedding, self.index)
        self.service = MemoryService(
            self.db, self.settings, self.embeddings, self.index, workspace_root=str(workspace.root),
            keywords=self.keywords,
        )
        self.retention = RetentionWorker(self.db, self.settings.retention)
        self.watcher = IdentityWatcher(workspace.root, self.settings.hooks)
        self.started_at = time.time()
        self.condition = Condition()
        """Problems areas report (disk full, corruption): /health is degraded while any."""
        self.on_start: list[Callable[[Runtime], None]] = []
        self.on_stop: list[Callable[[Runtime], None]] = []
        self.extras: dict[str, Any] = {}
        """Per-area state (pipeline worker, watcher, auth) keyed by area name."""
        self._running = False
        install_pipeline(self)

    def start(self) -> Runtime:
        if self._running:
            return self
        self.db.open()
        limit_blas_threads(self.settings.search.vector_threads)
        self.embeddings.start()
        if self.keywords is not None:
            self.keywords.start()
        self.retention.start()
        self.watcher.start()
        pipeline = self.settings.memory.pipeline
        recover_transcripts(self.db, self.workspace.root, enqueue=pipeline.enabled, max_attempts=pipeline.max_attempts)
        for fn in self.on_start:
            fn(self)
        self._running = True
        return self

    def stop(self) -> None:
        if not self._running:
            return
        self._running = False
        for fn in reversed(self.on_stop):
            try:
                fn(self)
            except Exception:  # one area's failure must not keep the database open
                log.exception("error while stopping %r", fn)
        self.watcher.stop()
        self.retention.stop()
        if self.keywords is not None:
            self.keywords.stop()
        self.embeddings.stop()
        self.db.close()

    def __enter__(self) -> Runtime:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
