"""agent.yaml -> typed settings.

The defaults live here and only here (the spec's defaults). Keys keep the spelling of the
spec's manifest (``pipelineV2``, ``shadowMode``…); snake_case spellings are accepted too.
An invalid file raises :class:`~signet.errors.ConfigError` naming the dotted key at fault.
Unknown top-level keys are kept (other tools write to the same manifest) but never interpreted;
an unknown key inside a section Signet owns is an error (see :class:`Section`). Keys the
spec's TypeScript Signet writes into those sections are listed one by one in each section's
``legacy_keys`` (accepted and dropped) or translated (``graphEnabled``, ``*RetentionMs``).
"""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Any, ClassVar, Literal, get_args

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from signet import plugins
from signet.errors import ConfigError


class Section(BaseModel):
    """A section Signet owns: an unknown key in it is an error, never silently ignored (a typo
    such as ``auth: {mdoe: team}`` would otherwise leave the daemon open in local mode)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, validate_assignment=True)

    legacy_keys: ClassVar[frozenset[str]] = frozenset()
    """Keys the spec's TypeScript Signet writes in this section that this implementation does
    not read: accepted and dropped, so its agent.yaml still loads. Listed key by key, never a
    blanket allow: anything else unknown stays an error."""

    @model_validator(mode="before")
    @classmethod
    def _drop_legacy_keys(cls, data: Any) -> Any:
        if isinstance(data, dict) and cls.legacy_keys:
            return {k: v for k, v in data.items() if k not in cls.legacy_keys}
        return data


class AgentInfo(Section):
    name: str = "signet"
    description: str | None = None
    created: str | None = None
    updated: str | None = None


class EmbeddingSettings(Section):
    """Which embedder turns text into vectors. ``local`` is the bundled offline model."""

    provider: str = Field("local", description="local, ollama, openai, none, or a plugin's name")

    @field_validator("provider")
    @classmethod
    def _registered(cls, name: str) -> str:
        return plugins.check_provider("embedding", name)  # a plugin's embedder is as valid as a built-in

    model: str = Field(
        "all-MiniLM-L6-v2-int8",
        description="for local: all-MiniLM-L6-v2-int8 (default install), all-MiniLM-L6-v2 (the torch extra) "
        "or a sentence-transformers directory",
    )
    dimensions: int | None = Field(None, gt=0, le=16384)
    base_url: str | None = None
    api_key: str | None = None
    timeout: float = Field(30.0, gt=0, le=600)
    query_cooldown: float = Field(
        30.0,
        ge=0,
        le=3600,
        description="seconds recall skips query embedding after one failed (0: retry on every recall)",
    )
    batch_size: int = Field(32, ge=1, le=1024)
    threads: int = Field(1, ge=0, le=256, description="CPU threads of the local model (0: the runtime's default)")
    backend: Literal["auto", "onnx", "torch"] = Field(
        "auto",
        description="local model runtime: onnx (ONNX Runtime export of the bundled model), torch, or auto",
    )

    @model_validator(mode="after")
    def _int8_runs_on_onnx(self) -> EmbeddingSettings:
        # Said at load, in one line, instead of a daemon whose embedder is "unavailable".
        if self.provider == "local" and self.model == "all-MiniLM-L6-v2-int8" and self.backend == "torch":
            raise ValueError(
                "embedding.model 'all-MiniLM-L6-v2-int8' runs on ONNX Runtime only: set embedding.backend "
                "to auto or onnx, or embedding.model to all-MiniLM-L6-v2 (the torch extra) for torch"
            )
        return self


class ScoringSettings(Section):
    """Recall's life stage (signet.search.lifescore): each weight blends its factor in,
    ``(1 - w) + w · x``; 0 switches the factor off."""

    enabled: bool = Field(True, description="multiply fused scores by each memory's life factors")
    recency_weight: float = Field(
        0.0, ge=0.0, le=1.0, description="weight of recency by expiry-class half-life, any query (LoCoMo loses above 0)"
    )
    now_recency_weight: float = Field(
        0.7, ge=0.0, le=1.0, description="weight of recency when the query asks about now (now, currently, still...)"
    )
    permanent_half_life_days: float = Field(365.0, gt=0, description="half-life of most memories")
    temporary_half_life_days: float = Field(30.0, gt=0, description="half-life of episodic and issue memories")
    strength_weight: float = Field(0.2, ge=0.0, le=1.0, description="weight of max(importance, use by recall)")
    freshness: bool = Field(True, description="x1.5 within the hour, x1.25 within 6 h, x1.1 within a day")
    supersede_weight: float = Field(
        0.5, ge=0.0, le=1.0, description="penalty of a candidate restated by a newer similar candidate"
    )
    supersede_similarity: float = Field(
        0.7, ge=0.0, le=1.0, description="cosine at which two candidates state the same thing"
    )
    currentness: Literal["always", "asked", "off"] = Field(
        "asked",
        description="when a restated candidate is demoted: always, only when the query asks about now "
        "(now, currently, still, latest...), or never",
    )
    window: int = Field(20, ge=2, le=200, description="best-matching candidates compared for currentness")


class DampeningSettings(Section):
    """Post-fusion dampening (signet.search.dampening, spec 001): each stage on its own switch."""

    gravity: bool = Field(False, description="x gravity_factor for a vector-found memory sharing no query word")
    gravity_factor: float = Field(0.5, ge=0.0, le=1.0, description="gravity's multiplier")
    gravity_min_cosine: float = Field(0.3, ge=0.0, le=1.0, description="cosine from which gravity applies")
    hub: bool = Field(False, description="x hub_factor for a memory linked only to hub entities")
    hub_factor: float = Field(0.7, ge=0.0, le=1.0, description="hub's multiplier")
    hub_percentile: float = Field(
        0.9, ge=0.0, le=1.0, description="an entity mentioned more than this share of its agent's entities is a hub"
    )
    resolution: bool = Field(False, description="x resolution_factor for decisions, rules and dated memories")
    resolution_factor: float = Field(1.2, ge=1.0, le=2.0, description="resolution's multiplier")


class SearchSettings(Section):
    alpha: float = Field(0.7, ge=0.0, le=1.0, description="vector weight; 1 - alpha goes to BM25")
    top_k: int = Field(50, ge=1, le=1000, description="candidates taken from each leg before fusion")
    min_score: float = Field(0.1, ge=0.0, le=1.0)
    default_limit: int = Field(10, ge=1, le=200)
    vector_threads: int = Field(
        1,
        ge=0,
        le=256,
        description="BLAS threads for the vector leg's matrix product (0: numpy's default, often one per core)",
    )
    keyword_index: bool = Field(
        True,
        description="keep an in-memory copy of the keyword index for recall's keyword leg (faster at scale; "
        "about 20 bytes per indexed word occurrence); off: FTS5 answers every query",
    )
    vector_lists_min_rows: int = Field(
        100_000,  # signet.search.vectors.LISTS_MIN_ROWS
        ge=0,
        description="from this many vectors on, the vector leg reads inverted lists (the cells near the query, "
        "approximate) instead of every row's coarse projection; 0: never (applies at the next start)",
    )
    scoring: ScoringSettings = Field(default_factory=ScoringSettings)
    dampening: DampeningSettings = Field(default_factory=DampeningSettings)


HARNESS_CLIS = {"claude-code": "claude", "codex": "codex", "opencode": "opencode"}
"""The LLM providers that run a harness CLI, and the executable each runs (signet.pipeline.llm.cli)."""


class ExtractionSettings(Section):
    """The LLM the pipeline calls. ``none`` (the default) runs no LLM: jobs wait, visibly, until
    one is set; a change here is picked up by a running daemon (docs/pipeline.md)."""

    provider: str = Field(
        "none",
        description="claude-code, codex, opencode, ollama, openai, anthropic, none (jobs wait), or a plugin's name",
    )

    @field_validator("provider")
    @classmethod
    def _registered(cls, name: str) -> str:
        return plugins.check_provider("LLM", name)

    model: str | None = Field(
        None, description="default: the provider's own (ollama qwen3:4b; the harness CLIs: their configured model)"
    )
    command: str | None = Field(
        None,
        max_length=4096,
        description="the harness CLI to run (claude, codex, opencode): a name on PATH or an absolute path",
    )
    endpoint: str | None = None

    @model_validator(mode="after")
    def _command_is_the_cli(self) -> ExtractionSettings:
        """``command`` may only name the provider's own CLI (a path to ``claude``, say): agent.yaml
        can be written through ``POST /api/config``, and a free command line there would let that
        caller make the daemon run any program."""
        if self.command is None:
            return self
        binary = HARNESS_CLIS.get(self.provider)
        if binary is None:
            raise ValueError(f"command is only for the harness CLI providers ({', '.join(sorted(HARNESS_CLIS))})")
        name = Path(self.command.strip()).name
        if name.lower().removesuffix(".exe").removesuffix(".cmd") != binary:
            raise ValueError(
                f"command must be the {binary!r} executable (a name on PATH or a path ending in /{binary})"
            )
        return self

    timeout: float = Field(90.0, gt=0, le=3600, description="seconds per LLM call")
    api_key: str | None = None
    max_tokens: int = Field(2048, ge=64, le=65536, alias="maxTokens", description="completion cap per call")


class LlmBudget(Section):
    """Limits on one LLM provider's use, checked before every call: a call over a limit is not
    made, and the job that wanted it waits for the window to allow it (never counted as a
    failed attempt). Hours and days are clock windows in UTC. 0 means no limit."""

    calls_per_hour: int = Field(0, ge=0, le=10_000_000, alias="callsPerHour", description="calls per clock hour")
    calls_per_day: int = Field(0, ge=0, le=100_000_000, alias="callsPerDay", description="calls per UTC day")
    tokens_per_hour: int = Field(
        0, ge=0, le=10_000_000_000, alias="tokensPerHour", description="input + output tokens per clock hour"
    )
    tokens_per_day: int = Field(
        0, ge=0, le=100_000_000_000, alias="tokensPerDay", description="input + output tokens per UTC day"
    )
    concurrency: int = Field(0, ge=0, le=64, description="calls at once (0: as many as there are callers)")


class GraphSettings(Section):
    # The spec's switch for graph triples from background extraction: here extraction writes
    # entities whenever the graph is enabled.
    legacy_keys = frozenset({"extractionWritesEnabled"})

    enabled: bool = True


class TraversalSettings(Section):
    """Graph reads at recall (signet.search.traversal, docs/recall.md): focal entities of the
    query, walked to their memories, merged with the flat candidates. Read only when
    ``graph.enabled`` is on too."""

    enabled: bool = Field(
        False, description="traversal at recall: walk the query's entities to their memories (docs/benchmarks.md: off)"
    )
    graph_boost: bool = Field(
        True, alias="graphBoost", description="when no entity resolves, boost memories of entities a query word names"
    )
    timeout_ms: int = Field(
        50, ge=1, le=10_000, alias="timeoutMs", description="time budget; past it recall uses flat results and says so"
    )
    max_focal: int = Field(5, ge=1, le=50, alias="maxFocal", description="focal entities resolved from a query")
    max_hops: int = Field(1, ge=0, le=3, alias="maxHops", description="hops along entity dependencies")
    max_branching: int = Field(
        100, ge=1, le=2000, alias="maxBranching", description="memories (and dependency edges) taken per entity"
    )
    boost: float = Field(
        0.1, ge=0.0, le=1.0, description="score boost of a keyword/vector candidate the graph also reached"
    )
    cap: float = Field(
        0.9, ge=0.0, le=1.0, description="a traversal-only candidate scores at most this share of the best flat one"
    )


class HintsSettings(Section):
    """Prospective hints (spec 001, hints worker; docs/recall.md): the questions a memory would
    answer, written at remember time (a template; with an LLM, also a pipeline job) and matched
    at recall as their own evidence channel. Off by default: it did not gain on both yardsticks
    (docs/benchmarks.md, prospective hints)."""

    enabled: bool = Field(
        False, description="write hints at remember time and match them at recall (docs/benchmarks.md: off)"
    )
    max: int = Field(5, ge=1, le=10, description="hints per memory at most, per source (template, LLM)")
    cap: float = Field(
        0.75, ge=0.0, le=1.0, description="a hint-only candidate scores at most this share of the best flat one"
    )
    boost: float = Field(
        0.05, ge=0.0, le=0.5, description="score boost of a keyword/vector candidate its hints also match"
    )
    llm: bool = Field(True, description="with an LLM provider, also queue a hints job per remembered memory")


class TelemetrySettings(Section):
    """Local telemetry (docs/operations.md): an event log of counts and timings in the workspace
    database, and the opt-in recall QA ledger. Nothing is ever sent anywhere."""

    # The spec's anonymous telemetry went to PostHog; nothing is sent here, so its keys are
    # accepted and dropped.
    legacy_keys = frozenset({"posthogHost", "posthogApiKey", "deploymentRole", "installChannel"})

    enabled: bool = Field(
        True, description="keep the local event log (counts and timings only, never prompts or memory content)"
    )
    memory_search_qa_enabled: bool = Field(
        False,
        alias="memorySearchQaEnabled",
        description="record every recall's query text and results in memory_search_telemetry (sensitive; local only)",
    )
    retention_days: int = Field(90, ge=1, le=365, alias="retentionDays", description="events and ledger rows kept")
    max_events: int = Field(100_000, ge=1000, le=10_000_000, alias="maxEvents", description="events kept at most")
    flush_interval_ms: int = Field(
        5000, ge=100, le=600_000, alias="flushIntervalMs", description="how often buffered events are written"
    )
    flush_batch_size: int = Field(
        50, ge=1, le=500, alias="flushBatchSize", description="write at once when this many events wait"
    )


class AutonomousSettings(Section):
    """The maintenance worker and the repair gate's switches (spec: ``autonomous.*``;
    docs/operations.md). The spec's ``allowUpdateDelete`` here is ``pipelineV2.allowUpdateDelete``."""

    enabled: bool = Field(True, description="run the maintenance worker; agent-role callers may trigger repairs")
    frozen: bool = Field(False, description="hard stop: every repair is refused, whoever asks; the worker only plans")
    maintenance_mode: Literal["observe", "execute"] = Field(
        "execute", alias="maintenanceMode", description="observe: log the planned repairs; execute: run them"
    )
    maintenance_interval_ms: int = Field(
        1_800_000, ge=1000, le=86_400_000, alias="maintenanceIntervalMs", description="time between two cycles"
    )


