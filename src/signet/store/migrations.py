"""Numbered, append-only schema migrations.

Each migration is a block of SQL applied in one transaction and recorded in
``schema_migrations`` with a checksum of its text (duration goes to
``schema_migrations_audit``). An applied migration whose text later changes is an error:
fix forward with a new migration instead. Any migration not yet recorded is applied, in
version order, so the runner is safe to call on every start.

Numbers are reserved per area so parallel work never collides:
1 core, 2 auth + agents, 3 pipeline, 4 harness/hooks, 5 MCP feedback, 6 recall quality.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

from signet.store.schema_auth import AUTH_SCHEMA
from signet.store.schema_capture import CAPTURE_SCHEMA
from signet.store.schema_consolidation import CONSOLIDATION_SCHEMA
from signet.store.schema_continuity import CONTINUITY_SCHEMA
from signet.store.schema_documents import DOCUMENTS_SCHEMA
from signet.store.schema_entity_links import ENTITY_LINKS_SCHEMA
from signet.store.schema_feedback import FEEDBACK_SCHEMA
from signet.store.schema_graph import ENTITIES_PER_AGENT_SCHEMA
from signet.store.schema_hints import HINTS_SCHEMA
from signet.store.schema_hooks import HOOKS_SCHEMA
from signet.store.schema_intake import INTAKE_SCHEMA
from signet.store.schema_kind_aspects import KIND_ASPECTS_SCHEMA
from signet.store.schema_knowledge import KNOWLEDGE_SCHEMA
from signet.store.schema_lease_owner import LEASE_OWNER_SCHEMA
from signet.store.schema_lifecycle import LIFECYCLE_SCHEMA
from signet.store.schema_llm_usage import LLM_USAGE_SCHEMA
from signet.store.schema_pipeline import PIPELINE_SCHEMA
from signet.store.schema_repair import REPAIR_AUDIT_SCHEMA
from signet.store.schema_secrets import SECRETS_SCHEMA
from signet.store.schema_signals import SIGNALS_SCHEMA
from signet.store.schema_skills import SKILLS_SCHEMA
from signet.store.schema_supersession import SUPERSESSION_SCHEMA
from signet.store.schema_task_runner import TASK_RUNNER_SCHEMA
from signet.store.schema_tasks import TASK_SECRETS_SCHEMA, TASKS_SCHEMA
from signet.store.schema_telemetry import TELEMETRY_SCHEMA
from signet.store.schema_umap import UMAP_CACHE_SCHEMA
from signet.store.sqlite import Connection, sqlite3
from signet.store.thread_context import CONTENTLESS_SCHEMA, CONTEXT_SCHEMA_V7, KEYWORD_LOG_SCHEMA, RECALL_SCHEMA


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    sql: str
    foreign_keys_off: bool = False
    """Run with foreign keys off (a table rebuild, whose DROP would otherwise cascade); the
    foreign keys are checked before the migration commits."""

    @property
    def checksum(self) -> str:
        return hashlib.sha256(self.sql.strip().encode("utf-8")).hexdigest()


CORE_SCHEMA = """
CREATE TABLE IF NOT EXISTS memories (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    type TEXT NOT NULL DEFAULT 'fact',
    category TEXT,
    content TEXT NOT NULL,
    confidence REAL DEFAULT 1.0,
    importance REAL NOT NULL DEFAULT 0.5,
    source_id TEXT,
    source_type TEXT,
    tags TEXT NOT NULL DEFAULT '[]',
    who TEXT,
    why TEXT,
    project TEXT,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    updated_by TEXT NOT NULL DEFAULT 'api',
    last_accessed TEXT,
    access_count INTEGER NOT NULL DEFAULT 0,
    vector_clock TEXT NOT NULL DEFAULT '{}',
    version INTEGER NOT NULL DEFAULT 1,
    manual_override INTEGER NOT NULL DEFAULT 0,
    pinned INTEGER NOT NULL DEFAULT 0,
    content_hash TEXT NOT NULL,
    normalized_content TEXT NOT NULL,
    is_deleted INTEGER NOT NULL DEFAULT 0,
    deleted_at TEXT,
    extraction_status TEXT NOT NULL DEFAULT 'none',
    embedding_model TEXT,
    extraction_model TEXT,
    update_count INTEGER NOT NULL DEFAULT 0,
    agent_id TEXT NOT NULL DEFAULT 'default',
    visibility TEXT NOT NULL DEFAULT 'global'
);
CREATE UNIQUE INDEX IF NOT EXISTS idx_memories_content_hash_unique
    ON memories(content_hash) WHERE content_hash IS NOT NULL AND is_deleted = 0;
