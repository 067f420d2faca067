"""Pydantic models shared by the HTTP API, the SDK, the MCP tools and the CLI.

One place for the API's shape: the OpenAPI schema, the SDK's return types and the MCP tool
schemas are all derived from these classes.
"""

from __future__ import annotations

from datetime import UTC, datetime
from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    AliasChoices,
    AliasGenerator,
    BaseModel,
    ConfigDict,
    Field,
    field_validator,
    model_validator,
)
from pydantic.alias_generators import to_camel

MAX_CONTENT_CHARS = 100_000
MAX_QUERY_CHARS = 10_000
MAX_BATCH = 1_000
DEFAULT_EXPAND_RESULTS = 3
MAX_EXPAND_RESULTS = 10
"""Recall's ``expand``: the best results that get a transcript excerpt (default, most)."""
DEFAULT_EXPAND_WINDOW = 1
MAX_EXPAND_WINDOW = 5
"""Turns either side of an excerpt's matching turn (default, most)."""
EXCERPT_TURN_CHARS = 1_000
"""Characters of one excerpt turn: an expanded recall carries at most
``MAX_EXPAND_RESULTS x (2 x MAX_EXPAND_WINDOW + 1) x EXCERPT_TURN_CHARS`` of transcript (110,000;
3 x 3 x 1,000 by default)."""


class MemoryType(StrEnum):
    """What kind of knowledge a memory holds (spec 004, Memory Types)."""

    FACT = "fact"
    PREFERENCE = "preference"
    DECISION = "decision"
    PROCEDURAL = "procedural"
    SEMANTIC = "semantic"
    RULE = "rule"
    LEARNING = "learning"
    ISSUE = "issue"
    EPISODIC = "episodic"
    DOCUMENT_CHUNK = "document_chunk"
    """A chunk of an ingested document (signet.documents), linked to it by ``document_memories``."""


class Visibility(StrEnum):
    GLOBAL = "global"
    PRIVATE = "private"
    ARCHIVED = "archived"


def _clean_tags(tags: list[str] | None) -> list[str] | None:
    if tags is None:
        return None
    out: list[str] = []
    for tag in tags:
        t = tag.strip()
        if t and t not in out:
            out.append(t)
    return out


Tag = Annotated[str, Field(min_length=1, max_length=100)]
Tags = Annotated[list[Tag] | None, Field(max_length=50), AfterValidator(_clean_tags)]
ShortText = Annotated[str, Field(max_length=200)]
Importance = Annotated[float, Field(ge=0.0, le=1.0)]


def _snake_or_camel(name: str) -> AliasChoices:
    return AliasChoices(name, to_camel(name))


class StrictModel(BaseModel):
    """Request bodies reject unknown fields, so a typo is an error, not a silent no-op.

    The API speaks snake_case; every request field is also accepted in the camelCase the
    TypeScript Signet and its harness plugins send (``confirmToken``, ``sessionId``,
    ``agentId``). Answers are snake_case only."""

    model_config = ConfigDict(
        extra="forbid",
        str_max_length=MAX_CONTENT_CHARS,
        alias_generator=AliasGenerator(validation_alias=_snake_or_camel),
    )


_INVISIBLE = dict.fromkeys(map(ord, "\u200b\u200c\u200d\u2060\ufeff\u00ad\u180e"))
"""Zero-width and invisible format characters: text made only of them (and whitespace) says nothing."""


def _not_blank(value: str) -> str:
    if not value.translate(_INVISIBLE).strip():
        raise ValueError("must not be empty, whitespace or invisible (zero-width) characters only")
    return value


Content = Annotated[str, Field(min_length=1, max_length=MAX_CONTENT_CHARS), AfterValidator(_not_blank)]