class RepairSettings(Section):
    """The repair gate's per-action cooldowns and hourly budgets (spec: ``repair.*``). Cooldowns
    bind the maintenance worker and agents; an operator's own call is held to the hourly budget."""

    requeue_cooldown_ms: int = Field(60_000, ge=0, le=3_600_000, alias="requeueCooldownMs")
    requeue_hourly_budget: int = Field(
        50, ge=1, le=1000, alias="requeueHourlyBudget", description="requeue, leases, sweep, orphans"
    )
    reembed_cooldown_ms: int = Field(300_000, ge=0, le=3_600_000, alias="reembedCooldownMs")
    reembed_hourly_budget: int = Field(
        10, ge=1, le=1000, alias="reembedHourlyBudget", description="re-embed; keyword index rebuilds: at most 5"
    )
    dedup_cooldown_ms: int = Field(600_000, ge=0, le=3_600_000, alias="dedupCooldownMs")
    dedup_hourly_budget: int = Field(3, ge=1, le=100, alias="dedupHourlyBudget")
    dedup_semantic_threshold: float = Field(
        0.92, ge=0.5, le=1.0, alias="dedupSemanticThreshold", description="cosine at which two memories are duplicates"
    )
    dedup_batch_size: int = Field(100, ge=1, le=1000, alias="dedupBatchSize", description="merges per deduplicate call")


