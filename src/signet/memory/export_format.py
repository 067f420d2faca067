"""The export file format (``signet export`` / ``signet import``): JSON Lines, version 1.

One JSON object per line, keys sorted, no spaces, UTF-8 (:func:`dump_line`), so two exports
of the same store are byte-identical. In order:

1. a ``header`` line: the format name and version, the store's schema version, the Signet
   version, workspace facts that do not vary between two copies of one store (the agent's
   name, the embedding model when vectors are included), what was included and how many lines
   of each kind follow (an import checks them: a cut-off file is refused before anything is
   written);
2. ``entity`` lines (by id), then ``relation`` lines (by id): the knowledge graph;
3. ``retirement`` lines: the retirement ledger (texts no write brings back, docs/lifecycle.md),
   before the memories so an import replays it first;
4. ``memory`` lines in creation order, each with the memory's columns, its history rows, its
   entity mentions and, with vectors, its embedding (base64 of little-endian float32).

Every line is validated here, by the CLI before it sends anything and by the daemon again:
strict types, bounded sizes, ids that cannot name a path. :func:`parse_line` turns any problem
into one message naming the line.
"""

from __future__ import annotations

import base64
import binascii
import json
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, model_validator

from signet.errors import InvalidRequest
from signet.models import MemoryType

FORMAT = "signet-export"
VERSION = 1

MAX_LINE_BYTES = 6 * 1024 * 1024
"""Longest line an import takes: one line must fit in one request under the daemon's 8 MiB
body limit. A memory whose history makes its line longer cannot be imported (said by line)."""
MAX_TEXT = 1_000_000
"""Longest text column (content, history texts): generous, the API itself takes 100,000."""

Id = Annotated[str, Field(min_length=1, max_length=200, pattern=r"^[A-Za-z0-9_][A-Za-z0-9_.:@+=-]*$")]
"""Ids as Signet makes them (UUIDs) and other tools' ids: never a path separator or a leading dot."""
Name = Annotated[str, Field(min_length=1, max_length=200, pattern=r"^[A-Za-z0-9_][A-Za-z0-9_.:@+ -]*$")]


def _real_time(value: str) -> str:
    try:
        datetime.fromisoformat(value)
    except ValueError:
        raise ValueError("not a real date and time") from None
    return value


Timestamp = Annotated[
    str,
    Field(max_length=40, pattern=r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,6})?(Z|\+00:00)?$"),
    AfterValidator(_real_time),
]
"""UTC ISO-8601, as Signet stores every time: string order is time order (a search by time
compares strings), so an offset other than UTC is refused, not converted (that would change
the row)."""


def _memory_type(value: str) -> str:
    if value not in _TYPES:
        raise ValueError(f"not a memory type (one of {', '.join(_TYPES)})")
    return value


_TYPES = tuple(t.value for t in MemoryType)
Text = Annotated[str, Field(max_length=MAX_TEXT)]
Short = Annotated[str, Field(max_length=1000)]
Count = Annotated[int, Field(ge=0, le=2**53)]
Unit = Annotated[float, Field(ge=0.0, le=1.0)]


class _Line(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False, frozen=True)


def _decoded(data: str, what: str) -> bytes:
    try:
        return base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        raise ValueError(f"{what} is not base64") from None


class Counts(_Line):
    entities: Count
    relations: Count
    memories: Count
    history: Count
    mentions: Count
    vectors: Count
    retirements: Count = 0


class Options(_Line):
    vectors: bool
    deleted: bool


class WorkspaceInfo(_Line):
    agent: Short | None
    embedding_model: Short | None = None


class Header(_Line):
    kind: Literal["header"]
    format: Literal["signet-export"]
    version: Annotated[int, Field(ge=1, le=VERSION)]
    schema_version: Count
    signet: Short
    workspace: WorkspaceInfo
    options: Options
    counts: Counts


class EntityLine(_Line):
    kind: Literal["entity"]
    id: Id
    name: Short
    entity_type: Short | None
    description: Text | None
    canonical_name: Short
    mentions: Count
    embedding: Annotated[str, Field(max_length=200_000)] | None
    agent_id: Name
    created_at: Timestamp
    updated_at: Timestamp

    @model_validator(mode="after")
    def _embedding_is_base64(self) -> EntityLine:
        if self.embedding is not None:
            _decoded(self.embedding, "embedding")
        return self


class RelationLine(_Line):
    kind: Literal["relation"]
    id: Id
    source_entity_id: Id
    target_entity_id: Id
    relation_type: Short
    strength: float
    mentions: Count
    confidence: float | None
    metadata: Text | None
    created_at: Timestamp
    updated_at: Timestamp


class HistoryRow(_Line):
    id: Id
    event: Short
    old_content: Text | None
    new_content: Text | None
    changed_by: Short | None
    reason: Text | None
    metadata: Text | None
    actor_type: Short | None
    session_id: Short | None
    request_id: Short | None
    created_at: Timestamp


class MentionRow(_Line):
    entity_id: Id
    mention_text: Short | None
    confidence: float | None
    created_at: Timestamp


class VectorRow(_Line):
    id: Id
    model: Short | None
    provider: Short | None
    dimensions: Annotated[int, Field(ge=1, le=16384)]
    source_id: Short
    created_at: Timestamp
    data: Annotated[str, Field(max_length=16384 * 6)]
    """base64 of ``dimensions`` little-endian float32 values."""

    @model_validator(mode="after")
    def _data_matches_dimensions(self) -> VectorRow:
        raw = _decoded(self.data, "vector data")
        if len(raw) != 4 * self.dimensions:
            raise ValueError(f"vector data holds {len(raw)} bytes, not 4 x {self.dimensions} dimensions")
        return self

    def vector_bytes(self) -> bytes:
        return base64.b64decode(self.data)