def _to_utc(value: datetime) -> datetime:
    """Normalise to an aware UTC datetime while the input can still be refused as a 422.

    Timestamps are stored and compared as UTC ISO-8601 strings, so every accepted datetime is
    converted once. A value whose UTC equivalent falls outside ``datetime``'s range (e.g.
    ``0001-01-01T00:00+01:00`` or ``9999-12-31T23:59-01:00``) would otherwise raise
    ``OverflowError`` deep in a query and surface as a 500. A naive value is taken as UTC.
    """
    if value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    try:
        return value.astimezone(UTC)
    except OverflowError:
        raise ValueError(
            "date-time is out of range once converted to UTC (must lie between 0001-01-01 and 9999-12-31 UTC)"
        ) from None


UtcDatetime = Annotated[datetime, AfterValidator(_to_utc)]
"""Every date-time the API accepts (bodies and query strings): validated convertible to UTC."""


# --- remember -----------------------------------------------------------------------------


class RememberRequest(StrictModel):
    content: Content = Field(description="What to remember. Prefixes `critical:` and `[a,b]:` are honoured.")
    type: MemoryType | None = Field(None, description="Inferred from the content when omitted.")
    importance: Importance | None = Field(None, description="0..1; explicit saves default to 0.8.")
    tags: Tags = None
    who: ShortText | None = Field(None, description="Who or what said it (harness, person).")
    why: Annotated[str, Field(max_length=2000)] | None = None
    project: ShortText | None = None
    pinned: bool | None = None
    source_type: ShortText | None = None
    source_id: ShortText | None = None
    created_at: UtcDatetime | None = Field(None, description="Original time, for importers.")
    agent_id: ShortText | None = None
    visibility: Visibility | None = None


class RememberResponse(BaseModel):
    id: str
    deduped: bool
    type: MemoryType
    tags: list[str]
    pinned: bool
    importance: float
    content: str
    created_at: str
    embedding: Literal["pending", "ready", "unavailable"] = Field(
        description="`pending`: the vector is being computed in the background."
    )
    reinforced: str | None = Field(
        None, description="the id of the live memory this text reinforced (then `id` is that memory's id)"
    )
    confirmations: int = Field(0, description="restatements the memory has absorbed (store-time reinforcement)")
    reinforcement: Literal["off", "checked", "skipped_not_ready", "skipped_pinned", "not_checked"] = Field(
        "not_checked",
        description="whether the text was compared with the stored vectors before it was stored (docs/lifecycle.md)",
    )
    retired: bool = Field(
        False, description="the text was retired with `persist`: nothing was stored (`id` is the retired memory's)"
    )
    queued: bool = Field(
        False,
        description="accepted into the intake (committed): stored as a memory in the background, before any later "
        "request to this daemon is answered (docs/reliability.md#the-remember-intake)",
    )


class RememberBatchRequest(StrictModel):
    items: Annotated[list[RememberRequest], Field(min_length=1, max_length=MAX_BATCH)]


class RememberBatchResponse(BaseModel):
    results: list[RememberResponse]
    created: int
    deduped: int


# --- recall -------------------------------------------------------------------------------


class RecallFilters(StrictModel):
    type: MemoryType | None = None
    tags: Tags = None
    who: ShortText | None = None
    pinned: bool | None = None
    importance_min: Importance | None = None
    since: UtcDatetime | None = None
    until: UtcDatetime | None = None
    project: ShortText | None = None
    agent_id: ShortText | None = None


class RecallRequest(RecallFilters):
    query: Annotated[str, Field(max_length=MAX_QUERY_CHARS)] = Field(
        description="Any text. Quotes, operators and unicode are treated as plain words."
    )
    limit: Annotated[int, Field(ge=1, le=200)] | None = Field(
        None, description="Most results to return (default: search.default_limit, 10)."
    )
    alpha: Importance | None = Field(None, description="Vector weight (default from config).")
    min_score: Annotated[float, Field(ge=0.0, le=1.0)] | None = None
    track_access: bool = Field(True, description="Record the access (resets decay).")
    expand: bool = Field(
        False,
        description="Attach to each of the top `expand_limit` results extracted from a stored session the "
        "transcript turns it came from (`excerpt`); docs/recall.md, expand.",
    )
    expand_limit: Annotated[int, Field(ge=1, le=MAX_EXPAND_RESULTS)] = Field(
        DEFAULT_EXPAND_RESULTS, description="With `expand`: how many of the best results get an excerpt."
    )
    expand_window: Annotated[int, Field(ge=0, le=MAX_EXPAND_WINDOW)] = Field(
        DEFAULT_EXPAND_WINDOW, description="With `expand`: turns shown either side of the matching turn."
    )