_FLAT_REPAIR_KEYS = {
    "autonomousEnabled": ("autonomous", "enabled"),
    "autonomousFrozen": ("autonomous", "frozen"),
    "maintenanceMode": ("autonomous", "maintenanceMode"),
    "maintenanceIntervalMs": ("autonomous", "maintenanceIntervalMs"),
    "repairReembedCooldownMs": ("repair", "reembedCooldownMs"),
    "repairReembedHourlyBudget": ("repair", "reembedHourlyBudget"),
    "repairRequeueCooldownMs": ("repair", "requeueCooldownMs"),
    "repairRequeueHourlyBudget": ("repair", "requeueHourlyBudget"),
}
"""The spec's older flat ``pipelineV2`` keys for the nested ``autonomous`` / ``repair`` ones."""


class TranscriptExtractionSettings(Section):
    """How a session transcript is given to the extraction model (docs/pipeline.md).

    ``auto``: the whole transcript in one call when it fits ``contextChars``, else chunks;
    ``whole``: one call up to ``contextChars`` (chunks beyond); ``chunked``: always chunks of
    ``chunkChars``. Chunks cover the whole transcript, consecutive ones sharing
    ``chunkOverlap`` characters of turns, and their facts are deduplicated across chunks."""

    mode: Literal["auto", "whole", "chunked"] = Field(
        "auto", description="auto: one call when the transcript fits contextChars; whole; chunked"
    )
    context_chars: int = Field(
        12_000,
        ge=2000,
        le=4_000_000,
        alias="contextChars",
        description="transcript characters one extraction call may carry (raise it for long-context models)",
    )
    chunk_chars: int = Field(
        11_800, ge=1000, le=4_000_000, alias="chunkChars", description="largest chunk of a long transcript"
    )
    chunk_overlap: int = Field(
        1200, ge=0, le=100_000, alias="chunkOverlap", description="characters of turns two consecutive chunks share"
    )

    @model_validator(mode="after")
    def _overlap_below_chunk(self) -> TranscriptExtractionSettings:
        if self.chunk_overlap >= self.chunk_chars // 2:
            raise ValueError("chunkOverlap must be less than half of chunkChars")
        return self


