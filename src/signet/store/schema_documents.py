"""Migration 16: documents queued for ingest, the chunk memories made from them, and the
connectors that keep documents in step with a source (spec 001, "Document Ingest", "Connector
Framework"; signet.documents).

A document is owned like a memory (``agent_id``, ``project``, ``visibility``) and its chunks
inherit that owner. ``source_key`` identifies the source within that owner (the URL, the
resolved path, or ``text:`` and the hash of a pasted text), so adding the same source again
re-ingests the one document instead of making a second. ``document_memories`` links each chunk
memory to its document with its position and the heading path it sits under. A connector (``provider`` ``filesystem``: a folder) keeps its own
configuration and sync cursor; the documents it made carry its ``connector_id``.
"""

DOCUMENTS_SCHEMA = """
CREATE TABLE IF NOT EXISTS documents (
    id TEXT PRIMARY KEY,
    source_type TEXT NOT NULL CHECK (source_type IN ('url', 'file', 'text')),
    source_url TEXT,
    source_key TEXT NOT NULL,
    content_type TEXT,
    content_hash TEXT,
    title TEXT,
    raw_content TEXT,
    status TEXT NOT NULL DEFAULT 'queued' CHECK (status IN
        ('queued', 'extracting', 'chunking', 'embedding', 'indexing', 'done', 'failed')),
    error TEXT,
    connector_id TEXT,
    chunk_count INTEGER NOT NULL DEFAULT 0,
    memory_count INTEGER NOT NULL DEFAULT 0,
    metadata_json TEXT NOT NULL DEFAULT '{}',
    agent_id TEXT NOT NULL DEFAULT 'default',
    project TEXT,
    visibility TEXT NOT NULL DEFAULT 'global',
    created_by TEXT,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    completed_at TEXT
);
CREATE UNIQUE INDEX IF NOT EXISTS idx_documents_source
    ON documents(agent_id, COALESCE(project, ''), source_key);
CREATE INDEX IF NOT EXISTS idx_documents_status ON documents(status);
CREATE INDEX IF NOT EXISTS idx_documents_source_url ON documents(source_url);
CREATE INDEX IF NOT EXISTS idx_documents_connector ON documents(connector_id);
CREATE INDEX IF NOT EXISTS idx_documents_hash ON documents(content_hash);
CREATE INDEX IF NOT EXISTS idx_documents_created ON documents(created_at);

CREATE TABLE IF NOT EXISTS document_memories (
    document_id TEXT NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
    memory_id TEXT NOT NULL,
    chunk_index INTEGER NOT NULL,
    heading_path TEXT NOT NULL DEFAULT '[]',
    PRIMARY KEY (document_id, memory_id)
);
CREATE INDEX IF NOT EXISTS idx_document_memories_memory ON document_memories(memory_id);
CREATE INDEX IF NOT EXISTS idx_document_memories_order ON document_memories(document_id, chunk_index);

CREATE TABLE IF NOT EXISTS connectors (
    id TEXT PRIMARY KEY,
    provider TEXT NOT NULL,
    display_name TEXT NOT NULL,
    config_json TEXT NOT NULL DEFAULT '{}',
    cursor_json TEXT NOT NULL DEFAULT '{}',
    status TEXT NOT NULL DEFAULT 'idle' CHECK (status IN ('idle', 'syncing', 'error')),
    last_sync_at TEXT,
    last_error TEXT,
    last_error_at TEXT,
    agent_id TEXT NOT NULL DEFAULT 'default',
    project TEXT,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS idx_connectors_provider ON connectors(provider);
"""