class ExcerptTurn(BaseModel):
    """One transcript turn of an excerpt, its text cut to ``EXCERPT_TURN_CHARS``."""

    index: int
    role: str
    content: str
    timestamp: str | None = None
    truncated: bool = Field(False, description=f"the turn's text was cut to {EXCERPT_TURN_CHARS} characters")


class RecallExcerpt(BaseModel):
    """The turns of the session a recalled memory was extracted from, around the one that best
    matches it (signet.store.excerpts): evidence attached to a result, never a result itself."""

    session_key: str
    turn_index: int = Field(description="the turn that matched the memory best")
    turns: list[ExcerptTurn] = Field(description="that turn and up to `expand_window` turns either side, in order")
    score: float = Field(description="bm25 of the match (lower is better)")


class RecallResult(BaseModel):
    id: str
    content: str
    score: float
    source: Literal["hybrid", "fts", "vector", "graph", "hint"]
    """``graph``: reached only by walking the query's entities (docs/recall.md, knowledge graph);
    ``hint``: found only through the memory's prospective hints (docs/recall.md, hints)."""
    type: str
    tags: list[str]
    importance: float
    pinned: bool
    created_at: str
    project: str | None
    who: str | None
    source_type: str | None = None
    source_id: str | None = None
    fts_score: float | None = None
    vector_score: float | None = None
    superseded: bool = Field(
        False, description="every fact this memory states has a newer value (knowledge graph, built by an LLM)"
    )
    superseded_by: str | None = Field(
        None, description="id of the memory stating the current value, when this one's facts were superseded"
    )
    current: bool = Field(False, description="this memory states a value that superseded an older one")
    excerpt: RecallExcerpt | None = Field(
        None, description="with `expand`: the transcript turns this memory was extracted from (docs/recall.md)"
    )


class VectorSearchState(BaseModel):
    available: bool
    reason: str | None = None
    provider: str | None = None
    model: str | None = None


class GraphState(BaseModel):
    """What the knowledge graph did for a recall (docs/recall.md)."""

    mode: Literal["traversal", "graph_boost", "none"]
    focal_entities: list[str] = Field(default_factory=list)
    reached: int = 0
    degraded: str | None = Field(None, description="why graph results were dropped; flat results stand")
    took_ms: float = 0.0


class RecallResponse(BaseModel):
    query: str
    results: list[RecallResult]
    count: int
    method: Literal["hybrid", "fts"]
    vector_search: VectorSearchState
    took_ms: float
    graph: GraphState | None = Field(None, description="null when graph reads are off")


# --- records ------------------------------------------------------------------------------


class Memory(BaseModel):
    id: str
    content: str
    type: str
    importance: float
    effective_importance: float = Field(description="importance after decay (pinned never decays)")
    tags: list[str]
    who: str | None
    why: str | None
    project: str | None
    pinned: bool
    source_type: str | None
    source_id: str | None
    confidence: float | None
    created_at: str
    updated_at: str
    updated_by: str | None
    last_accessed: str | None
    access_count: int
    version: int
    is_deleted: bool
    deleted_at: str | None
    content_hash: str
    embedding_model: str | None
    extraction_status: str | None
    agent_id: str
    visibility: str
    confirmations: int = 0
    last_reinforced_at: str | None = None


class MemoryList(BaseModel):
    items: list[Memory]
    total: int
    limit: int
    offset: int