class PipelineSettings(Section):
    # ``telemetryEnabled`` is the spec's switch for sending anonymous events, and nothing is sent
    # here (``telemetry.enabled`` governs the local event log).
    legacy_keys = frozenset({"telemetryEnabled"})

    @model_validator(mode="before")
    @classmethod
    def _graph_enabled(cls, data: Any) -> Any:
        """The spec's older flat ``graphEnabled`` is ``graph.enabled`` (a nested value wins)."""
        if isinstance(data, dict) and "graphEnabled" in data:
            data = dict(data)
            flag = data.pop("graphEnabled")
            graph = data.get("graph")
            if graph is None:
                data["graph"] = {"enabled": flag}
            elif isinstance(graph, dict) and "enabled" not in graph:
                data["graph"] = {**graph, "enabled": flag}
        return data

    @model_validator(mode="before")
    @classmethod
    def _flat_repair_keys(cls, data: Any) -> Any:
        """The spec's flat ``autonomousEnabled``, ``maintenanceMode``, ``repair*Ms``… are the nested
        ``autonomous`` / ``repair`` keys (a nested value wins); ``autonomous.allowUpdateDelete`` is
        ``allowUpdateDelete`` here."""
        if not isinstance(data, dict):
            return data
        data = dict(data)
        for flat, (section, key) in _FLAT_REPAIR_KEYS.items():
            if flat in data:
                value = data.pop(flat)
                nested = data.get(section)
                if nested is None or isinstance(nested, dict):  # anything else fails validation as it is
                    data[section] = {key: value, **(nested or {})}
        auto = data.get("autonomous")
        if isinstance(auto, dict) and "allowUpdateDelete" in auto:
            auto = dict(auto)
            data.setdefault("allowUpdateDelete", auto.pop("allowUpdateDelete"))
            data["autonomous"] = auto
        return data

    enabled: bool = True
    shadow_mode: bool = Field(False, alias="shadowMode")
    mutations_frozen: bool = Field(False, alias="mutationsFrozen")
    allow_update_delete: bool = Field(False, alias="allowUpdateDelete")
    min_fact_confidence_for_write: float = Field(0.7, ge=0.0, le=1.0, alias="minFactConfidenceForWrite")
    lease_timeout_ms: int = Field(300_000, ge=1000, alias="leaseTimeoutMs")
    max_attempts: int = Field(3, ge=1, le=100, alias="maxAttempts")
    workers: int = Field(1, ge=0, le=16, description="extraction worker threads (0: none run)")
    poll_interval_ms: int = Field(1000, ge=10, le=600_000, alias="pollIntervalMs")
    reaper_interval_ms: int = Field(60_000, ge=100, alias="reaperIntervalMs")
    backoff_base_ms: int = Field(1000, ge=1, alias="backoffBaseMs")
    backoff_max_ms: int = Field(30_000, ge=1, alias="backoffMaxMs")
    decision_candidates: int = Field(5, ge=1, le=20, alias="decisionCandidates")
    summarize_handoff: bool = Field(True, alias="summarizeHandoff", description="LLM handoff summaries")
    document_chunk_size: int = Field(
        2000, ge=200, le=20_000, alias="documentChunkSize", description="largest document chunk, in characters"
    )
    document_chunk_overlap: int = Field(
        200,
        ge=0,
        le=5000,
        alias="documentChunkOverlap",
        description="characters two consecutive windows of a plain-text document share",
    )
    extraction: ExtractionSettings = Field(default_factory=ExtractionSettings)
    budgets: dict[str, LlmBudget] = Field(
        default_factory=dict,
        description="per LLM provider name: callsPerHour, callsPerDay, tokensPerHour, tokensPerDay, concurrency",
    )
    transcripts: TranscriptExtractionSettings = Field(default_factory=TranscriptExtractionSettings)
    graph: GraphSettings = Field(default_factory=GraphSettings)
    traversal: TraversalSettings = Field(default_factory=TraversalSettings)
    hints: HintsSettings = Field(default_factory=HintsSettings)

    @field_validator("budgets")
    @classmethod
    def _budget_providers(cls, budgets: dict[str, LlmBudget]) -> dict[str, LlmBudget]:
        for name in budgets:  # a misspelt provider name would be a limit that never applies
            plugins.check_provider("LLM", name)
        return budgets

    autonomous: AutonomousSettings = Field(default_factory=AutonomousSettings)
    repair: RepairSettings = Field(default_factory=RepairSettings)
    telemetry: TelemetrySettings = Field(default_factory=TelemetrySettings)

    @model_validator(mode="after")
    def _overlap_below_size(self) -> PipelineSettings:
        if self.document_chunk_overlap >= self.document_chunk_size // 2:
            raise ValueError("documentChunkOverlap must be less than half of documentChunkSize")
        return self


class ReinforceSettings(Section):
    """Store-time reinforcement (docs/lifecycle.md): a remembered text this similar to a live
    memory of the same type and owner adds a confirmation to it instead of a near duplicate."""

    enabled: bool = Field(
        False, description="reinforce instead of storing a near duplicate (off: see docs/lifecycle.md)"
    )
    threshold: float = Field(
        0.88, ge=0.5, le=1.0, description="cosine similarity at or above which a new text reinforces (agenr: 0.88)"
    )


class IntakeSettings(Section):
    """The remember intake (docs/reliability.md#the-remember-intake): ``POST
    /api/memory/remember`` commits the validated memory to a small table and answers; a thread
    stores such rows as memories in batches once a burst pauses. SQLite only."""

    enabled: bool = Field(True, description="answer a remember once it is committed to the intake (off: once stored)")
    when: Literal["busy", "always"] = Field(
        "busy",
        description="busy: only remembers that overlap others go through the intake (one alone is stored at once); "
        "always: every remember over HTTP",
    )
    quiet_ms: int = Field(
        200, ge=0, le=60_000, description="store what waits once no remember has arrived for this long"
    )
    max_lag_s: float = Field(
        10.0, ge=0.0, le=3600.0, description="store what waits once its oldest row is this old, burst or not"
    )
    max_pending: int = Field(
        10_000,
        ge=1,
        le=10_000_000,
        description="with this many rows waiting, a remember is stored before its answer (backpressure)",
    )
    batch: int = Field(64, ge=1, le=5000, description="rows stored per transaction")
    read_wait_s: float = Field(
        15.0,
        ge=0.0,
        le=600.0,
        description="how long another request waits for the remembers accepted before it to be stored",
    )


