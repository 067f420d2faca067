"""SDK operations on documents and connectors (``/api/documents*``, ``/api/connectors*``).

Requests are validated against the daemon's own models first, so a body the daemon would
refuse (two sources, a blank title) fails here with the same message, before any I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from signet.models import (
    Connector,
    ConnectorCreateRequest,
    ConnectorDeleted,
    ConnectorHealth,
    ConnectorList,
    Document,
    DocumentAddRequest,
    DocumentChunks,
    DocumentDeleted,
    DocumentList,
    DocumentQueued,
    DocumentStatus,
    SyncResult,
)
from signet.sdk._core import Call, body, parser, query, segment
from signet.sdk._ops import _model

# --- documents --------------------------------------------------------------------------------


def add_document(req: DocumentAddRequest | Mapping[str, Any] | None = None, **fields: Any) -> Call[DocumentQueued]:
    """Queue a document: ``url=…``, ``content=…`` with ``title=…``, or (local callers) ``path=…``.
    Returns at once; poll :func:`get_document` until its ``status`` is ``done`` or ``failed``."""
    model = _model(DocumentAddRequest, req or {}, "", fields)
    return Call("POST", "/api/documents", parser(DocumentQueued), json=body(model))


def list_documents(
    *, status: DocumentStatus | None = None, project: str | None = None, limit: int = 50, offset: int = 0
) -> Call[DocumentList]:
    """Documents, newest first, filtered by status or project."""
    params = query(status=status, project=project, limit=limit, offset=offset)
    return Call("GET", "/api/documents", parser(DocumentList), params=params)


def get_document(document_id: str) -> Call[Document]:
    """One document (a unique id prefix will do): status, error, title and counts."""
    return Call("GET", f"/api/documents/{segment(document_id, 'document id')}", parser(Document))


def document_chunks(document_id: str) -> Call[DocumentChunks]:
    """The document's chunks in order, each with its memory id and heading path."""
    return Call("GET", f"/api/documents/{segment(document_id, 'document id')}/chunks", parser(DocumentChunks))


def delete_document(document_id: str) -> Call[DocumentDeleted]:
    """Delete a document and the chunk memories no other document holds (a hard delete)."""
    return Call("DELETE", f"/api/documents/{segment(document_id, 'document id')}", parser(DocumentDeleted))


# --- connectors -------------------------------------------------------------------------------


def create_connector(req: ConnectorCreateRequest | Mapping[str, Any] | None = None, **fields: Any) -> Call[Connector]:
    """Register a folder (``config={"root": …}``; local admin callers only); nothing is read
    until the first :func:`sync_connector`."""
    model = _model(ConnectorCreateRequest, req or {}, "", fields)
    return Call("POST", "/api/connectors", parser(Connector), json=body(model))


def list_connectors() -> Call[ConnectorList]:
    """Every connector with its status, last sync, last error and document count."""
    return Call("GET", "/api/connectors", parser(ConnectorList))


def get_connector(connector_id: str) -> Call[Connector]:
    """One connector (a unique id prefix will do)."""
    return Call("GET", f"/api/connectors/{segment(connector_id, 'connector id')}", parser(Connector))


def connector_health(connector_id: str) -> Call[ConnectorHealth]:
    """Status, last error, documents by status, files tracked, whether it is watched."""
    return Call("GET", f"/api/connectors/{segment(connector_id, 'connector id')}/health", parser(ConnectorHealth))


def sync_connector(connector_id: str, *, full: bool = False) -> Call[SyncResult]:
    """Sync now: new and changed files queued, documents of deleted files removed; ``full``
    queues every file again. Conflict (409) while a sync of it runs."""
    tail = "/sync/full" if full else "/sync"
    return Call("POST", f"/api/connectors/{segment(connector_id, 'connector id')}{tail}", parser(SyncResult))


def delete_connector(connector_id: str) -> Call[ConnectorDeleted]:
    """Delete a connector, its documents, and the chunk memories only they held."""
    return Call("DELETE", f"/api/connectors/{segment(connector_id, 'connector id')}", parser(ConnectorDeleted))