class HistoryEvent(BaseModel):
    id: str
    memory_id: str
    event: str
    old_content: str | None
    new_content: str | None
    changed_by: str | None
    reason: str | None
    metadata: dict[str, Any] | None
    actor_type: str | None
    created_at: str


class HistoryResponse(BaseModel):
    memory_id: str
    events: list[HistoryEvent]


class MemoryHint(BaseModel):
    hint: str = Field(description="a question the memory would answer")
    source: Literal["template", "llm"] = Field(description="who wrote it: the template at remember time, or the LLM")
    created_at: str


class HintsResponse(BaseModel):
    """A memory's prospective hints (docs/recall.md, hints)."""

    memory_id: str
    enabled: bool = Field(description="memory.pipelineV2.hints.enabled: whether hints are written and matched now")
    hints: list[MemoryHint]


# --- modify -------------------------------------------------------------------------------

Reason = Annotated[str, Field(min_length=1, max_length=2000), AfterValidator(_not_blank)]


class MemoryPatchFields(StrictModel):
    content: Content | None = None
    type: MemoryType | None = None
    importance: Importance | None = None
    tags: Tags = None
    pinned: bool | None = None
    who: ShortText | None = None
    why: Annotated[str, Field(max_length=2000)] | None = None
    project: ShortText | None = None


class ModifyPatch(MemoryPatchFields):
    id: Annotated[str, Field(min_length=1, max_length=200)]
    reason: Reason | None = None
    if_version: Annotated[int, Field(ge=1)] | None = None


class ModifyRequest(StrictModel):
    patches: Annotated[list[ModifyPatch], Field(min_length=1, max_length=100)]
    reason: Reason | None = Field(None, description="Default reason for patches that carry none.")
    changed_by: ShortText | None = None


class PatchMemoryRequest(MemoryPatchFields):
    reason: Reason
    if_version: Annotated[int, Field(ge=1)] | None = None
    changed_by: ShortText | None = None


ModifyStatus = Literal["updated", "unchanged", "not_found", "forbidden", "version_conflict", "duplicate", "deleted"]


class ModifyResult(BaseModel):
    id: str
    status: ModifyStatus
    current_version: int | None = None
    new_version: int | None = None
    content_changed: bool = False
    embedded: bool = False
    duplicate_memory_id: str | None = None
    error: str | None = None


class ModifyResponse(BaseModel):
    results: list[ModifyResult]
    updated: int


# --- forget / recover ---------------------------------------------------------------------


class ForgetRequest(StrictModel):
    mode: Literal["preview", "execute"] = "preview"
    ids: Annotated[list[Annotated[str, Field(min_length=1, max_length=200)]], Field(max_length=MAX_BATCH)] | None = None
    query: Annotated[str, Field(max_length=MAX_QUERY_CHARS)] | None = None
    type: MemoryType | None = None
    tags: Tags = None
    who: ShortText | None = None
    source_type: ShortText | None = None
    project: ShortText | None = None
    since: UtcDatetime | None = None
    until: UtcDatetime | None = None
    limit: Annotated[int, Field(ge=1, le=MAX_BATCH)] = 100
    reason: Reason | None = None
    force: bool = Field(False, description="Hard delete instead of a recoverable soft delete.")
    persist: bool = Field(
        False,
        description="Retire for good: record the text in the retirement ledger so no later write (a re-ingest,"
        " an import, a remember) brings it back (docs/lifecycle.md).",
    )
    confirm_token: Annotated[str, Field(max_length=200)] | None = None
    changed_by: ShortText | None = None

    @field_validator("query")
    @classmethod
    def _query_not_blank(cls, v: str | None) -> str | None:
        return v if v is None or v.strip() else None


class ForgetCandidate(BaseModel):
    id: str
    content: str
    type: str
    created_at: str
    pinned: bool
    version: int