class ConsolidationSettings(Section):
    """Consolidation (docs/lifecycle.md): tier 1 rules (near duplicates, expired temporaries,
    stale todos) and, with an LLM provider, tier 2 cluster-and-merge; sources are retired,
    never deleted, and every run can be undone."""

    schedule: str | None = Field(
        None, description="run consolidation on this schedule (`every 1d`, a cron line); unset: only by hand"
    )
    duplicate_threshold: float = Field(
        0.95, ge=0.5, le=1.0, description="cosine at or above which two memories are near duplicates (tier 1)"
    )
    merge_threshold: float = Field(
        0.82, ge=0.5, le=1.0, description="cosine at or above which memories form a cluster the LLM may merge (tier 2)"
    )
    temporary_days: float = Field(
        90.0, gt=0, description="an episodic or issue memory unused this long has expired (tier 1)"
    )
    todo_days: float = Field(30.0, gt=0, description="a todo unused and unchanged this long is stale (tier 1)")
    max_clusters: int = Field(10, ge=0, le=200, description="LLM merges planned in one run (tier 2)")
    max_cluster_size: int = Field(8, ge=2, le=32, description="memories in one LLM merge")
    scan_limit: int = Field(5000, ge=10, le=100_000, description="newest live memories one run looks at")

    @field_validator("schedule")
    @classmethod
    def _schedule(cls, text: str | None) -> str | None:
        if text is None or not text.strip():
            return None
        from signet.errors import InvalidRequest
        from signet.schedule import parse  # imported here: keeps croniter out of config's import

        try:
            parse(text)
        except InvalidRequest as exc:  # a SignetError: pydantic reports a ValueError
            raise ValueError(str(exc)) from None
        return text.strip()


class SignalsSettings(Section):
    """Signals (docs/lifecycle.md): important new memories shown once to every running session."""

    enabled: bool = Field(True, description="add signals to the per-prompt hook context")
    min_importance: float = Field(0.9, ge=0.0, le=1.0, description="memories at or above this raise a signal")
    max_age_s: int = Field(300, ge=1, le=30 * 86400, description="older memories never signal (agenr: 300 s)")
    max_per_prompt: int = Field(3, ge=1, le=50, description="signals added to one prompt; the rest wait")


class ContinuitySettings(Section):
    """Session continuity (docs/pipeline.md, docs/harnesses.md): summaries, MEMORY.md, checkpoints."""

    summaries: bool = Field(True, description="queue an LLM session summary at session end and at compaction")
    summary_max_attempts: int = Field(
        3, ge=1, le=100, description="attempts of a summary job whose LLM answered badly (no provider never counts)"
    )
    synthesis: bool = Field(True, description="regenerate the marked block of MEMORY.md after each session summary")
    synthesis_max_chars: int = Field(
        6000, ge=500, le=100_000, description="size budget of the generated MEMORY.md block"
    )
    synthesis_summaries: int = Field(5, ge=0, le=50, description="recent session summaries MEMORY.md draws on")
    synthesis_min_importance: float = Field(
        0.7, ge=0.0, le=1.0, description="recent memories at or above this go into MEMORY.md"
    )
    checkpoint_every_prompts: int = Field(
        10, ge=0, le=10_000, description="a periodic checkpoint every N prompts of a session (0: none)"
    )
    restore_window_hours: float = Field(
        4.0, ge=0.0, le=720.0, description="session start restores a checkpoint of the same session this recent"
    )
    checkpoints_per_session: int = Field(20, ge=1, le=1000, description="checkpoints kept per session (oldest go)")


class MemorySettings(Section):
    # The spec's separate vector store path: vectors live in the database here.
    legacy_keys = frozenset({"vectors"})

    database: str = "memory/memories.db"
    session_budget: int = Field(2000, ge=0)
    decay_rate: float = Field(0.95, gt=0.0, le=1.0)
    forget_confirm_threshold: int = Field(
        25, ge=0, description="batches larger than this need the preview's confirm_token"
    )
    pipeline: PipelineSettings = Field(default_factory=PipelineSettings, alias="pipelineV2")
    reinforce: ReinforceSettings = Field(default_factory=ReinforceSettings)
    intake: IntakeSettings = Field(default_factory=IntakeSettings)
    signals: SignalsSettings = Field(default_factory=SignalsSettings)
    consolidation: ConsolidationSettings = Field(default_factory=ConsolidationSettings)
    continuity: ContinuitySettings = Field(default_factory=ContinuitySettings)


_RETENTION_MS = {
    "tombstoneRetentionMs": "tombstone_days",
    "historyRetentionMs": "history_days",
    "completedJobRetentionMs": "completed_job_days",
    "deadJobRetentionMs": "dead_job_days",
}


class RetentionSettings(Section):
    @model_validator(mode="before")
    @classmethod
    def _spec_spelling(cls, data: Any) -> Any:
        """The spec's keys (``tombstoneRetentionMs``… in milliseconds, ``batchLimit``) are the
        same settings; a snake_case key given too wins."""
        if not isinstance(data, dict):
            return data
        data = dict(data)
        for spec_key, key in _RETENTION_MS.items():
            if spec_key in data:
                ms = data.pop(spec_key)
                if isinstance(ms, bool) or not isinstance(ms, (int, float)):
                    raise ValueError(f"{spec_key} must be a number of milliseconds")
                data.setdefault(key, ms / 86_400_000)
        if "batchLimit" in data:
            data.setdefault("batch_limit", data.pop("batchLimit"))
        return data

    tombstone_days: float = Field(30, ge=0, le=36500)
    history_days: float = Field(180, ge=0, le=36500)
    completed_job_days: float = Field(14, ge=0, le=36500)
    dead_job_days: float = Field(30, ge=0, le=36500)
    batch_limit: int = Field(500, ge=1)
    interval_hours: float = Field(6, gt=0)


