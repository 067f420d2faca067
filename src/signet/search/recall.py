"""Hybrid recall: FTS5 BM25 and vector cosine, fused, filtered and ranked.

This is the one recall path: the HTTP API, hooks, CLI, MCP, the pipeline's decision
engine and the benchmarks all call :meth:`Recaller.recall`.

Scoring. Both legs draw a deep candidate pool (``search.top_k``); when the query names a
time ("in July 2022", "last week": signet.search.timeframe) each leg also draws its best
``top_k`` among the memories created in that (widened) period, so what was said then is a
candidate even when other periods match the words better. Every candidate in the union is
scored on *both* legs (a keyword-only hit still gets its cosine from the index), so one leg
cannot drown the other by default:

    score = alpha * max(cosine, 0) + (1 - alpha) * bm25_norm

where ``bm25_norm = |bm25| / max |bm25|`` over the pool and the cosine is blended with the
memory's thread neighbours' vectors (signet.search.neighbours). (The spec's ``1 / (1 + |bm25|)``
is inverted: it gives the *best* keyword match the *lowest* score; see docs/recall.md.)
Then small multiplicative nudges (length prior, who said it, the time the query names,
question lines, time anchors for "when" questions: signet.search.rank and .timeframe), with
the names of people who said a large share of the memories in scope left out of the keyword
query (signet.search.speakers). When vectors are unavailable the response says so and
``method`` is ``fts``. The whole path, step by step: docs/recall.md.
"""

from __future__ import annotations

import logging
import math
import threading
import time
import unicodedata
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar

from signet.config import Settings, TraversalSettings
from signet.embedding.base import EmbeddingError
from signet.embedding.service import EmbeddingService
from signet.search import dampening, hints, lifescore, supersession, traversal
from signet.search.fts import match_of, recall_terms
from signet.search.ftspool import keyword_pool, mirrored_pool
from signet.search.keyword_mirror import KeywordMirror
from signet.search.neighbours import context_cosines, thread_neighbours
from signet.search.rank import adjust_for_query, boost_named, boost_window, mentioned_who, weigh_length
from signet.search.speakers import SpeakerNames
from signet.search.timeframe import query_window, widened
from signet.search.vectors import VectorIndex
from signet.store.database import Database
from signet.store.filters import MemoryFilter
from signet.store.records import load_tags, to_iso
from signet.store.sqlite import Connection
from signet.store.thread_context import CONTEXT_WEIGHT

T = TypeVar("T")

log = logging.getLogger(__name__)

_POOL: ThreadPoolExecutor | None = None
_POOL_LOCK = threading.Lock()


def _submit(fn: Callable[[], T], parallel: bool) -> Future[T]:
    """Run ``fn`` on the shared recall pool (``parallel``) or right here, as a future either way."""
    global _POOL
    if parallel:
        with _POOL_LOCK:
            if _POOL is None:
                _POOL = ThreadPoolExecutor(max_workers=4, thread_name_prefix="signet-recall")
        return _POOL.submit(fn)
    fut: Future[T] = Future()
    try:
        fut.set_result(fn())
    except BaseException as exc:  # noqa: BLE001 - re-raised by fut.result() in the caller
        fut.set_exception(exc)
    return fut


@dataclass(frozen=True)
class _Keywords:
    """A recall's keyword query: its terms as (text, prefix) for the in-memory mirror, and
    as an FTS5 MATCH expression; ``project`` is the one project the filters allow, ``created``
    the period they allow (:func:`created_bounds`)."""

    terms: list[tuple[str, bool]]
    project: str | None
    created: tuple[float, float] | None = None

    @property
    def match(self) -> str:
        return match_of(self.terms) or ""


@dataclass
class Candidate:
    memory_id: str
    fts_raw: float | None = None
    vector: float | None = None
    in_fts_pool: bool = False
    in_vector_pool: bool = False
    score: float = 0.0
    match: float = 0.0
    """The score before the life stage: how well the memory matches (``min_score`` applies to it)."""


@dataclass
class RecallHit:
    row: Any
    score: float
    source: str
    fts_score: float | None
    vector_score: float | None
    mark: supersession.Mark | None = None
    """What the knowledge graph says of this memory's claims (signet.search.supersession)."""