CREATE INDEX IF NOT EXISTS idx_memories_project ON memories(project, is_deleted);
CREATE INDEX IF NOT EXISTS idx_memories_created ON memories(created_at);
CREATE INDEX IF NOT EXISTS idx_memories_type ON memories(type);
CREATE INDEX IF NOT EXISTS idx_memories_deleted ON memories(is_deleted, deleted_at);
CREATE INDEX IF NOT EXISTS idx_memories_agent ON memories(agent_id, visibility);
CREATE INDEX IF NOT EXISTS idx_memories_hash ON memories(content_hash);

CREATE VIRTUAL TABLE IF NOT EXISTS memories_fts USING fts5(
    content, content='memories', content_rowid='seq', tokenize='unicode61'
);
CREATE TRIGGER IF NOT EXISTS memories_ai AFTER INSERT ON memories BEGIN
    INSERT INTO memories_fts(rowid, content) VALUES (new.seq, new.content);
END;
CREATE TRIGGER IF NOT EXISTS memories_ad AFTER DELETE ON memories BEGIN
    INSERT INTO memories_fts(memories_fts, rowid, content) VALUES ('delete', old.seq, old.content);
END;
CREATE TRIGGER IF NOT EXISTS memories_au AFTER UPDATE OF content ON memories BEGIN
    INSERT INTO memories_fts(memories_fts, rowid, content) VALUES ('delete', old.seq, old.content);
    INSERT INTO memories_fts(rowid, content) VALUES (new.seq, new.content);
END;