class ForgetResponse(BaseModel):
    mode: Literal["preview", "execute"]
    count: int
    candidates: list[ForgetCandidate]
    confirm_token: str
    requires_confirm: bool
    deleted: list[str] = Field(default_factory=list)
    hard_deleted: bool = False
    retired: list[str] = Field(default_factory=list, description="ids whose text entered the retirement ledger")


class SplitRequest(StrictModel):
    event_id: Annotated[str, Field(min_length=1, max_length=200)] = Field(
        description="the `reinforced` history event whose wording becomes a memory of its own"
    )
    reason: Reason
    changed_by: ShortText | None = None


class SplitResponse(BaseModel):
    id: str = Field(description="the memory that was reinforced")
    new_id: str = Field(description="the memory the wording became")
    confirmations: int = Field(description="the reinforced memory's confirmations after the split")
    content: str


class UnretireRequest(StrictModel):
    reason: Reason
    changed_by: ShortText | None = None


class UnretireResponse(BaseModel):
    id: str
    status: Literal["unretired"]
    entries: int = Field(description="ledger rows dropped")


class Retirement(BaseModel):
    content_hash: str
    agent_id: str
    project: str | None
    memory_id: str | None
    content: str | None
    reason: str | None
    retired_by: str | None
    retired_at: str


class RetirementList(BaseModel):
    items: list[Retirement]
    total: int


class Signal(BaseModel):
    id: str
    seq: int = Field(description="the memory's position in the store: the consumer's watermark")
    content: str
    type: str
    importance: float
    project: str | None
    agent_id: str
    created_at: str


class SignalsResponse(BaseModel):
    consumer: str
    signals: list[Signal]
    cursor: int = Field(description="acknowledge with this to advance the consumer's watermark past these signals")
    watermark: int | None = Field(description="the consumer's watermark before this call (null: a new consumer)")


class SignalAckRequest(StrictModel):
    consumer: Annotated[str, Field(min_length=1, max_length=400)]
    cursor: Annotated[int, Field(ge=0, le=2**62)]


class SignalAckResponse(BaseModel):
    consumer: str
    watermark: int


class RecoverRequest(StrictModel):
    reason: Reason
    if_version: Annotated[int, Field(ge=1)] | None = None
    changed_by: ShortText | None = None


class RecoverResponse(BaseModel):
    id: str
    status: Literal["recovered"]
    current_version: int
    new_version: int


class DeleteResponse(BaseModel):
    id: str
    status: Literal["deleted"]
    hard_deleted: bool
    new_version: int | None


# --- status -------------------------------------------------------------------------------


class HealthResponse(BaseModel):
    """Public: says no more than ok, degraded or starting (version, pid and uptime are in
    /api/status)."""

    status: Literal["ok", "degraded", "starting"]
    """``starting``: the daemon listens but its app and runtime are still being built (about a
    second or two; minutes while it backs up and migrates an older database). Any other request
    sent meanwhile waits and is then served (signet.daemon.boot). ``ok`` or ``degraded``: it
    serves."""
    proof: str | None = None
    """``HMAC-SHA256(secret, challenge)`` when ``?challenge=`` is given: only the daemon that
    wrote this workspace's ``.daemon/daemon.json`` can compute it (signet.instance)."""
    reasons: list[str] | None = None
    """Why it is degraded; in local mode only (team mode shows them in /api/status)."""


class EmbeddingStatus(BaseModel):
    provider: str
    model: str
    backend: str | None = Field(
        None, description="the local model's runtime once loaded: onnx or torch (null for remote providers)"
    )
    dimensions: int | None
    state: Literal["loading", "ready", "unavailable", "disabled"]
    error: str | None
    embedded: int
    total: int
    coverage: float
    pending: int
    stale_model: int = Field(description="memories embedded with a model other than the configured one")


