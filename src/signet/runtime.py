"""The composition root: everything a running Signet holds, built in one place.

Each service is a typed attribute, built in dependency order (store, engines, services) and
closed in reverse; nothing is looked up by name. The daemon, the CLI's in-process paths, the
benchmarks and the tests build the same Runtime, so they exercise the same code. Interfaces
(routes, MCP, CLI) sit above it and read its attributes; services below it never import it.
"""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, cast

from signet.auth.state import AuthState
from signet.capture.follow import LiveCapture
from signet.condition import Condition
from signet.config import Settings
from signet.continuity.service import ContinuityService
from signet.documents.connectors import ConnectorService
from signet.documents.service import DocumentService
from signet.documents.worker import DocumentWorker
from signet.embedding.projection import ProjectionService
from signet.embedding.service import EmbeddingService
from signet.errors import ConfigError, StorageError
from signet.gitsync.sync import GitSync
from signet.hooks.recovery import recover as recover_transcripts
from signet.hooks.service import HookService
from signet.hooks.watcher import IdentityWatcher
from signet.instance import Instance
from signet.knowledge.community_upkeep import CommunityService
from signet.memory.intake import Intake
from signet.memory.retention import RetentionWorker
from signet.memory.service import MemoryService
from signet.ops.consolidation import Consolidator, pipeline_llm
from signet.ops.maintenance import Maintenance
from signet.ops.observe import Observability
from signet.pipeline.runtime import Pipeline
from signet.search.keyword_mirror import KeywordMirror
from signet.search.vectors import VectorIndex, limit_blas_threads
from signet.secrets.service import SecretsService
from signet.secrets.store import SecretStore
from signet.secrets.store import reader as secret_reader
from signet.skills.service import SkillService
from signet.store.backend import StorageBackend
from signet.store.choose import build_store
from signet.store.database import Database
from signet.store.integrity import StoreRecord, check, looks_lost
from signet.store.sqlite import sqlite3
from signet.tasks.service import TaskService
from signet.updates.service import UpdateService
from signet.workspace import Workspace

if TYPE_CHECKING:
    from signet.store.pg_feed import ChangeFeed

log = logging.getLogger(__name__)