CREATE TABLE IF NOT EXISTS embeddings (
    id TEXT PRIMARY KEY,
    content_hash TEXT NOT NULL UNIQUE,
    vector BLOB NOT NULL,
    dimensions INTEGER NOT NULL,
    source_type TEXT NOT NULL DEFAULT 'memory',
    source_id TEXT NOT NULL,
    chunk_text TEXT NOT NULL,
    provider TEXT,
    model TEXT,
    created_at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS idx_embeddings_source ON embeddings(source_id);

CREATE TABLE IF NOT EXISTS memory_history (
    id TEXT PRIMARY KEY,
    memory_id TEXT NOT NULL,
    event TEXT NOT NULL,
    old_content TEXT,
    new_content TEXT,
    changed_by TEXT,
    reason TEXT,
    metadata TEXT,
    actor_type TEXT,
    session_id TEXT,
    request_id TEXT,
    created_at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS idx_history_memory ON memory_history(memory_id, created_at);
CREATE INDEX IF NOT EXISTS idx_history_created ON memory_history(created_at);

CREATE TABLE IF NOT EXISTS memory_jobs (
    id TEXT PRIMARY KEY,
    memory_id TEXT,
    job_type TEXT NOT NULL,
    status TEXT NOT NULL DEFAULT 'pending',
    payload TEXT,
    result TEXT,
    attempts INTEGER NOT NULL DEFAULT 0,
    max_attempts INTEGER NOT NULL DEFAULT 3,
    leased_at TEXT,
    completed_at TEXT,
    failed_at TEXT,
    error TEXT,
    document_id TEXT,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS idx_jobs_status ON memory_jobs(status, created_at);
CREATE INDEX IF NOT EXISTS idx_jobs_memory ON memory_jobs(memory_id);
CREATE INDEX IF NOT EXISTS idx_jobs_completed ON memory_jobs(completed_at) WHERE status = 'completed';
CREATE INDEX IF NOT EXISTS idx_jobs_dead ON memory_jobs(failed_at) WHERE status = 'dead';

CREATE TABLE IF NOT EXISTS entities (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    entity_type TEXT,
    description TEXT,
    canonical_name TEXT NOT NULL UNIQUE,
    mentions INTEGER NOT NULL DEFAULT 0,
    embedding BLOB,
    agent_id TEXT NOT NULL DEFAULT 'default',
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);

CREATE TABLE IF NOT EXISTS relations (
    id TEXT PRIMARY KEY,
    source_entity_id TEXT NOT NULL REFERENCES entities(id) ON DELETE CASCADE,
    target_entity_id TEXT NOT NULL REFERENCES entities(id) ON DELETE CASCADE,
    relation_type TEXT NOT NULL,
    strength REAL NOT NULL DEFAULT 1.0,
    mentions INTEGER NOT NULL DEFAULT 1,
    confidence REAL,
    metadata TEXT,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    UNIQUE(source_entity_id, target_entity_id, relation_type)
);
CREATE INDEX IF NOT EXISTS idx_relations_source ON relations(source_entity_id);
CREATE INDEX IF NOT EXISTS idx_relations_target ON relations(target_entity_id);
CREATE INDEX IF NOT EXISTS idx_relations_source_type ON relations(source_entity_id, relation_type);

CREATE TABLE IF NOT EXISTS memory_entity_mentions (
    memory_id TEXT NOT NULL,
    entity_id TEXT NOT NULL REFERENCES entities(id) ON DELETE CASCADE,
    mention_text TEXT,
    confidence REAL,
    created_at TEXT NOT NULL,
    PRIMARY KEY (memory_id, entity_id)
);
CREATE INDEX IF NOT EXISTS idx_mentions_entity ON memory_entity_mentions(entity_id);

CREATE TABLE IF NOT EXISTS conversations (
    id TEXT PRIMARY KEY,
    session_id TEXT NOT NULL,
    harness TEXT NOT NULL,
    project TEXT,
    agent_id TEXT NOT NULL DEFAULT 'default',
    started_at TEXT NOT NULL,
    ended_at TEXT,
    summary TEXT,
    topics TEXT,
    decisions TEXT,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    updated_by TEXT NOT NULL DEFAULT 'daemon',
    vector_clock TEXT NOT NULL DEFAULT '{}',
    version INTEGER NOT NULL DEFAULT 1,
    manual_override INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS idx_conversations_session ON conversations(session_id);
CREATE INDEX IF NOT EXISTS idx_conversations_harness ON conversations(harness);

CREATE TABLE IF NOT EXISTS session_transcripts (
    session_key TEXT PRIMARY KEY,
    content TEXT NOT NULL,
    harness TEXT,
    project TEXT,
    agent_id TEXT NOT NULL DEFAULT 'default',
    created_at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS idx_transcripts_project ON session_transcripts(project);
CREATE INDEX IF NOT EXISTS idx_transcripts_created ON session_transcripts(created_at);
"""

SCOPED_DEDUPE_SCHEMA = """
DROP INDEX IF EXISTS idx_memories_content_hash_unique;
CREATE UNIQUE INDEX IF NOT EXISTS idx_memories_content_hash_scope
    ON memories(content_hash, agent_id, COALESCE(project, '')) WHERE content_hash IS NOT NULL AND is_deleted = 0;
"""
"""Migration 8: identical text is one memory per agent and project, not one per store.

A global unique hash let a second agent (or a second project) that said the same thing get
the first one's memory back: nothing stored under it, a project-scoped recall of that project
blind to it, and an isolated agent learning that another agent had said exactly that. The
unique index moves from ``content_hash`` to ``(content_hash, agent_id, project)``; existing
rows stay valid (a global-unique set is scope-unique too). Vectors stay keyed by content hash,
so the same text is still embedded once."""

UNEMBEDDED_SCHEMA = """
CREATE INDEX IF NOT EXISTS idx_memories_unembedded ON memories(seq)
    WHERE embedding_model IS NULL AND is_deleted = 0;
"""
"""Migration 9: the background embedder finds new and edited memories by an index.

Its query for "memories without a vector" (a join with ``embeddings``, ordered by ``seq``)
read every memory when there were none: 400 ms at 100,000 memories, run after every batch
and every 5 s while idle. New and edited memories have ``embedding_model`` NULL until their
vector is stored, so this partial index lists exactly them (signet.embedding.service)."""

TEXT_COPIES_SCHEMA = """
UPDATE memories SET normalized_content = '' WHERE normalized_content != '';
UPDATE embeddings SET chunk_text = '' WHERE chunk_text != '';
"""
"""Migration 12: two full copies of every memory's text that nothing reads are no longer kept
(``memories.normalized_content``: only its hash, ``content_hash``, is used; ``embeddings.chunk_text``:
the text is the memory's). The columns stay (NOT NULL, spec layout) and hold ''. On real
conversation turns they were about 2/5 of the text the database kept (docs/benchmarks.md)."""

CREATED_TEXT_SCHEMA = """
UPDATE memory_history AS h SET new_content = NULL
WHERE h.event = 'created' AND h.new_content IS NOT NULL
  AND h.new_content IS COALESCE(
    (SELECT l.old_content FROM memory_history AS l
      WHERE l.memory_id = h.memory_id AND l.old_content IS NOT NULL
        AND (l.created_at, l.rowid) > (h.created_at, h.rowid)
      ORDER BY l.created_at, l.rowid LIMIT 1),
    (SELECT m.content FROM memories AS m WHERE m.id = h.memory_id));
"""
"""Migration 18: a ``created`` history event no longer keeps a copy of the memory's text
(``records.history_contents`` reads it back from the next event that recorded what it replaced,
or from the memory). Rows whose copy equals what would be read back lose it; any other row keeps
its copy, so no history text can change. On conversation turns it was a sixth of the database."""

MIGRATIONS: list[Migration] = [
    Migration(1, "core", CORE_SCHEMA),
    Migration(2, "auth_agents", AUTH_SCHEMA),
    Migration(4, "harness_hooks", HOOKS_SCHEMA),
    Migration(3, "pipeline", PIPELINE_SCHEMA),
    Migration(5, "mcp_feedback", FEEDBACK_SCHEMA),
    Migration(6, "recall_context", RECALL_SCHEMA),
    Migration(7, "recall_context_window", CONTEXT_SCHEMA_V7),
    Migration(8, "scoped_dedupe", SCOPED_DEDUPE_SCHEMA),
    Migration(9, "unembedded_index", UNEMBEDDED_SCHEMA),
    Migration(10, "keyword_change_log", KEYWORD_LOG_SCHEMA),
    Migration(11, "entities_per_agent", ENTITIES_PER_AGENT_SCHEMA, foreign_keys_off=True),
    Migration(12, "drop_text_copies", TEXT_COPIES_SCHEMA),
    Migration(13, "telemetry", TELEMETRY_SCHEMA),
    Migration(14, "repair_audit", REPAIR_AUDIT_SCHEMA),
    Migration(15, "contentless_thread_context", CONTENTLESS_SCHEMA),
    Migration(16, "documents", DOCUMENTS_SCHEMA),
    Migration(17, "secret_exec_runs", SECRETS_SCHEMA),
    Migration(18, "created_history_text", CREATED_TEXT_SCHEMA),
    Migration(19, "scheduled_tasks", TASKS_SCHEMA),
    Migration(20, "skill_meta", SKILLS_SCHEMA),
    Migration(21, "lifecycle", LIFECYCLE_SCHEMA),
    Migration(22, "signals", SIGNALS_SCHEMA),
    Migration(23, "knowledge_graph", KNOWLEDGE_SCHEMA),
    Migration(24, "consolidation", CONSOLIDATION_SCHEMA),
    Migration(25, "llm_usage", LLM_USAGE_SCHEMA),
    Migration(26, "session_continuity", CONTINUITY_SCHEMA),
    Migration(27, "umap_cache", UMAP_CACHE_SCHEMA),
    Migration(28, "live_capture", CAPTURE_SCHEMA),
    Migration(29, "task_secrets", TASK_SECRETS_SCHEMA),
    Migration(30, "attribute_supersession", SUPERSESSION_SCHEMA),
    # 31, 32 and 35 exist on PostgreSQL only (signet.store.pg_schema.PG_ONLY).
    Migration(33, "job_lease_owner", LEASE_OWNER_SCHEMA),
    Migration(34, "task_runner", TASK_RUNNER_SCHEMA),
    Migration(36, "entity_links", ENTITY_LINKS_SCHEMA, foreign_keys_off=True),
    Migration(37, "kind_aspects", KIND_ASPECTS_SCHEMA),
    Migration(38, "memory_hints", HINTS_SCHEMA),
    Migration(39, "memory_intake", INTAKE_SCHEMA),
    # 40 is the next free number on both engines.
]

BOOKKEEPING = """
CREATE TABLE IF NOT EXISTS schema_migrations (
    version INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    applied_at TEXT NOT NULL,
    checksum TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS schema_migrations_audit (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    version INTEGER NOT NULL,
    name TEXT NOT NULL,
    duration_ms REAL NOT NULL,
    applied_at TEXT NOT NULL
);
"""


class MigrationError(RuntimeError):
    pass


def split_statements(sql: str) -> list[str]:
    """Split a script into statements, keeping trigger bodies (``BEGIN … END;``) whole."""
    statements: list[str] = []
    buf = ""
    for line in sql.splitlines(keepends=True):
        buf += line
        if sqlite3.complete_statement(buf):
            if buf.strip():
                statements.append(buf.strip())
            buf = ""
    if buf.strip():
        raise MigrationError(f"incomplete SQL statement in migration: {buf.strip()[:80]!r}")
    return statements


def applied_versions(conn: Connection) -> dict[int, str]:
    rows = conn.execute("SELECT version, checksum FROM schema_migrations").fetchall()
    return {int(r[0]): str(r[1]) for r in rows}


def migrate(
    conn: Connection,
    migrations: list[Migration] | None = None,
    *,
    before: Callable[[list[Migration]], None] | None = None,
) -> list[int]:
    """Apply every migration not yet recorded; return the versions applied now.

    ``conn`` must be in autocommit mode (``isolation_level=None``): each migration runs in
    its own ``BEGIN IMMEDIATE`` transaction, so a crash mid-way leaves it unapplied.
    ``before`` is called with the pending migrations before the first is applied, only on a
    database that already had some applied (not a new one): the pre-migration backup.
    """
    todo = sorted(migrations if migrations is not None else MIGRATIONS, key=lambda m: m.version)
    versions = [m.version for m in todo]
    if len(set(versions)) != len(versions):
        raise MigrationError("two migrations share a version number")
    for stmt in split_statements(BOOKKEEPING):
        conn.execute(stmt)
    done = applied_versions(conn)
    for m in todo:
        if m.version in done and done[m.version] != m.checksum:
            raise MigrationError(
                f"migration {m.version} ({m.name}) changed after it was applied; add a new migration instead"
            )
    pending = [m for m in todo if m.version not in done]
    if before is not None and done and pending:
        before(pending)
    applied: list[int] = []
    for m in todo:
        if m.version in done:
            continue
        started = time.perf_counter()
        fk_on = bool(conn.execute("PRAGMA foreign_keys").fetchone()[0])
        if m.foreign_keys_off:
            conn.execute("PRAGMA foreign_keys = OFF")  # a no-op inside a transaction: set before BEGIN
        conn.execute("BEGIN IMMEDIATE")
        try:
            # Re-check under the write lock: another process may have applied it meanwhile.
            if conn.execute("SELECT 1 FROM schema_migrations WHERE version = ?", (m.version,)).fetchone():
                conn.execute("COMMIT")
                continue
            for stmt in split_statements(m.sql):
                conn.execute(stmt)
            if m.foreign_keys_off and (broken := conn.execute("PRAGMA foreign_key_check").fetchall()):
                raise MigrationError(f"migration {m.version} ({m.name}) broke {len(broken)} foreign keys")
            now = datetime.now(UTC).isoformat()
            conn.execute(
                "INSERT INTO schema_migrations(version, name, applied_at, checksum) VALUES (?, ?, ?, ?)",
                (m.version, m.name, now, m.checksum),
            )
            conn.execute(
                "INSERT INTO schema_migrations_audit(version, name, duration_ms, applied_at) VALUES (?, ?, ?, ?)",
                (m.version, m.name, (time.perf_counter() - started) * 1000, now),
            )
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        finally:
            if m.foreign_keys_off and fk_on:
                conn.execute("PRAGMA foreign_keys = ON")
        applied.append(m.version)
    return applied