class DaemonSettings(Section):
    """Where the daemon listens, and the bounds on its connections (docs/reliability.md)."""

    host: str = "127.0.0.1"
    port: int = Field(3850, ge=1, le=65535)
    max_connections: int = Field(2048, ge=16, le=100_000, description="open connections; idle ones are closed first")
    max_requests: int = Field(512, ge=1, le=100_000, description="requests in flight; 503 beyond")
    header_timeout_s: float = Field(10.0, gt=0, le=600, description="time to send a request's headers")
    body_timeout_s: float = Field(60.0, gt=0, le=3600, description="time to send a request's body")
    keep_alive_s: int = Field(5, ge=1, le=600, description="an idle keep-alive connection is closed after this")
    log_max_mb: float = Field(
        5.0, ge=0.01, le=1024, description="a log file is rotated at this size (docs/operations.md, Logs)"
    )
    log_files: int = Field(
        10, ge=2, le=1000, description="log files kept in all, the oldest removed first: disk <= log_files * log_max_mb"
    )


class DocumentsSettings(Section):
    """Documents (docs/documents.md): how URLs are fetched, which local paths may be read, and
    the worker that turns them into chunk memories. Chunk sizes are ``memory.pipelineV2``'s
    ``documentChunkSize`` / ``documentChunkOverlap`` (the spec's place for them)."""

    max_bytes: int = Field(
        10 * 1024 * 1024, ge=1024, le=1024**3, description="largest body fetched or file read, in bytes"
    )
    fetch_timeout_s: float = Field(20.0, gt=0, le=600, description="seconds a URL fetch may take in all")
    max_redirects: int = Field(5, ge=0, le=20, description="redirects followed per fetch")
    allow_private_networks: bool = Field(
        False,
        description="fetch URLs on loopback, link-local and private addresses (off: refused, against SSRF)",
    )
    allowed_paths: list[str] = Field(
        default_factory=lambda: ["~"],
        description="folders local callers may ingest files from (symlinks resolved first; [] refuses every path)",
    )
    workers: int = Field(1, ge=0, le=8, description="document worker threads (0: documents wait in the queue)")
    poll_interval_ms: int = Field(1000, ge=10, le=600_000, description="how often an idle worker looks for work")
    auto_ingest: bool = Field(
        False,
        description="keep the workspace's memory/*.md and Claude Code's project memories "
        "(~/.claude/projects/*/memory/*.md) as documents, synced on start and on change",
    )


class BackupSettings(Section):
    """Database backups (docs/operations.md): taken before every schema migration and on demand
    (``signet backup``) into ``backups/`` beside the database, rotated, never on a nearly full disk."""

    keep: int = Field(5, ge=1, le=1000, description="backups kept; the oldest is removed first")
    min_free_mb: int = Field(
        1024,
        ge=0,
        le=100_000_000,
        description="no backup is written when it would leave less free disk than this (MB)",
    )
    before_migration: bool = Field(True, description="back the database up before a schema migration changes it")


class StorageSettings(Section):
    """Where memories are stored (docs/configuration.md, docs/team.md): the workspace's SQLite
    file (the default) or a PostgreSQL database a team shares. The password is best kept out of
    ``url`` and named by ``password``: an environment variable (``env:NAME``) or an entry of the
    secret store (``secret:NAME``); it is never logged or shown (signet.store.pg_url)."""

    backend: Literal["sqlite", "postgres"] = Field("sqlite", description="sqlite (one machine) or postgres (a team)")
    url: str | None = Field(
        None,
        repr=False,
        max_length=4096,
        description="postgresql://user@host:5432/dbname (libpq URL); required with backend: postgres",
    )
    password: str = Field(
        "env:SIGNET_PG_PASSWORD",
        max_length=256,
        pattern=r"^(env|secret):[A-Za-z_][A-Za-z0-9_]{0,63}$",
        description="where the PostgreSQL password comes from when url has none: env:NAME or secret:NAME",
    )
    pool_size: int = Field(8, ge=1, le=256, alias="poolSize", description="PostgreSQL connections per daemon at most")

    @field_validator("url")
    @classmethod
    def _postgres_url(cls, url: str | None) -> str | None:
        if url is None:
            return None
        scheme = url.split("://", 1)[0].lower() if "://" in url else ""
        if scheme not in ("postgresql", "postgres"):
            raise ValueError("must be a postgresql:// URL")  # never echo the value: it may hold a password
        return url

    @model_validator(mode="after")
    def _url_for_postgres(self) -> StorageSettings:
        if self.backend == "postgres" and not self.url:
            raise ValueError("backend postgres needs storage.url (postgresql://user@host:5432/dbname)")
        return self


class HooksSettings(Section):
    """Harness hooks (docs/harnesses.md): prompt injection, handoff, identity sync.

    The session-start budget is ``memory.session_budget``."""

    session_memories: int = Field(10, ge=0, le=100, description="most relevant memories at session start")
    prompt_budget_tokens: int = Field(300, ge=0, le=10_000, description="per-prompt injection budget")
    prompt_max_memories: int = Field(3, ge=0, le=20)
    prompt_min_score: float = Field(0.35, ge=0.0, le=1.0, description="inject only when the best score clears this")
    prompt_dedup_turns: int = Field(10, ge=0, le=10_000, description="skip memories injected this many turns back")
    prompt_max_attributes: int = Field(
        8,
        ge=0,
        le=50,
        description="current attributes of the entities a prompt names injected at most (0: off; docs/harnesses.md)",
    )
    prompt_attribute_min_confidence: float = Field(
        0.7, ge=0.0, le=1.0, description="inject an entity attribute only when its confidence clears this"
    )
    handoff_exchanges: int = Field(3, ge=1, le=50, description="last exchanges kept as the fallback handoff")
    watch: bool = Field(True, description="watch identity files: regenerate harness files, git auto-commit")
    regenerate_debounce_s: float = Field(2.0, ge=0.0, le=600)
    commit_debounce_s: float = Field(5.0, ge=0.0, le=3600)