@dataclass
class RecallOutcome:
    hits: list[RecallHit]
    method: str
    vector_available: bool
    vector_reason: str | None
    took_ms: float
    graph: traversal.Outcome | None = None
    """What the knowledge graph contributed (signet.search.traversal); None when its reads are off."""


class Recaller:
    def __init__(
        self,
        db: Database,
        settings: Settings,
        index: VectorIndex,
        embeddings: EmbeddingService,
        keywords: KeywordMirror | None = None,
    ) -> None:
        self.db = db
        self.settings = settings
        self.index = index
        self.embeddings = embeddings
        self.keywords = keywords
        """The in-memory mirror of ``memories_ctx_fts`` (signet.search.keyword_mirror), when on."""
        self.speakers = SpeakerNames()
        self._hub_thresholds = dampening.HubThresholds()

    def vector_state(self) -> tuple[bool, str | None]:
        emb = self.embeddings
        if emb.state == "ready":
            paused = emb.query_paused()  # a query embedding failed lately: skip, don't wait again
            return (True, None) if paused is None else (False, f"{paused}; keyword results only")
        if emb.state == "loading":
            return False, "the embedding model is still loading; keyword results only for now"
        if emb.state == "disabled":
            return False, "embedding provider is 'none': vector search is off"
        return False, f"embedding provider unavailable: {emb.error}"

    def recall(
        self,
        query: str,
        flt: MemoryFilter,
        *,
        limit: int,
        alpha: float | None = None,
        min_score: float | None = None,
    ) -> RecallOutcome:
        started = time.perf_counter()
        # Stored text is NFC (signet.memory.content); FTS5's tokenizer splits a decomposed
        # accent (NFD "cre\u0300me") into two tokens, so an NFD query would find nothing by keyword.
        query = unicodedata.normalize("NFC", query)
        cfg = self.settings.search
        alpha = cfg.alpha if alpha is None else alpha
        min_score = cfg.min_score if min_score is None else min_score
        pool = max(cfg.top_k, limit)
        where, params = flt.sql(self.settings.memory.decay_rate)

        candidates: dict[str, Candidate] = {}
        project = flt.project if flt.project is not None else flt.scope.project
        named_time = query_window(query, flt.until)  # "last week" is relative to the request's until
        window = widened(named_time) if named_time is not None else None
        self.db.read(self.speakers.refresh)
        keywords = _Keywords(recall_terms(query, drop=self.speakers.dominant(project)), project, created_bounds(flt))
        vec_ok, reason = self.vector_state()
        # alpha = 0 is a keyword-only request (legacy search): skip the vector leg entirely.
        want_vec = vec_ok and alpha > 0 and bool(query.strip())
        fts_job: Future[list[tuple[str, float]]] | None = None
        if keywords.terms:
            # With a vector leg to compute, the keyword leg runs on a pool thread meanwhile:
            # SQLite and torch both release the GIL, so on two cores the legs overlap
            # (docs/benchmarks.md, latency). Candidates are still added in the same order
            # (keyword hits first), so the ranking is exactly the sequential one.
            fts_job = _submit(
                lambda: self.db.read(
                    lambda c: self._keyword_pools(
                        c, keywords, where, params, pool, window, context=alpha > 0, selective=flt.is_narrowing()
                    )
                ),
                want_vec,
            )
        qvec = None
        if want_vec:
            try:
                qvec = self.embeddings.embed_query(query)
            except EmbeddingError as exc:
                # A remote embedder failing at query time (down, timed out, answered
                # nonsense) costs this recall its vector leg, not its answer: the keyword
                # leg is already running and is consumed below; the response says why.
                log.warning("query embedding failed, keyword results only: %s", exc)
                vec_ok, reason = False, f"query embedding failed: {exc}; keyword results only"
        vec_hits = self._vector_pools(qvec, flt, where, params, pool, window) if qvec is not None else []
        hinted = self._hints(keywords, where, params, pool)
        if fts_job is not None:
            for mid, raw in fts_job.result():
                candidates[mid] = Candidate(mid, fts_raw=raw, in_fts_pool=True)
        if qvec is not None:
            for mid, sim in vec_hits:
                cand = candidates.setdefault(mid, Candidate(mid))
                cand.vector = sim
                cand.in_vector_pool = True
        hint_only = {mid for mid in hinted if mid not in candidates}
        for mid in hinted:  # in BM25 order (ties in the final sort keep it); cosines come from the index
            if mid in hint_only:
                candidates[mid] = Candidate(mid)
        if qvec is not None:
            missing = [c.memory_id for c in candidates.values() if c.vector is None]
            for mid, sim in self.index.scores_for(qvec, missing).items():
                candidates[mid].vector = sim
            self._blend_thread_context(qvec, candidates)
        use_vectors = qvec is not None
        eff_alpha = alpha if use_vectors else 0.0

        max_fts = max((abs(c.fts_raw) for c in candidates.values() if c.fts_raw is not None), default=0.0)
        for c in candidates.values():
            f = abs(c.fts_raw) / max_fts if c.fts_raw is not None and max_fts > 0 else 0.0
            v = max(c.vector or 0.0, 0.0)
            if c.memory_id in hint_only:  # its hint's BM25 stands in for the keyword part
                f = hinted[c.memory_id]
            c.score = eff_alpha * v + (1.0 - eff_alpha) * f
        flat = set(candidates) - hint_only
        graph = self._graph(query, flt, where, params, qvec, candidates)
        rows = self._rows(list(candidates))  # one read: the nudges need who/content, the hits the rows
        self._adjust(query, candidates, rows, window)
        self._live(query, candidates, rows, flt, use_vectors, named_time is not None)
        if graph is not None:
            for mid, score in traversal.shape(
                {m: c.score for m, c in candidates.items()}, flat, graph, self._traversal, limit
            ).items():
                candidates[mid].score = score
        if hinted:
            hint_cfg = self.settings.memory.pipeline.hints
            for mid, score in hints.shape(
                {m: c.score for m, c in candidates.items()}, flat, hinted, cap=hint_cfg.cap, boost=hint_cfg.boost
            ).items():
                candidates[mid].score = score
        self._dampen(candidates, rows, keywords.terms)
        marks = self._currentness(candidates, rows, flt, where, params, limit=limit, reorder=named_time is None)
        ranked = sorted((c for c in candidates.values() if c.match >= min_score), key=lambda c: c.score, reverse=True)[
            :limit
        ]
        hits: list[RecallHit] = []
        for c in ranked:
            row = rows.get(c.memory_id)
            if row is None:
                continue
            source = "hybrid" if c.in_fts_pool and c.in_vector_pool else ("fts" if c.in_fts_pool else "vector")
            source = source if c.memory_id in flat else ("hint" if c.memory_id in hint_only else "graph")
            fts_norm = abs(c.fts_raw) / max_fts if c.fts_raw is not None and max_fts > 0 else None
            hits.append(RecallHit(row, round(c.score, 6), source, fts_norm, c.vector, marks.get(c.memory_id)))
        return RecallOutcome(
            hits=hits,
            method="hybrid" if use_vectors else "fts",
            vector_available=vec_ok,
            vector_reason=reason,
            took_ms=(time.perf_counter() - started) * 1000,
            graph=graph,
        )

    def _hints(self, keywords: _Keywords, where: str, params: list[Any], pool: int) -> dict[str, float]:
        """The prospective-hint channel (signet.search.hints), when ``hints.enabled``: memory id ->
        its best hint's normalised BM25 for the recall's keyword query, under the flat legs' filter."""
        if not self.settings.memory.pipeline.hints.enabled or not keywords.terms:
            return {}
        match = keywords.match
        found = self.db.read(lambda c: hints.hint_matches(c, match, where, params, pool))
        return hints.normalised(found)

    @property
    def _traversal(self) -> TraversalSettings:
        return self.settings.memory.pipeline.traversal

    def _graph(
        self,
        query: str,
        flt: MemoryFilter,
        where: str,
        params: list[Any],
        qvec: Any,
        candidates: dict[str, Candidate],
    ) -> traversal.Outcome | None:
        """Graph reads (signet.search.traversal), when ``graph.enabled`` and ``traversal.enabled``:
        the memories the query's entities lead to join ``candidates`` scored
        ``0.7·cos + 0.3·importance``; :func:`traversal.shape` merges them after the nudges."""
        cfg = self.settings.memory.pipeline
        if not (cfg.graph.enabled and cfg.traversal.enabled) or not query.strip():
            return None
        agent = flt.agent_id if flt.agent_id is not None else flt.scope.agent_id
        cosines = (lambda ids: self.index.scores_for(qvec, ids)) if qvec is not None else None
        out = self.db.read(
            lambda c: traversal.traverse(
                c, query, agent_id=agent, where=where, params=params, settings=cfg.traversal, cosines=cosines
            )
        )
        if out.degraded:
            log.info("recall: %s", out.degraded)
        for mid, score in out.reached.items():
            if mid not in candidates:
                candidates[mid] = Candidate(mid, vector=None, score=score)
        return out

    def _currentness(
        self,
        candidates: dict[str, Candidate],
        rows: dict[str, Any],
        flt: MemoryFilter,
        where: str,
        params: list[Any],
        *,
        limit: int,
        reorder: bool,
    ) -> dict[str, supersession.Mark]:
        """The knowledge graph's currentness (signet.search.supersession), when ``graph.enabled``:
        marks superseded candidates, ranks the current fact above them (bringing it in when flat
        search missed it). Returns the marks by memory id; ``rows`` gains the memories brought in.

        Only the best ``2 · limit`` candidates (at least 20) are read: currentness only demotes
        a stale memory and lifts the current one to where the stale one stood, so a candidate
        below the results' reach changes nothing there (and each read costs)."""
        if not self.settings.memory.pipeline.graph.enabled or not candidates:
            return {}
        best = sorted(candidates, key=lambda m: candidates[m].score, reverse=True)[: max(2 * limit, 20)]
        top = {m: rows[m] for m in best if m in rows}
        scope = flt.scope
        scoped = scope.policy != "all" or scope.write_agent is not None
        reader = flt.agent_id if flt.agent_id is not None else (scope.write_agent or scope.agent_id if scoped else None)
        found = self.db.read(lambda c: supersession.marks(c, top, reader=reader, where=where, params=params))
        if not found:
            return {}
        scores = {m: c.score for m, c in candidates.items()}
        matches = {m: c.match for m, c in candidates.items()}
        joining = supersession.shape(scores, matches, found, reorder=reorder)
        for mid, c in candidates.items():
            c.score, c.match = scores[mid], matches[mid]
        if joining:
            rows.update(self._rows(list(joining)))
            for mid, (score, match) in joining.items():
                if mid in rows:
                    candidates[mid] = Candidate(mid, score=score, match=match)
                    found.setdefault(mid, supersession.Mark(superseded=False, superseded_by=None, current=True))
        return found

    def _dampen(self, candidates: dict[str, Candidate], rows: dict[str, Any], terms: list[tuple[str, bool]]) -> None:
        """Post-fusion dampening (signet.search.dampening), each stage when its switch is on."""
        cfg = self.settings.search.dampening
        if not (cfg.gravity or cfg.hub or cfg.resolution) or not candidates:
            return
        scores = {m: c.score for m, c in candidates.items()}
        contents = {m: r["content"] for m, r in rows.items()}
        if cfg.gravity:
            cosines = {m: c.vector for m, c in candidates.items()}
            scores = dampening.gravity(
                scores, contents, cosines, terms, factor=cfg.gravity_factor, min_cosine=cfg.gravity_min_cosine
            )
        if cfg.hub:

            def read(conn: Connection) -> tuple[dict[str, set[str]], set[str]]:
                links = dampening.entity_links(conn, scores)
                linked = set().union(*links.values()) if links else set()
                return links, self._hub_thresholds.hubs(conn, linked, cfg.hub_percentile)

            links, hubs = self.db.read(read)
            scores = dampening.hub(scores, links, hubs, factor=cfg.hub_factor)
        if cfg.resolution:
            types = {m: r["type"] for m, r in rows.items()}
            scores = dampening.resolution(scores, types, contents, factor=cfg.resolution_factor)
        for mid, score in scores.items():
            candidates[mid].score = score

    def _blend_thread_context(self, qvec: Any, candidates: dict[str, Candidate]) -> None:
        """Each candidate's cosine judged with its thread neighbours too (signet.search.neighbours)."""
        cosines = {mid: c.vector for mid, c in candidates.items() if c.vector is not None}
        if not cosines:
            return
        ids = list(cosines)
        neighbours = self.db.read(lambda c: thread_neighbours(c, ids))
        for mid, sim in context_cosines(qvec, cosines, neighbours, self.index).items():
            candidates[mid].vector = sim

    def _live(
        self,
        query: str,
        candidates: dict[str, Candidate],
        rows: dict[str, Any],
        flt: MemoryFilter,
        vectors: bool,
        names_time: bool,
    ) -> None:
        """The life stage (signet.search.lifescore): recency, strength, freshness, currentness."""
        for c in candidates.values():
            c.match = c.score
        scores = {mid: c.score for mid, c in candidates.items()}
        lifescore.apply(
            scores,
            rows,
            self.settings.search.scoring,
            query=query,
            until=flt.until,
            names_time=names_time,
            vectors_for=self.index.vectors_for if vectors else None,
        )
        for mid, score in scores.items():
            candidates[mid].score = score

    @staticmethod
    def _adjust(
        query: str,
        candidates: dict[str, Candidate],
        rows: dict[str, Any],
        window: tuple[datetime, datetime] | None = None,
    ) -> None:
        """Nudges (signet.search.rank): length prior, who said it, the time the query names
        (``window``, already widened), question lines, "when" anchors."""
        if not candidates:
            return
        who_of: dict[str, str | None] = {mid: r["who"] for mid, r in rows.items()}
        contents: dict[str, str] = {mid: r["content"] for mid, r in rows.items()}
        named = mentioned_who(query, set(who_of.values()))
        scores = weigh_length({m: c.score for m, c in candidates.items()}, contents)
        scores = boost_named(scores, who_of, named)
        if window is not None:
            start, end = window
            created = {mid: r["created_at"] for mid, r in rows.items()}
            scores = boost_window(scores, created, (to_iso(start), to_iso(end)))
        for mid, score in adjust_for_query(scores, contents, query).items():
            candidates[mid].score = score

    def _keyword_pools(
        self,
        conn: Connection,
        query: _Keywords,
        where: str,
        params: list[Any],
        pool: int,
        window: tuple[datetime, datetime] | None,
        *,
        context: bool = True,
        selective: bool = False,
    ) -> list[tuple[str, float]]:
        """The keyword pool, then (when the query names a time) the best matches of that period
        not already in it. Same BM25 over the same index, so the raw scores stay comparable."""
        hits = self._fts(conn, query, where, params, pool, context=context, selective=selective)
        if window is None:
            return hits
        within = f"{where} AND m.created_at >= ? AND m.created_at < ?"
        return _extend(
            hits,
            self._fts(
                conn,
                query,
                within,
                [*params, to_iso(window[0]), to_iso(window[1])],
                pool,
                context=context,
                selective=True,
                window=window,
            ),
        )

    def _fts(
        self,
        conn: Connection,
        query: _Keywords,
        where: str,
        params: list[Any],
        pool: int,
        *,
        context: bool = True,
        selective: bool = False,
        window: tuple[datetime, datetime] | None = None,
    ) -> list[tuple[str, float]]:
        """BM25 keyword pool; with ``context`` over content + thread context (signet.store.thread_context),
        from the in-memory mirror of that index when it can answer, else from FTS5."""
        if context and self.keywords is not None:
            between = (window[0].timestamp(), window[1].timestamp()) if window is not None else None
            between = _within(between, query.created)
            hits = mirrored_pool(
                conn, self.keywords, query.terms, where, params, pool, project=query.project, created_between=between
            )
            if hits is not None:
                return hits
        # CROSS JOIN pins the FTS table as the outer loop. With a plain JOIN and no ANALYZE
        # statistics SQLite walked memories by idx_memories_deleted and ran the MATCH once per
        # row: 113 ms p50 at 1,000 memories instead of 1.3 ms (O(N) FTS queries per recall).
        table, rank = (
            ("memories_ctx_fts", f"bm25(memories_ctx_fts, 1.0, {CONTEXT_WEIGHT})")
            if context
            else ("memories_fts", "bm25(memories_fts)")
        )
        return keyword_pool(conn, table, rank, query.match, where, params, pool, selective=selective)

    def _vector_pools(
        self,
        qvec: Any,
        flt: MemoryFilter,
        where: str,
        params: list[Any],
        pool: int,
        window: tuple[datetime, datetime] | None,
    ) -> list[tuple[str, float]]:
        """The vector pool, then (when the query names a time) that period's best not already in it."""
        hits = self._vector_pool(qvec, flt, where, params, pool)
        if window is None:
            return hits
        return _extend(
            hits,
            self._vector_pool(
                qvec, flt, where, params, pool, created_between=(window[0].timestamp(), window[1].timestamp())
            ),
        )

    def _vector_pool(
        self,
        qvec: Any,
        flt: MemoryFilter,
        where: str,
        params: list[Any],
        pool: int,
        created_between: tuple[float, float] | None = None,
    ) -> list[tuple[str, float]]:
        """Top vector hits that pass the filters; widens the pool when filters reject many."""
        project = flt.project if flt.project is not None else flt.scope.project
        created_between = _within(created_between, created_bounds(flt))
        k = pool
        total = len(self.index)
        while True:
            hits = self.index.search(qvec, k, project=project, created_between=created_between)
            if not hits:
                return []
            ids = [h.memory_id for h in hits]
            allowed = self.db.read(lambda c, ids=ids: self._allowed(c, ids, where, params))  # type: ignore[misc]
            kept = [(h.memory_id, h.score) for h in hits if h.memory_id in allowed]
            if len(kept) >= pool or len(hits) < k or k >= total:
                return kept[:pool]
            k *= 4

    @staticmethod
    def _allowed(conn: Connection, ids: list[str], where: str, params: list[Any]) -> set[str]:
        out: set[str] = set()
        for i in range(0, len(ids), 500):
            chunk = ids[i : i + 500]
            marks = ",".join("?" for _ in chunk)
            sql = f"SELECT m.id FROM memories m WHERE m.id IN ({marks}) AND {where}"
            out.update(r[0] for r in conn.execute(sql, (*chunk, *params)))
        return out

    def _rows(self, ids: list[str]) -> dict[str, Any]:
        if not ids:
            return {}
        marks = ",".join("?" for _ in ids)
        rows = self.db.read(lambda c: list(c.execute(f"SELECT * FROM memories m WHERE m.id IN ({marks})", ids)))
        return {r["id"]: r for r in rows}