class Runtime:
    def __init__(
        self,
        workspace: Workspace,
        settings: Settings | None = None,
        *,
        bind_host: str | None = None,
        accept_empty_database: bool = False,
        storage: StorageBackend | None = None,
    ) -> None:
        self.workspace = workspace
        self.settings = settings if settings is not None else workspace.settings()
        self.db_path = workspace.database_path(self.settings)
        # The store agent.yaml's ``storage`` names (signet.store.choose), or one given by code
        # (tests). The services are typed against Database; both stores keep the contract of
        # signet.store.backend.
        self.db = (
            cast(Database, storage)
            if storage is not None
            else build_store(
                workspace, self.settings, secret_reader(workspace.secrets_dir, self.settings.secrets.key_store)
            )
        )
        self.sqlite = self.db.dialect == "sqlite"
        """Whether the store is the SQLite file (its integrity check, FTS5)."""
        self.index = VectorIndex()
        lists_from = self.settings.search.vector_lists_min_rows
        self.index.lists_min_rows = lists_from if lists_from > 0 else sys.maxsize
        # On PostgreSQL the mirror is the thread-context index itself (docs/team.md, keyword search).
        self.keywords = KeywordMirror(self.db) if self.settings.search.keyword_index else None
        self.embeddings = EmbeddingService(self.db, self.settings.embedding, self.index)
        self.feed: ChangeFeed | None = None
        """PostgreSQL only: other daemons' writes reaching this daemon's vector index
        (signet.store.pg_feed); ``feed.status()`` / ``feed.behind()`` report its lag."""
        self.service = MemoryService(
            self.db,
            self.settings,
            self.embeddings,
            self.index,
            workspace_root=str(workspace.root),
            keywords=self.keywords,
        )
        self.intake: Intake | None = (
            Intake(self.service, self.settings.memory.intake)
            if self.sqlite and self.settings.memory.intake.enabled
            else None
        )
        """The remember intake (signet.memory.intake): SQLite only, one daemon per store."""
        self.service.intake = self.intake
        if self.intake is not None:
            self.embeddings.upstream = self.intake.wait_stored
        self.retention = RetentionWorker(self.db, self.settings.retention)
        self.watcher = IdentityWatcher(workspace.root, self.settings.hooks)
        self.started_at = time.time()
        self.condition = Condition()
        """Problems areas report (disk full, corruption): /health is degraded while any."""
        self.db.on_trouble = self._storage_trouble
        self.record = StoreRecord(workspace.daemon_dir)
        """How many memories the database last held: an emptied database is noticed."""
        self.accept_empty_database = accept_empty_database
        self.instance: Instance | None = None
        """This daemon's published identity (signet.instance), set by the daemon process
        (signet.daemon.server); None for an in-process runtime (tests, benchmarks)."""
        self.on_start: list[Callable[[Runtime], None]] = []
        self.on_stop: list[Callable[[Runtime], None]] = []
        self.after_stop: list[Callable[[Runtime], None]] = []
        """Run once everything is stopped and the database closed: the daemon releases its
        lock here, so `signet stop` returns only when the memory count is recorded and no
        thread still touches the files."""
        self.pipeline = Pipeline(self.settings.memory.pipeline, self.db, self.service)
        self.watcher.on_config.append(self.reload_config)  # a new LLM provider or budget applies live
        self.consolidation = Consolidator(
            self.service, self.settings.memory.consolidation, lambda: pipeline_llm(self.pipeline)
        )
        """Consolidation runs: plan, apply, undo, and the scheduled run (signet.ops.consolidation)."""
        self.documents = DocumentService(self.service, self.settings)
        """Documents (signet.documents): add, list, chunks, delete; its worker ingests them."""
        self.document_worker = DocumentWorker(self.service, self.settings)
        self.documents.on_queued.append(self.document_worker.notify)
        self.connectors = ConnectorService(self.documents, self.settings)
        """Connectors (signet.documents.connectors): folders kept in step with their documents."""
        self.hooks = HookService(
            self.db,
            self.service,
            self.settings.hooks,
            workspace.root,
            session_budget=self.settings.memory.session_budget,
            pipeline_enabled=self.settings.memory.pipeline.enabled,
            max_attempts=self.settings.memory.pipeline.max_attempts,
        )
        self.continuity = ContinuityService(
            self.db,
            self.settings.memory.continuity,
            workspace.root,
            llm_source=lambda: self.pipeline.llm,
            gate=self._llm_gate,
            on_unavailable=self.pipeline.supply.mark_down,
            handoff_summaries=self.settings.memory.pipeline.summarize_handoff,
            poll_s=self.settings.memory.pipeline.poll_interval_ms / 1000,
            wait_s=self.settings.memory.pipeline.backoff_max_ms / 1000,
        )
        """Session summaries, MEMORY.md synthesis, checkpoints, continuity scores (signet.continuity)."""
        self.hooks.continuity = self.continuity
        self.auth = AuthState(self.settings, workspace.root, self.db, bind_host)
        """``bind_host``: the address the daemon listens on, a name the Host header may carry."""
        self.maintenance = Maintenance(self)
        """Repairs through the gate, and the worker that plans and runs them (signet.ops.maintenance)."""
        self.communities = CommunityService(self.db)
        """The knowledge graph's entity communities: computed on demand and, when the graph
        changed, after each scheduled maintenance cycle (signet.knowledge.community_upkeep)."""
        self.maintenance.upkeep.append(("communities", self.communities.refresh_changed))
        self.observability = Observability(self.settings, self.db, self.service, self.embeddings, self.pipeline)
        self.projections = ProjectionService(self.db)  # the dashboard's embedding map (umap_cache)
        """Analytics, the telemetry event log and the recall QA ledger (signet.ops.observe)."""
        self.connectors.on_sync.append(self._connector_synced)
        self.secrets = SecretsService(
            self.db,
            SecretStore(workspace.secrets_dir, self.settings.secrets.key_store),
            self.settings.secrets.exec,
            workspace.root,
        )
        """The encrypted secret store and commands run with secrets (signet.secrets)."""
        self.tasks = TaskService(self.db, self.settings.tasks, workspace.root, self.secrets.store)
        """Scheduled tasks and their scheduler (signet.tasks)."""
        self.skills = SkillService(workspace.root, self.settings.skills, self.db)
        """Installed skills, their harness links and use counts (signet.skills)."""
        self.git = GitSync(workspace.root, self.settings.git)
        """Git sync of the workspace with its remote (signet.gitsync)."""
        self.updates = UpdateService(self.settings.update, workspace.root)
        """Update checks and installs; the scheduled check only with update.checkIntervalHours (signet.updates)."""
        self.capture = LiveCapture(
            self.db,
            self.settings.capture,
            enqueue=self.settings.memory.pipeline.enabled,
            max_attempts=self.settings.memory.pipeline.max_attempts,
        )
        """Live transcript capture (signet.capture): follows the session files of the harnesses
        listed in ``capture.harnesses``; idle when none is."""
        self._running = False
        self.defer_loaders = False
        """Set by the daemon (signet.daemon.server): :meth:`start` leaves the vector and keyword
        indexes to :meth:`start_loaders`, which the daemon calls once its app has started (it
        listens before that, signet.daemon.boot). Their threads read every memory of the store
        (a million rows at scale) in Python, and started with the runtime they took the
        interpreter from the start-up itself, delaying the API."""
        self._loaders_started = False

    def reload_config(self) -> bool:
        """agent.yaml changed: apply what a running daemon can change (the pipeline's LLM provider
        and budgets: jobs waiting for a provider drain at once; live capture's harnesses and
        roots). Everything else still needs a restart. A file that does not validate is logged
        and the running settings stay."""
        try:
            new = self.workspace.settings()
        except (ConfigError, OSError) as exc:
            log.warning("agent.yaml changed but cannot be used, the running settings stay: %s", exc)
            return False
        pipe = new.memory.pipeline
        changed = self.pipeline.reload(pipe.extraction, pipe.budgets)
        if changed:
            log.info("agent.yaml reloaded: LLM provider %s", pipe.extraction.provider)
        if self.capture.reconfigure(new.capture):
            self.settings.capture = new.capture
            log.info("agent.yaml reloaded: capturing %s", ", ".join(new.capture.harnesses) or "nothing")
            changed = True
        return changed

    def _llm_gate(self) -> tuple[str, str] | None:
        """Whether an LLM call may be made now (the pipeline's provider, health and budget)."""
        blocked = self.pipeline.supply.blocked()
        return None if blocked is None else (blocked.status, blocked.reason)

    def _connector_synced(self, name: str, error: str | None, queued: int) -> None:
        analytics = self.observability.analytics
        analytics.record_connector(name, syncs=1, errors=1 if error else 0, documents=queued)
        if error is not None:
            analytics.record_error("CONNECTOR_SYNC_FAIL", f"connector {name}: {error}")

    def check_store(self) -> None:
        """Refuse a database that lost its memories (missing or emptied while the workspace
        recorded some), unless the user accepted an empty store. The daemon calls this before
        it serves, so the refusal is one line, not a failed start-up."""
        lost = looks_lost(self.db_path, self.record) if self.sqlite else 0
        if lost and not self.accept_empty_database:
            raise StorageError(
                f"the database at {self.db_path} is missing or empty, but it held {lost} memories; restore it from a "
                "backup, or accept an empty store with `signet start --accept-empty-database`",
                code="storage_emptied",
            )

    def _save_record(self) -> None:
        """Remember how many memories the database holds (start and stop). Only the SQLite
        file's: the check it feeds is the file's, and a PostgreSQL count recorded here would
        make the workspace's file look emptied after a switch back to SQLite."""
        if not self.sqlite:
            return
        try:
            count = int(self.db.read(lambda c: c.execute("SELECT COUNT(*) FROM memories").fetchone()[0]))
            self.record.save(count)
        except (OSError, StorageError, sqlite3.DatabaseError) as exc:  # a full disk or damaged file: said elsewhere
            log.warning("could not record the memory count: %s", exc)

    def _storage_trouble(self, cause: str, message: str | None) -> None:
        """Writes failing for a storage reason degrade /health until one lands again."""
        if message is None:
            self.condition.clear(cause)
        else:
            self.condition.report(cause, message)

    def start(self) -> Runtime:
        if self._running:
            return self
        self.check_store()
        self.db.open()
        problem = self.db.read(lambda c: check(self.db_path, c)) if self.sqlite else None
        if problem is not None:
            msg = (
                f"the database at {self.db_path} is damaged ({problem}); stop the daemon and run "
                "`signet repair --recover`, or restore a backup"
            )
            log.error("%s", msg)
            self.condition.report("storage_damaged", msg)
        limit_blas_threads(self.settings.search.vector_threads)
        if not self.sqlite:  # the feed's cursor is taken before the vector index loads
            self.feed = _change_feed(self)
            self.feed.start()
        if not self.defer_loaders:
            self.start_loaders()
        if self.intake is not None:
            self.intake.start()
        self.retention.start()
        self.watcher.start()
        pipeline = self.settings.memory.pipeline
        recover_transcripts(
            self.db,
            self.workspace.root,
            enqueue=pipeline.enabled,
            max_attempts=pipeline.max_attempts,
            on_stored=self.hooks.recovered,
        )
        self.auth.sync_roster()
        if not self.sqlite:  # adopt the store's shared token secret now, so this host's CLI signs with it
            _ = self.auth.secret
        self.pipeline.start()  # releases every lease a previous run left, document jobs' too
        self.document_worker.start()
        self.capture.start()
        auto = (self.workspace.root, Path.home()) if self.settings.documents.auto_ingest else None
        self.connectors.start(auto_ingest=auto)
        self.continuity.start()
        # The session summary job upgrades the handoff too; the thread-per-session summarizer
        # is only for when summaries are off.
        self.hooks.summarizer = None if self.settings.memory.continuity.summaries else self.pipeline.summarizer()
        self.maintenance.start()
        self.consolidation.start()
        self.observability.start()
        self.secrets.start()
        self.tasks.start()
        self.updates.start()
        for fn in self.on_start:
            fn(self)
        self._save_record()
        self._running = True
        return self

    def start_loaders(self) -> None:
        """Start the embedder (which loads the vector index) and the in-memory keyword index, in
        their background threads; once (the daemon calls it when it listens, see
        :attr:`defer_loaders`). Until they are ready recall answers as while they load: keyword
        search from FTS5, no vector leg."""
        if self._loaders_started:
            return
        self._loaders_started = True
        self.embeddings.start()
        if self.keywords is not None:
            # One after the other: side by side, the two loads' row-by-row reads wait on each
            # other's GIL (KeywordMirror._wait_for), and recall needs the vectors more.
            self.keywords.start(after=self.embeddings.loaded)

    def stop(self) -> None:
        if not self._running:
            return
        self._running = False
        for fn in reversed(self.on_stop):
            try:
                fn(self)
            except Exception:  # one area's failure must not keep the database open
                log.exception("error while stopping %r", fn)
        self.consolidation.stop()
        self.maintenance.stop()  # before the workers it repairs and the database it reads
        self.updates.stop()
        self.tasks.stop()  # stops scheduling and kills running tasks before the database closes
        self.secrets.stop()  # kills running commands and records them before the database closes
        self.connectors.stop()
        self.capture.stop()  # before the pipeline and the database its batches are written to
        self.document_worker.stop()
        self.continuity.stop()
        if self.intake is not None:
            self.intake.stop()  # what still waits stays committed: the next start stores it
        self.pipeline.stop()
        self.watcher.stop()
        self.retention.stop()
        self.observability.stop()  # its last events are written before the database closes
        self._save_record()
        if self.keywords is not None:
            self.keywords.stop()
        if self.feed is not None:
            self.feed.stop()
        self.embeddings.stop()
        self.db.close()
        for fn in self.after_stop:
            fn(self)

    def __enter__(self) -> Runtime:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _change_feed(rt: Runtime) -> ChangeFeed:
    """The PostgreSQL change feed for this runtime's vector index (imported here: the default
    install has no psycopg)."""
    from signet.store.pg_feed import ChangeFeed
    from signet.store.postgres import PostgresDatabase

    return ChangeFeed(
        cast(PostgresDatabase, rt.db),
        rt.index,
        model_key=lambda: rt.embeddings.model_key,
        ready=lambda: rt.embeddings.state != "loading",
    )