class MemoryRecord(_Line):
    """Every column of ``memories`` but ``seq`` (the store's own row order) and
    ``normalized_content`` (always '' since migration 12). ``embedding_model`` is there only
    with vectors: it describes the vector."""

    id: Id
    type: Annotated[str, Field(max_length=40), AfterValidator(_memory_type)]
    category: Short | None
    content: Annotated[str, Field(min_length=1, max_length=MAX_TEXT)]
    confidence: float | None
    importance: Unit
    source_id: Short | None
    source_type: Short | None
    tags: Annotated[list[Short], Field(max_length=1000)]
    who: Short | None
    why: Text | None
    project: Short | None
    created_at: Timestamp
    updated_at: Timestamp
    updated_by: Short
    last_accessed: Timestamp | None
    access_count: Count
    vector_clock: Text
    version: Count
    manual_override: bool
    pinned: bool
    content_hash: Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]
    is_deleted: bool
    deleted_at: Timestamp | None
    extraction_status: Short
    embedding_model: Short | None = None
    extraction_model: Short | None
    update_count: Count
    agent_id: Name
    visibility: Literal["global", "private", "archived"]
    confirmations: Count = 0
    last_reinforced_at: Timestamp | None = None


MEMORY_COLUMNS = tuple(MemoryRecord.model_fields)
"""The ``memories`` columns an export carries (a test checks none is missing)."""
BOOL_COLUMNS = ("manual_override", "pinned", "is_deleted")


class MemoryLine(_Line):
    kind: Literal["memory"]
    memory: MemoryRecord
    history: Annotated[list[HistoryRow], Field(max_length=100_000)]
    mentions: Annotated[list[MentionRow], Field(max_length=100_000)]
    vector: VectorRow | None = None


class RetirementLine(_Line):
    """One row of the retirement ledger (docs/lifecycle.md): a text no write brings back for
    this owner. ``content`` is absent when the memory was erased (hard delete)."""

    kind: Literal["retirement"]
    content_hash: Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]
    agent_id: Name
    project: Short | None
    memory_id: Id | None
    content: Annotated[str, Field(max_length=MAX_TEXT)] | None
    reason: Text | None
    retired_by: Short | None
    retired_at: Timestamp


DataLine = Annotated[EntityLine | RelationLine | RetirementLine | MemoryLine, Field(discriminator="kind")]
AnyLine = Annotated[Header | EntityLine | RelationLine | RetirementLine | MemoryLine, Field(discriminator="kind")]
_ANY: TypeAdapter[Header | EntityLine | RelationLine | RetirementLine | MemoryLine] = TypeAdapter(AnyLine)


def dump_line(obj: dict[str, Any]) -> bytes:
    """One line of the file: sorted keys, no spaces, UTF-8, newline-terminated."""
    return (json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False) + "\n").encode("utf-8")


def problem(exc: ValidationError) -> str:
    """The first problem of a line, as ``where: what``."""
    err = exc.errors()[0]
    path = list(err.get("loc", ()))
    if path and path[0] in _KINDS:  # the union's tag, not a field
        path = path[1:]
    loc = ".".join(str(p) for p in path)
    msg = str(err.get("msg", "invalid"))
    if err.get("type") == "json_invalid":
        return f"not valid JSON ({err.get('ctx', {}).get('error', msg)})"
    return f"{loc}: {msg}" if loc else msg


_KINDS = ("header", "entity", "relation", "retirement", "memory")


def parse_line(raw: bytes | str, lineno: int) -> Header | EntityLine | RelationLine | RetirementLine | MemoryLine:
    """Validate one line; :class:`InvalidRequest` naming the line when anything is wrong."""
    size = len(raw.encode("utf-8") if isinstance(raw, str) else raw)
    if size > MAX_LINE_BYTES:
        raise InvalidRequest(
            f"line {lineno}: {size / 2**20:.1f} MiB, over the {MAX_LINE_BYTES / 2**20:.0f} MiB a line may have",
            line=lineno,
        )
    try:
        return _ANY.validate_json(raw)
    except ValidationError as exc:
        raise InvalidRequest(f"line {lineno}: {problem(exc)}", line=lineno) from None


def check_header(line: Header | EntityLine | RelationLine | RetirementLine | MemoryLine) -> Header:
    """The first line must be a header this Signet reads."""
    if not isinstance(line, Header):
        raise InvalidRequest(f"line 1: expected the export's header line, found a {line.kind} line", line=1)
    return line


def sniff_header(first: bytes) -> str | None:
    """Why ``first`` is not the header of a Signet export, or None when it is one. A newer
    format version is named as such (upgrade Signet), not as an unreadable line."""
    try:
        obj = json.loads(first)
    except ValueError:
        return "the first line is not JSON: not a Signet export"
    if not isinstance(obj, dict) or obj.get("format") != FORMAT:
        return "the first line is not a Signet export header"
    version = obj.get("version")
    if isinstance(version, int) and not isinstance(version, bool) and version > VERSION:
        return f"the file is format version {version}, made by a newer Signet; this one reads version {VERSION}"
    return None
