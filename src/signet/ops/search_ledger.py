"""The recall QA ledger (``memory_search_telemetry``, spec 001): opt-in, local only, sensitive.

When ``memory.pipelineV2.telemetry.memorySearchQaEnabled`` is on, every recall a caller makes
(HTTP, hooks, MCP; not the pipeline's own candidate searches) writes one row: the query text,
its filters, method, result count, top score, timing, and a snapshot of the results (rank, id,
score, source and the first :data:`CONTENT_MAX` characters of each memory). That is memory
content, on purpose (it is for reviewing what recall returned), so the ledger is off by default,
is never part of the telemetry event log, and is read only through ``analytics``-gated routes
that show a scoped token only its own agent's (and project's) rows. Rows older than
``retentionDays`` are pruned with the event log.

The row is written on the writer thread without the recall waiting for it (``db.submit``).
"""

from __future__ import annotations

import json
import uuid
from collections import Counter
from collections.abc import Iterator
from typing import Any, Final

from signet.config import TelemetrySettings
from signet.models import RecallRequest, RecallResponse
from signet.ops.ndjson import keyset_lines
from signet.store.database import Database
from signet.store.records import now_iso, to_iso
from signet.store.scope import UNSCOPED, ReadScope

CONTENT_MAX: Final = 1000
PAGE: Final = 500

_COLUMNS = (
    "id, created_at, route, agent_id, session_key, project, query, keyword_query, filters_json, method, "
    "result_count, top_score, no_hits, duration_ms, timings_json, results_json, sources_json"
)


def _loads(raw: str | None, default: Any) -> Any:
    if not raw:
        return default
    try:
        return json.loads(raw)
    except ValueError:
        return default


def _item(r: Any) -> dict[str, Any]:
    return {
        "id": r["id"],
        "created_at": r["created_at"],
        "route": r["route"],
        "agent_id": r["agent_id"],
        "session_key": r["session_key"],
        "project": r["project"],
        "query": r["query"],
        "keyword_query": r["keyword_query"],
        "filters": _loads(r["filters_json"], {}),
        "method": r["method"],
        "result_count": int(r["result_count"]),
        "top_score": r["top_score"],
        "no_hits": bool(r["no_hits"]),
        "duration_ms": r["duration_ms"],
        "timings": _loads(r["timings_json"], {}),
        "results": _loads(r["results_json"], []),
        "sources": _loads(r["sources_json"], {}),
    }


def scope_clause(scope: ReadScope) -> tuple[str, list[Any]]:
    """Which rows a caller may read: everything unscoped (local callers, admin tokens); a
    scoped caller only rows its own agent made (and in its project, when project-scoped)."""
    if scope == UNSCOPED:
        return "1=1", []
    clauses, params = ["COALESCE(agent_id, 'default') = ?"], [scope.write_agent or scope.agent_id]
    if scope.project is not None:
        clauses.append("project = ?")
        params.append(scope.project)
    return " AND ".join(clauses), params


class SearchLedger:
    def __init__(self, db: Database, settings: TelemetrySettings) -> None:
        self.db = db
        self.enabled = settings.memory_search_qa_enabled

    def record(self, route: str, req: RecallRequest, resp: RecallResponse, scope: ReadScope) -> None:
        """Queue one row for this recall (nothing when the ledger is off)."""
        if not self.enabled:
            return
        agent = req.agent_id or (None if scope == UNSCOPED else scope.write_agent or scope.agent_id)
        filters = {
            k: v
            for k, v in {
                "type": req.type.value if req.type else None,
                "tags": req.tags,
                "who": req.who,
                "pinned": req.pinned,
                "importance_min": req.importance_min,
                "since": to_iso(req.since) if req.since else None,
                "until": to_iso(req.until) if req.until else None,
                "limit": req.limit,
                "alpha": req.alpha,
                "min_score": req.min_score,
                "read_policy": None if scope == UNSCOPED else scope.policy,
            }.items()
            if v is not None
        }
        results = [
            {
                "rank": i,
                "id": r.id,
                "score": r.score,
                "source": r.source,
                "fts_score": r.fts_score,
                "vector_score": r.vector_score,
                "content": r.content[:CONTENT_MAX],
            }
            for i, r in enumerate(resp.results, 1)
        ]
        row = (
            uuid.uuid4().hex,
            now_iso(),
            route,
            agent,
            None,  # session_key: recall requests carry none (hook recalls are keyed by session upstream)
            req.project or scope.project,
            req.query,
            None,  # keyword_query: recall sanitises the query internally and does not expose it
            json.dumps(filters),
            resp.method,
            resp.count,
            resp.results[0].score if resp.results else None,
            0 if resp.results else 1,
            resp.took_ms,
            json.dumps({"total_ms": resp.took_ms, "vector": resp.vector_search.available}),
            json.dumps(results),
            json.dumps(dict(Counter(r.source for r in resp.results))),
        )
        self.db.submit(
            lambda c: c.execute(f"INSERT INTO memory_search_telemetry({_COLUMNS}) VALUES ({','.join('?' * 17)})", row)
        )

    @staticmethod
    def _where(scope: ReadScope, filters: dict[str, Any]) -> tuple[str, list[Any]]:
        where, params = scope_clause(scope)
        clauses = [where]
        for key, column, op in (
            ("agent_id", "agent_id", "="),
            ("session_key", "session_key", "="),
            ("route", "route", "="),
            ("project", "project", "="),
            ("since", "created_at", ">="),
            ("until", "created_at", "<="),
        ):
            if filters.get(key) is not None:
                clauses.append(f"{column} {op} ?")
                params.append(filters[key])
        if filters.get("no_hits") is not None:
            clauses.append("no_hits = ?")
            params.append(1 if filters["no_hits"] else 0)
        return " AND ".join(clauses), params

    def list(self, scope: ReadScope, filters: dict[str, Any], *, limit: int, offset: int) -> dict[str, Any]:
        """Newest first; ``total`` counts every matching row."""
        where, params = self._where(scope, filters)

        def read(c: Any) -> tuple[int, list[Any]]:
            total = int(c.execute(f"SELECT COUNT(*) FROM memory_search_telemetry WHERE {where}", params).fetchone()[0])
            rows = list(
                c.execute(
                    f"SELECT {_COLUMNS} FROM memory_search_telemetry WHERE {where} "
                    "ORDER BY created_at DESC, id LIMIT ? OFFSET ?",
                    (*params, limit, offset),
                )
            )
            return total, rows

        total, rows = self.db.read(read)
        items = [_item(r) for r in rows]
        return {"items": items, "count": len(items), "total": total, "enabled": self.enabled}

    def export(self, scope: ReadScope, filters: dict[str, Any], *, limit: int) -> Iterator[str]:
        """NDJSON, oldest first, a page at a time."""
        where, params = self._where(scope, filters)
        # Rows are inserted in time order, so the rowid is the cursor (an indexed, stable order).
        sql = (
            f"SELECT rowid AS seq, {_COLUMNS} FROM memory_search_telemetry WHERE {where} AND rowid > ? "
            "ORDER BY rowid LIMIT ?"
        )
        return keyset_lines(self.db, sql, params, key="seq", limit=limit, page=PAGE, item=_item)
