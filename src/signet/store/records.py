"""Rows -> API models, and the small SQL helpers every write shares."""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from signet.models import Memory
from signet.store.decay import effective_importance
from signet.store.sqlite import Connection


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="microseconds")


def to_iso(dt: datetime) -> str:
    """Timestamps are stored as UTC ISO-8601 so string comparison is time comparison."""
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    return dt.astimezone(UTC).isoformat(timespec="microseconds")


def load_tags(raw: str | None) -> list[str]:
    if not raw:
        return []
    try:
        val = json.loads(raw)
    except ValueError:
        return []
    return [str(t) for t in val] if isinstance(val, list) else []


def memory_from_row(row: Any, decay_rate: float) -> Memory:
    return Memory(
        id=row["id"],
        content=row["content"],
        type=row["type"],
        importance=float(row["importance"]),
        effective_importance=effective_importance(
            float(row["importance"]), bool(row["pinned"]), row["last_accessed"] or row["created_at"], decay_rate
        ),
        tags=load_tags(row["tags"]),
        who=row["who"],
        why=row["why"],
        project=row["project"],
        pinned=bool(row["pinned"]),
        source_type=row["source_type"],
        source_id=row["source_id"],
        confidence=row["confidence"],
        created_at=row["created_at"],
        updated_at=row["updated_at"],
        updated_by=row["updated_by"],
        last_accessed=row["last_accessed"],
        access_count=int(row["access_count"] or 0),
        version=int(row["version"]),
        is_deleted=bool(row["is_deleted"]),
        deleted_at=row["deleted_at"],
        content_hash=row["content_hash"],
        embedding_model=row["embedding_model"],
        extraction_status=row["extraction_status"],
        agent_id=row["agent_id"],
        visibility=row["visibility"],
        confirmations=int(row["confirmations"] or 0),
        last_reinforced_at=row["last_reinforced_at"],
    )


def record_history(
    conn: Connection,
    memory_id: str,
    event: str,
    *,
    old_content: str | None,
    new_content: str | None,
    changed_by: str,
    reason: str | None,
    metadata: dict[str, Any] | None = None,
    actor_type: str | None = None,
    session_id: str | None = None,
    request_id: str | None = None,
) -> str:
    hid = str(uuid.uuid4())
    conn.execute(
        "INSERT INTO memory_history(id, memory_id, event, old_content, new_content, changed_by, reason, metadata,"
        " actor_type, session_id, request_id, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            hid,
            memory_id,
            event,
            old_content,
            new_content,
            changed_by,
            reason,
            json.dumps(metadata, sort_keys=True) if metadata is not None else None,
            actor_type,
            session_id,
            request_id,
            now_iso(),
        ),
    )
    return hid


def history_contents(events: Sequence[Any], current: str | None) -> list[str | None]:
    """Each event's ``new_content``, in the events' order (``created_at``, then ``rowid``).

    A ``created`` event stores no copy of the text (it was a sixth of a store of conversation
    turns): the text a memory was created with is the ``old_content`` of the first later event
    that carries one (every change of content, every delete records what it replaced), or else
    the memory's current content. Rows written before that change keep their copy.
    """
    out: list[str | None] = [None] * len(events)
    later = current
    for i in range(len(events) - 1, -1, -1):
        e = events[i]
        stored = e["new_content"]
        out[i] = later if stored is None and e["event"] == "created" else stored
        if e["old_content"] is not None:
            later = e["old_content"]
    return out