class CaptureSettings(Section):
    """Live transcript capture (docs/harnesses.md): the daemon follows these harnesses'
    session files as they grow. Off until a harness is listed."""

    harnesses: list[Literal["claude-code", "codex", "openclaw"]] = Field(
        default_factory=list, description="harnesses whose session files the daemon follows ([]: capture is off)"
    )
    roots: dict[Literal["claude-code", "codex", "openclaw"], list[str]] = Field(
        default_factory=dict,
        description="folders followed per harness, instead of ~/.claude/projects, ~/.codex/sessions, "
        "~/.openclaw/agents; a file resolving outside its folder is refused",
    )
    poll_interval_s: float = Field(
        5.0, gt=0, le=3600, alias="pollIntervalS", description="full rescan when no file event came for this long"
    )
    extract_idle_s: float = Field(
        60.0, ge=0, le=86_400, alias="extractIdleS", description="queue extraction once a session is quiet this long"
    )
    backfill_hours: float = Field(
        24.0,
        ge=-1,
        le=87_600,
        alias="backfillHours",
        description="a file first seen that changed longer ago than this is followed from its end "
        "(-1: read every file from its start; `signet ingest` reads old sessions)",
    )


class RateLimitSettings(Section):
    """Sliding-window limits per ``actor:operation`` (team and hybrid modes only)."""

    window_s: float = Field(60.0, gt=0, le=86_400, alias="windowSeconds")
    default: int = Field(600, ge=1, description="requests per window for any operation not listed")
    operations: dict[str, int] = Field(
        default_factory=lambda: {"remember": 120, "modify": 60, "forget": 30, "recover": 30, "repair": 10, "admin": 30},
        description="per-operation limits (operation = the route's permission)",
    )


class AuthSettings(Section):
    """Auth (issue 7): who may call the daemon. The spec's top-level ``authMode`` also works."""

    mode: Literal["local", "team", "hybrid"] = "local"
    allowed_hosts: list[str] = Field(default_factory=list, alias="allowedHosts")
    cors_origins: list[str] = Field(default_factory=list, alias="corsOrigins")
    default_ttl_s: int = Field(30 * 86_400, ge=60, alias="defaultTtlSeconds")
    rate_limits: RateLimitSettings = Field(default_factory=RateLimitSettings, alias="rateLimits")


class AgentEntry(Section):
    name: str = Field(min_length=1, max_length=200, pattern=r"^[A-Za-z0-9_.-]+$")
    read_policy: Literal["isolated", "shared", "group"] = Field("shared", alias="readPolicy")
    group: list[str] = Field(default_factory=list)


class AgentsSettings(Section):
    roster: list[AgentEntry] = Field(default_factory=list)


class SecretsExecSettings(Section):
    """``POST /api/secrets/exec`` and ``signet secret exec`` (docs/secrets.md): what may run with
    secrets in its environment. The spec names no default allow-list, so none runs until listed."""

    allow: list[str] = Field(
        default_factory=list,
        description="commands exec may run: a name looked up on PATH (`gh`) or an absolute path; empty denies all",
    )
    timeout_s: float = Field(30.0, gt=0, le=3600, alias="timeoutSeconds", description="default run time limit")
    max_timeout_s: float = Field(
        300.0, gt=0, le=86_400, alias="maxTimeoutSeconds", description="the longest timeout a request may ask for"
    )
    max_output_bytes: int = Field(
        1_000_000, ge=1024, le=64_000_000, alias="maxOutputBytes", description="kept of stdout and of stderr each"
    )
    max_concurrent: int = Field(2, ge=1, le=64, alias="maxConcurrent", description="runs at once; more wait queued")


class SecretsSettings(Section):
    """The encrypted secret store under ``.secrets/`` (docs/secrets.md)."""

    key_store: Literal["auto", "keyring", "file"] = Field(
        "auto",
        alias="keyStore",
        description="where a new store's key goes: the OS keyring when usable (auto), or a 0600 key file",
    )
    exec: SecretsExecSettings = Field(default_factory=SecretsExecSettings)


class TasksSettings(Section):
    """Scheduled tasks (docs/tasks.md): commands and harness prompts the daemon runs on a schedule."""

    enabled: bool = Field(True, description="run tasks on their schedules (off: only `run now` runs them)")
    allow: list[str] = Field(
        default_factory=list,
        description="programs a task may run: names on PATH (`claude`) or absolute paths; empty refuses every task",
    )
    timeout_s: float = Field(600.0, gt=0, le=86_400, alias="timeoutSeconds", description="default run time limit")
    max_output_bytes: int = Field(
        1_000_000, ge=1024, le=64_000_000, alias="maxOutputBytes", description="output kept per run"
    )
    max_concurrent: int = Field(2, ge=1, le=64, alias="maxConcurrent", description="task runs at once")
    keep_runs: int = Field(100, ge=1, le=100_000, alias="keepRuns", description="run history kept per task")


class SkillsSettings(Section):
    """Skills (docs/skills.md): ``skills/<name>/SKILL.md`` folders, linked into every harness."""

    index: str | None = Field(
        None,
        description="a YAML or JSON file listing installable skills (name, description, source) for "
        "`signet skill search`; relative to the workspace",
    )
    allow_remote: bool = Field(
        False,
        alias="allowRemote",
        description="let `POST /api/skills/install` clone git URLs (the CLI always may; off: local sources only)",
    )
    max_bytes: int = Field(
        20 * 1024 * 1024, ge=1024, le=1024**3, alias="maxBytes", description="largest skill, unpacked, in bytes"
    )
    max_files: int = Field(2000, ge=1, le=100_000, alias="maxFiles", description="most files in one skill")
    git_timeout_s: float = Field(
        120.0, gt=0, le=3600, alias="gitTimeoutSeconds", description="seconds a skill's git clone may take"
    )


class GitSettings(Section):
    """Git sync of the workspace (docs/git.md). The remote's URL lives in the repository's own
    config (``signet git config --url``), not here."""

    remote: str = Field(
        "origin", pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$", description="the git remote pulled from and pushed to"
    )
    branch: str | None = Field(
        None,
        pattern=r"^[A-Za-z0-9][A-Za-z0-9._/-]{0,127}$",
        description="the remote branch to sync with (default: the workspace's current branch)",
    )
    timeout_s: float = Field(
        120.0, gt=0, le=3600, alias="timeoutSeconds", description="seconds one git command may take"
    )