class KeywordIndexState(BaseModel):
    """The in-memory mirror of the keyword index (``search.keyword_index``); while it is not
    ``ready`` recall's keyword leg asks FTS5 itself: same results, slower at scale."""

    state: Literal["ready", "building", "drifted", "stopped", "off"]
    rows: int = 0
    postings: int = 0
    bytes: int = 0
    answered: int = 0
    """keyword searches it answered since the daemon started"""
    fallbacks: int = 0
    """keyword searches handed to FTS5 (not ready, behind a burst, drifted, or a phrase such as ``foo_bar``)"""
    error: str | None = None


class StorageStatus(BaseModel):
    """The database file against what it must hold (signet.store.space)."""

    file_bytes: int
    free_bytes: int = Field(description="pages freed by deletes, not yet given back to the file system")
    text_bytes: int = Field(description="the memories' text (UTF-8), deleted ones included until purged")
    vector_bytes: int = Field(
        description="the vectors at the model's precision (4 bytes a value; the store keeps 2, signet.store.vector_blob)"
    )
    amplification: float | None = Field(description="file_bytes / (text_bytes + vector_bytes); null when empty")
    auto_vacuum: str = Field(description="incremental: purged space goes back; none: run signet repair --vacuum")


class StorePool(BaseModel):
    """The store's reader connections (PostgreSQL: psycopg_pool; SQLite: its reader pool)."""

    max: int = Field(description="connections at most (storage.poolSize on PostgreSQL)")
    open: int
    in_use: int
    waiting: int = Field(description="reads waiting for a connection now")


class StoreStatus(BaseModel):
    """Which store the daemon runs on (docs/team.md). Never holds a password."""

    backend: Literal["sqlite", "postgres"]
    location: str = Field(description="the SQLite file, or host:port/database of the PostgreSQL server")
    user: str | None = Field(None, description="the PostgreSQL user (null on SQLite)")
    pool: StorePool


class LlmStatus(BaseModel):
    """The pipeline's LLM (docs/pipeline.md): which provider, whether its jobs run, and why not."""

    provider: str = Field(description="claude-code, codex, opencode, ollama, openai, anthropic, none, or a plugin's")
    model: str | None = None
    state: Literal["running", "waiting", "backoff", "disabled"]
    reason: str | None = Field(None, description="why jobs do not run now, and how to make them (null: they run)")
    waiting_for: Literal["waiting_for_provider", "waiting_for_budget"] | None = None
    waiting_jobs: int = Field(0, description="jobs waiting for a provider or a budget (never counted as failures)")
    dead_jobs: int = 0
    budget: dict[str, Any] | None = Field(None, description="use against the provider's limits, when it has any")


class CaptureStatus(BaseModel):
    """Live transcript capture (docs/harnesses.md#live-capture)."""

    harnesses: list[str] = Field(description="harnesses followed (`capture.harnesses`; empty: off)")
    running: bool
    files: int = Field(description="session files with a cursor in the database")
    turns: int = Field(description="turns stored by capture in all")
    refused: int = Field(description="files refused since the daemon started (outside their root, not regular)")
    errors: int = Field(description="passes the database refused since the daemon started")
    last_scan_at: str | None


class IntakeStatus(BaseModel):
    """The remember intake (signet.memory.intake): accepted remembers not yet stored as memories."""

    state: Literal["on", "off"]
    pending: int = 0
    """accepted and committed, not yet stored as memories"""
    oldest_pending_s: float = 0.0
    accepted: int = 0
    """queued since the daemon started"""
    stored: int = 0
    """rows stored as memories since the daemon started (a row deduped at storing included)"""
    merged: int = 0
    """rows whose text another write stored first: the accepted id was not used (docs/reliability.md)"""
    failed: int = 0
    """rows that could not be stored, kept in ``memory_intake_failed`` with their error"""


class StatusResponse(BaseModel):
    status: Literal["ok", "degraded"]
    version: str
    pid: int
    uptime_s: float
    workspace: str
    database: str
    memories: dict[str, int]
    embedding: EmbeddingStatus
    vector_search: VectorSearchState
    keyword_index: KeywordIndexState
    storage: StorageStatus | None = None
    store: StoreStatus | None = None
    llm: LlmStatus | None = None
    capture: CaptureStatus | None = None
    intake: IntakeStatus | None = None
    warnings: list[str]