def created_bounds(flt: MemoryFilter) -> tuple[float, float] | None:
    """The filter's ``since`` / ``until`` as a ``[start, end)`` of POSIX seconds for the engines'
    own prefilters (keyword mirror, vector index), so they take their top k among memories of
    that period instead of widening their pool until enough survive the SQL filter (p95 52 ms
    at 100k turns). A millisecond wider on each side than the filter (which SQL still applies
    exactly): the prefilter may keep a row too many, never drop one."""
    if flt.since is None and flt.until is None:
        return None
    start = flt.since.timestamp() - 0.001 if flt.since is not None else -math.inf
    end = flt.until.timestamp() + 0.001 if flt.until is not None else math.inf
    return start, end


def _within(a: tuple[float, float] | None, b: tuple[float, float] | None) -> tuple[float, float] | None:
    """The intersection of two periods (None: unbounded); an empty one stays empty."""
    if a is None or b is None:
        return a if b is None else b
    return max(a[0], b[0]), min(a[1], b[1])


def _extend(pool: list[tuple[str, float]], more: list[tuple[str, float]]) -> list[tuple[str, float]]:
    """``pool`` followed by the entries of ``more`` whose memory it does not hold yet."""
    seen = {mid for mid, _ in pool}
    return pool + [(mid, s) for mid, s in more if mid not in seen]


def result_fields(row: Any) -> dict[str, Any]:
    """The memory fields a recall result carries."""
    return {
        "id": row["id"],
        "content": row["content"],
        "type": row["type"],
        "tags": load_tags(row["tags"]),
        "importance": float(row["importance"]),
        "pinned": bool(row["pinned"]),
        "created_at": row["created_at"],
        "project": row["project"],
        "who": row["who"],
        "source_type": row["source_type"],
        "source_id": row["source_id"],
    }