class UpdateSettings(Section):
    """Updates (docs/updates.md): where new versions are looked up, and whether the daemon
    looks by itself. Off by default: nothing contacts the index until asked."""

    index_url: str = Field(
        "https://pypi.org/pypi",
        alias="indexUrl",
        pattern=r"^https?://[^\s]+$",
        description="the PyPI JSON API base: `<indexUrl>/<package>/json` is read",
    )
    pip_index_url: str | None = Field(
        None,
        alias="pipIndexUrl",
        pattern=r"^https?://[^\s]+$",
        description="pip's --index-url (default: indexUrl with its final /pypi made /simple)",
    )
    package: str = Field(
        "signet-memory", pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$", description="the distribution to update"
    )
    check_interval_h: float = Field(
        0.0, ge=0, le=24 * 365, alias="checkIntervalHours", description="how often the daemon checks (0: never)"
    )
    auto_install: bool = Field(
        False, alias="autoInstall", description="install what a scheduled check finds, then restart (off: only report)"
    )
    prereleases: bool = Field(False, description="consider pre-releases (rc, beta) as updates")
    timeout_s: float = Field(
        20.0, gt=0, le=600, alias="timeoutSeconds", description="seconds an index request may take"
    )
    install_timeout_s: float = Field(
        600.0, gt=0, le=7200, alias="installTimeoutSeconds", description="seconds pip may take to install"
    )


class Settings(Section):
    """The whole manifest. Unknown *top-level* keys are kept (other tools share agent.yaml) and
    ``signet doctor`` lists them; unknown keys inside Signet's sections are errors."""

    model_config = ConfigDict(extra="allow", populate_by_name=True, validate_assignment=True)

    version: int = 1
    schema_: str = Field("signet/v1", alias="schema")
    agent: AgentInfo = Field(default_factory=AgentInfo)
    harnesses: list[str] = Field(default_factory=list)
    embedding: EmbeddingSettings = Field(default_factory=EmbeddingSettings)
    search: SearchSettings = Field(default_factory=SearchSettings)
    memory: MemorySettings = Field(default_factory=MemorySettings)
    retention: RetentionSettings = Field(default_factory=RetentionSettings)
    daemon: DaemonSettings = Field(default_factory=DaemonSettings)
    hooks: HooksSettings = Field(default_factory=HooksSettings)
    capture: CaptureSettings = Field(default_factory=CaptureSettings)
    backup: BackupSettings = Field(default_factory=BackupSettings)
    storage: StorageSettings = Field(default_factory=StorageSettings)
    documents: DocumentsSettings = Field(default_factory=DocumentsSettings)
    auth: AuthSettings = Field(default_factory=AuthSettings)
    auth_mode: Literal["local", "team", "hybrid"] | None = Field(None, alias="authMode")
    agents: AgentsSettings = Field(default_factory=AgentsSettings)
    secrets: SecretsSettings = Field(default_factory=SecretsSettings)
    tasks: TasksSettings = Field(default_factory=TasksSettings)
    skills: SkillsSettings = Field(default_factory=SkillsSettings)
    git: GitSettings = Field(default_factory=GitSettings)
    update: UpdateSettings = Field(default_factory=UpdateSettings)


def _dotted(loc: tuple[int | str, ...]) -> str:
    return ".".join(str(p) for p in loc)


def parse_settings(data: Any, *, source: str = "agent.yaml") -> Settings:
    """Validate an already-parsed manifest."""
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: the top level must be a mapping of keys, not {type(data).__name__}")
    try:
        return Settings.model_validate(data)
    except ValidationError as exc:
        errors = exc.errors()
        first = next((e for e in errors if e["type"] == "extra_forbidden"), errors[0])
        key = _dotted(first["loc"])
        if first["type"] == "extra_forbidden":
            raise ConfigError(
                f"{source}: {key}: unknown key; {_suggest(first['loc'])}", key=key, problems=len(errors)
            ) from None
        raise ConfigError(
            f"{source}: invalid value for '{key}': {first['msg']}", key=key, problems=len(errors)
        ) from None


def _keys_of(model: type[BaseModel]) -> list[str]:
    """The keys a section accepts, as users write them (the alias where there is one)."""
    return [f.alias or name for name, f in model.model_fields.items()]


def _model_at(loc: tuple[int | str, ...]) -> type[BaseModel] | None:
    """The section model that holds the key at ``loc`` (list indices and dict keys skipped)."""
    model: type[BaseModel] = Settings
    for part in loc[:-1]:
        if isinstance(part, int):
            continue
        field = next((f for name, f in model.model_fields.items() if part in (name, f.alias)), None)
        if field is None:
            continue  # a free-form mapping key (e.g. a rate-limit operation)
        inner = _section_type(field.annotation)
        if inner is None:
            return None
        model = inner
    return model


def _section_type(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in get_args(annotation):
        found = _section_type(arg)
        if found is not None:
            return found
    return None


def _suggest(loc: tuple[int | str, ...]) -> str:
    model = _model_at(loc)
    if model is None:
        return "see docs/configuration.md"
    prefix = ".".join(str(p) for p in loc[:-1])
    known = _keys_of(model)
    close = difflib.get_close_matches(str(loc[-1]), known, n=1, cutoff=0.6)
    if close:
        return f"did you mean {prefix + '.' if prefix else ''}{close[0]}?"
    return f"valid keys here: {', '.join(sorted(known))}"


def unknown_top_level_keys(settings: Settings) -> list[str]:
    """Top-level keys Signet does not read (kept for other tools; ``signet doctor`` lists them)."""
    return sorted(settings.model_extra or {})


def top_level_near_miss(key: str) -> str | None:
    """The known top-level key an unknown one looks like a typo of (``atuh`` -> ``auth``), or
    None. Unknown top-level keys must stay allowed, so a misspelt section name cannot be an
    error; ``signet doctor`` points at it instead (``atuh: {mode: team}`` would run open)."""
    close = difflib.get_close_matches(key, _keys_of(Settings), n=1, cutoff=0.75)
    return close[0] if close else None


def load_settings(path: Path) -> Settings:
    """Read agent.yaml; a missing file means all defaults."""
    if not path.exists():
        return Settings()
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        raise ConfigError(f"{path}: not valid YAML{where}: {getattr(exc, 'problem', exc)}") from None
    return parse_settings(data, source=str(path))