class EmbeddingRecord(BaseModel):
    memory_id: str
    content_hash: str
    model: str | None
    dimensions: int
    content: str
    vector: list[float] | None = None


class EmbeddingExport(BaseModel):
    items: list[EmbeddingRecord]
    total: int
    limit: int
    offset: int


class ErrorResponse(BaseModel):
    error: str
    code: str


class ListQuery(BaseModel):
    """The query parameters of ``GET /api/memories``, declared once: the route reads them with
    this model, the SDK builds its call with it, the MCP ``memory_list`` tool copies its fields.
    Unknown parameters are a 422 (a misspelled filter must not widen the list)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    limit: int = Field(50, ge=1, le=200)
    offset: int = Field(0, ge=0, le=10_000_000)
    type: MemoryType | None = None
    project: str | None = Field(None, max_length=200)
    who: str | None = Field(None, max_length=200)
    tags: list[Annotated[str, Field(max_length=100)]] | None = Field(
        None, max_length=20, alias="tag", description="All must match (repeat `tag` in the query)."
    )
    pinned: bool | None = None
    since: UtcDatetime | None = None
    until: UtcDatetime | None = None
    include_deleted: bool = False
    count: bool = Field(
        True,
        description="Count the matches into `total`. `false` skips the count (its cost grows with the store; "
        "the dashboard's first page does not wait for it) and answers `total: -1`.",
    )


# --- documents ----------------------------------------------------------------------------

DocumentStatus = Literal["queued", "extracting", "chunking", "embedding", "indexing", "done", "failed"]
DocumentKind = Literal["markdown", "text", "html"]
MAX_DOCUMENT_CHARS = 5_000_000
"""Longest raw content ``POST /api/documents`` takes (the body limit, 8 MiB, also applies)."""


class DocumentAddRequest(StrictModel):
    """Exactly one source: ``url``, ``content`` (with a ``title``), or ``path`` (local callers only)."""

    # The rule "exactly one source" is a validator, not a schema keyword: the example shows a
    # valid body (schema-driven clients and tests start from it).
    model_config = ConfigDict(
        **StrictModel.model_config,
        json_schema_extra={"examples": [{"content": "# Runbook\n\nDeploys go out on Thursdays.", "title": "Runbook"}]},
    )

    url: Annotated[str, Field(min_length=1, max_length=4096)] | None = Field(
        None, description="An http(s) URL to fetch (HTML, PDF, markdown or text)."
    )
    content: Annotated[str, Field(min_length=1, max_length=MAX_DOCUMENT_CHARS), AfterValidator(_not_blank)] | None = (
        Field(None, description="The document's text; adding the same title again replaces it.")
    )
    title: Annotated[str, Field(min_length=1, max_length=500), AfterValidator(_not_blank)] | None = Field(
        None, description="Required with `content`; with a URL or path it replaces the extracted title."
    )
    content_type: DocumentKind | None = Field(
        None, description="How to read `content`: markdown (default when it has headings), text or html."
    )
    path: Annotated[str, Field(min_length=1, max_length=4096)] | None = Field(
        None, description="An absolute path of a file under `documents.allowed_paths` (local callers only)."
    )
    project: ShortText | None = None
    agent_id: ShortText | None = None
    visibility: Visibility | None = None

    @model_validator(mode="after")
    def _one_source(self) -> DocumentAddRequest:
        given = [n for n in ("url", "content", "path") if getattr(self, n) is not None]
        if len(given) != 1:
            raise ValueError("give exactly one of url, content or path")
        if self.content is not None and self.title is None:
            raise ValueError("content needs a title")
        if self.content_type is not None and self.content is None:
            raise ValueError("content_type applies to content only (URLs and files are read by their type)")
        return self


class Document(BaseModel):
    id: str
    source_type: Literal["url", "file", "text"]
    source_url: str | None = Field(description="The URL or the file's real path; None for pasted content.")
    title: str | None
    content_type: str | None
    content_hash: str | None = Field(description="SHA-256 of the extracted text, once extracted.")
    status: DocumentStatus
    error: str | None
    chunk_count: int
    memory_count: int
    agent_id: str
    project: str | None
    visibility: str
    created_at: str
    updated_at: str
    completed_at: str | None


class DocumentQueued(BaseModel):
    document: Document
    created: bool = Field(description="False when the source was already a document: it is ingested again.")
    job_id: str | None


class DocumentList(BaseModel):
    items: list[Document]
    total: int
    limit: int
    offset: int


class DocumentChunk(BaseModel):
    index: int
    memory_id: str
    heading_path: list[str]
    content: str
    deleted: bool = Field(description="The chunk's memory was forgotten since.")


class DocumentChunks(BaseModel):
    document_id: str
    title: str | None
    chunks: list[DocumentChunk]
    count: int


class DocumentDeleted(BaseModel):
    id: str
    status: Literal["deleted"]
    memories_deleted: int


# --- connectors ---------------------------------------------------------------------------

ConnectorStatus = Literal["idle", "syncing", "error"]
Glob = Annotated[str, Field(min_length=1, max_length=500)]


class FilesystemConfig(StrictModel):
    """A folder whose markdown and text files are kept as documents."""

    root: Annotated[str, Field(min_length=1, max_length=4096)] = Field(
        description="An absolute folder under `documents.allowed_paths`."
    )
    include: Annotated[list[Glob], Field(max_length=100)] = Field(
        default_factory=lambda: ["**/*.md", "**/*.markdown", "**/*.txt"],
        description="gitignore-style globs, relative to the root, of the files to keep.",
    )
    exclude: Annotated[list[Glob], Field(max_length=100)] = Field(default_factory=list)
    gitignore: bool = Field(True, description="Skip what the root's .gitignore files ignore.")
    watch: bool = Field(True, description="Sync on every change while the daemon runs.")


class ConnectorCreateRequest(StrictModel):
    provider: Annotated[str, Field(min_length=1, max_length=100, pattern=r"^[A-Za-z0-9_.-]+$")] = Field(
        "filesystem", description="A registered connector (plugins add more): `filesystem` is built in."
    )
    name: Annotated[str, Field(min_length=1, max_length=200)] | None = Field(
        None, description="Defaults to the root folder's name."
    )
    config: dict[str, Any] = Field(
        description="The provider's settings; for `filesystem`: `root`, `include`, `exclude`, `gitignore`, `watch` "
        "(see FilesystemConfig)."
    )
    project: ShortText | None = None
    agent_id: ShortText | None = None


class Connector(BaseModel):
    id: str
    provider: str
    name: str
    config: dict[str, Any]
    status: ConnectorStatus
    last_sync_at: str | None
    last_error: str | None
    last_error_at: str | None
    agent_id: str
    project: str | None
    documents: int
    created_at: str
    updated_at: str


class ConnectorList(BaseModel):
    items: list[Connector]
    total: int


class SyncResult(BaseModel):
    connector_id: str
    full: bool
    scanned: int
    queued: int = Field(description="New or changed files queued as documents.")
    unchanged: int
    deleted: int = Field(description="Documents removed with their chunks: their files are gone.")
    skipped: int
    skipped_examples: list[str]
    took_ms: float


class ConnectorHealth(BaseModel):
    id: str
    status: ConnectorStatus
    healthy: bool
    last_sync_at: str | None
    last_error: str | None
    last_error_at: str | None
    documents: dict[str, int] = Field(description="Documents by status, and `total`.")
    files: int = Field(description="Files in the sync cursor.")
    watching: bool


class ConnectorDeleted(BaseModel):
    id: str
    status: Literal["deleted"]
    documents_deleted: int
    memories_deleted: int
