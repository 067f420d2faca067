"""The permission matrix and the ONE table mapping every route to its permission.

Permissions follow the spec's API table, except that ``/api/status`` needs ``diagnostics``
(it names the workspace path and pid). ``none`` routes are public (health, the static
dashboard, whoami). ``local`` routes (config, identity, harness files) are open to
local callers and need ``admin`` from a token. A route missing from :data:`ROUTE_PERMISSIONS`
needs ``admin`` (fail closed), and tests/auth fails when any app route lacks an entry.
"""

from __future__ import annotations

import functools
import re
from typing import Literal

from signet.auth.tokens import Role

Permission = Literal[
    "none",
    "local",
    "remember",
    "recall",
    "modify",
    "forget",
    "recover",
    "documents",
    "connectors",
    "diagnostics",
    "analytics",
    "repair",
    "admin",
]
ALL_PERMISSIONS: frozenset[Permission] = frozenset(
    (
        "remember",
        "recall",
        "modify",
        "forget",
        "recover",
        "documents",
        "connectors",
        "diagnostics",
        "analytics",
        "repair",
        "admin",
    )
)
ROLE_PERMISSIONS: dict[Role, frozenset[Permission]] = {
    "admin": ALL_PERMISSIONS,
    "operator": ALL_PERMISSIONS - {"admin"},
    "agent": frozenset(("remember", "recall", "modify", "forget", "recover", "documents")),
    "readonly": frozenset(("recall",)),
}

# (method, path template) -> permission. Method "*" is a mounted app (/mcp) and any path below it.
ROUTE_PERMISSIONS: dict[tuple[str, str], Permission] = {
    ("GET", "/health"): "none",
    ("GET", "/api/status"): "diagnostics",
    ("GET", "/metrics"): "diagnostics",
    ("GET", "/openapi.json"): "none",
    ("GET", "/docs"): "none",
    ("GET", "/docs/oauth2-redirect"): "none",
    ("GET", "/redoc"): "none",
    ("GET", "/docs/assets/{asset}"): "none",
    ("GET", "/"): "none",
    ("GET", "/dashboard/{asset}"): "none",
    ("GET", "/api/auth/whoami"): "none",
    ("POST", "/api/auth/token"): "admin",
    ("POST", "/api/auth/revoke"): "admin",
    ("GET", "/api/auth/agents"): "admin",
    ("GET", "/api/auth/revocations"): "admin",
    ("POST", "/api/memory/remember"): "remember",
    ("POST", "/api/memory/remember/batch"): "remember",
    ("POST", "/api/memory/recall"): "recall",
    ("GET", "/api/memory/search"): "recall",
    ("GET", "/memory/search"): "recall",
    ("GET", "/memory/similar"): "recall",
    ("GET", "/api/memories"): "recall",
    ("GET", "/api/memory/{memory_id}"): "recall",
    ("PATCH", "/api/memory/{memory_id}"): "modify",
    ("DELETE", "/api/memory/{memory_id}"): "forget",
    ("GET", "/api/memory/{memory_id}/history"): "recall",
    ("GET", "/api/memory/{memory_id}/hints"): "recall",
    ("GET", "/api/knowledge/entities"): "recall",
    ("GET", "/api/knowledge/entities/{entity_id}"): "recall",
    ("GET", "/api/knowledge/entities/{entity_id}/expand"): "recall",
    ("GET", "/api/knowledge/attributes"): "recall",
    ("GET", "/api/knowledge/claims"): "recall",
    ("GET", "/api/knowledge/communities"): "recall",
    ("GET", "/api/knowledge/communities/{community_id}"): "recall",
    ("POST", "/api/knowledge/communities/refresh"): "remember",
    ("POST", "/api/memory/{memory_id}/recover"): "recover",
    ("POST", "/api/memory/modify"): "modify",
    ("POST", "/api/memory/forget"): "forget",
    ("POST", "/api/memory/{memory_id}/split"): "modify",
    ("POST", "/api/memory/{memory_id}/unretire"): "recover",
    ("GET", "/api/retirements"): "recall",
    ("GET", "/api/signals"): "recall",
    ("POST", "/api/memory/consolidate"): "forget",
    ("GET", "/api/consolidations"): "recall",
    ("GET", "/api/consolidations/{run_id}"): "recall",
    ("POST", "/api/consolidations/{run_id}/undo"): "recover",
    ("GET", "/api/memory/{memory_id}/sources"): "recall",
    ("POST", "/api/signals/ack"): "recall",
    ("GET", "/api/embeddings"): "recall",
    ("GET", "/api/embeddings/projection"): "recall",
    ("GET", "/api/embeddings/status"): "recall",
    ("POST", "/api/repair/retention-sweep"): "repair",
    ("POST", "/api/repair/check-fts"): "repair",
    ("GET", "/api/repair/embedding-gaps"): "repair",
    ("POST", "/api/repair/re-embed"): "repair",
    ("POST", "/api/repair/requeue-dead"): "repair",
    ("POST", "/api/repair/release-leases"): "repair",
    ("POST", "/api/repair/clean-orphans"): "repair",
    ("GET", "/api/repair/dedup-stats"): "repair",
    ("POST", "/api/repair/deduplicate"): "repair",
    ("GET", "/api/repair/audit"): "repair",
    ("GET", "/api/repair/maintenance"): "repair",
    ("POST", "/api/repair/maintenance/run"): "repair",
    ("GET", "/api/diagnostics"): "diagnostics",
    ("GET", "/api/diagnostics/{domain}"): "diagnostics",
    ("GET", "/api/logs"): "diagnostics",
    ("GET", "/api/logs/stream"): "diagnostics",
    ("GET", "/api/analytics/logs"): "analytics",
    ("POST", "/api/hooks/session-start"): "remember",
    ("POST", "/api/hooks/user-prompt-submit"): "recall",
    ("POST", "/api/hooks/session-end"): "remember",
    ("POST", "/api/hooks/remember"): "remember",
    ("POST", "/api/hooks/recall"): "recall",
    ("POST", "/api/hooks/pre-compaction"): "remember",
    ("POST", "/api/hooks/compaction-complete"): "remember",
    ("GET", "/api/hooks/synthesis"): "local",
    ("POST", "/api/hooks/synthesis"): "local",
    ("POST", "/api/hooks/synthesis/run"): "local",
    ("GET", "/api/checkpoints"): "recall",
    ("GET", "/api/checkpoints/{session_key}"): "recall",
    ("POST", "/api/artifacts/{session_token}/remove"): "forget",
    ("GET", "/api/continuity/status"): "diagnostics",
    ("GET", "/api/harnesses"): "local",
    ("POST", "/api/harnesses/regenerate"): "local",
    ("GET", "/api/identity"): "local",
    ("GET", "/api/config"): "local",
    ("POST", "/api/config"): "admin",
    ("POST", "/api/ingest/transcript"): "remember",
    ("GET", "/api/pipeline/status"): "diagnostics",
    ("GET", "/api/pipeline/jobs"): "repair",
    ("GET", "/api/pipeline/jobs/{job_id}"): "repair",
    ("POST", "/api/feedback"): "recall",
    ("GET", "/api/feedback"): "analytics",
    ("GET", "/api/analytics/usage"): "analytics",
    ("GET", "/api/analytics/errors"): "analytics",
    ("GET", "/api/analytics/latency"): "analytics",
    ("GET", "/api/analytics/memory-safety"): "analytics",
    ("GET", "/api/analytics/continuity"): "analytics",
    ("GET", "/api/analytics/continuity/latest"): "analytics",
    ("GET", "/api/telemetry/events"): "analytics",
    ("GET", "/api/telemetry/stats"): "analytics",
    ("GET", "/api/telemetry/export"): "analytics",
    ("GET", "/api/telemetry/memory-search"): "analytics",
    ("GET", "/api/telemetry/memory-search/export"): "analytics",
    ("GET", "/api/features"): "none",
    ("GET", "/api/backup"): "repair",
    ("POST", "/api/backup"): "repair",
    ("GET", "/api/export"): "admin",
    ("POST", "/api/import"): "admin",
    ("GET", "/api/secrets"): "admin",
    ("POST", "/api/secrets"): "admin",
    ("DELETE", "/api/secrets/{name}"): "admin",
    ("POST", "/api/secrets/exec"): "admin",
    ("GET", "/api/secrets/exec/{job_id}"): "admin",
    ("POST", "/api/secrets/{name}/exec"): "admin",
    ("POST", "/api/documents"): "documents",
    ("GET", "/api/documents"): "documents",
    ("GET", "/api/documents/{document_id}"): "documents",
    ("DELETE", "/api/documents/{document_id}"): "documents",
    ("GET", "/api/documents/{document_id}/chunks"): "documents",
    ("POST", "/api/connectors"): "connectors",
    ("GET", "/api/connectors"): "connectors",
    ("GET", "/api/connectors/{connector_id}"): "connectors",
    ("DELETE", "/api/connectors/{connector_id}"): "connectors",
    ("POST", "/api/connectors/{connector_id}/sync"): "connectors",
    ("POST", "/api/connectors/{connector_id}/sync/full"): "connectors",
    ("GET", "/api/connectors/{connector_id}/health"): "connectors",
    ("GET", "/api/tasks"): "local",
    ("POST", "/api/tasks"): "local",
    ("GET", "/api/tasks/{task_id}"): "local",
    ("PATCH", "/api/tasks/{task_id}"): "local",
    ("DELETE", "/api/tasks/{task_id}"): "local",
    ("POST", "/api/tasks/{task_id}/run"): "local",
    ("GET", "/api/tasks/{task_id}/runs"): "local",
    ("GET", "/api/tasks/{task_id}/stream"): "local",
    ("GET", "/api/skills"): "local",
    ("GET", "/api/skills/search"): "local",
    ("GET", "/api/skills/{name}"): "local",
    ("POST", "/api/skills/install"): "admin",
    ("DELETE", "/api/skills/{name}"): "admin",
    ("POST", "/api/skills/{name}/use"): "local",
    ("GET", "/api/git/status"): "local",
    ("GET", "/api/git/config"): "local",
    ("POST", "/api/git/config"): "admin",
    ("POST", "/api/git/pull"): "admin",
    ("POST", "/api/git/push"): "admin",
    ("POST", "/api/git/sync"): "admin",
    ("GET", "/api/update/check"): "local",
    ("GET", "/api/update/config"): "local",
    ("POST", "/api/update/config"): "admin",
    ("POST", "/api/update/run"): "admin",
    ("*", "/mcp"): "recall",
}

# Operations for rate limiting: the permission, except that reads are one bucket.
_PARAM = re.compile(r"\{[^}/]+\}")


def _compile(template: str, mount: bool) -> re.Pattern[str]:
    parts = _PARAM.split(template)
    body = "[^/]+".join(re.escape(p) for p in parts)
    return re.compile(f"^{body}(?:/.*)?$" if mount else f"^{body}$")


_COMPILED: list[tuple[str, re.Pattern[str], Permission, str]] = sorted(
    ((m, _compile(p, m == "*"), perm, p) for (m, p), perm in ROUTE_PERMISSIONS.items()),
    key=lambda t: ("{" in t[3], t[0] == "*"),  # literal paths before templated ones
)


CACHED_PATH_MAX = 256
"""Longest path whose answer is cached: ids and route names are far shorter, and a cache of
hostile 64 KiB paths would hold tens of MB."""


def route_permission(method: str, path: str) -> tuple[Permission, str]:
    """(permission, route template) for a concrete request; unknown routes need ``admin``.

    Cached for ordinary paths: every request asks, and the answer for a path never changes
    while the process runs."""
    if len(path) > CACHED_PATH_MAX:
        return _match(method, path)
    return _cached_match(method, path)


@functools.lru_cache(maxsize=1024)
def _cached_match(method: str, path: str) -> tuple[Permission, str]:
    return _match(method, path)


def _match(method: str, path: str) -> tuple[Permission, str]:
    m = "GET" if method == "HEAD" else method
    if len(path) > 1:
        path = path.rstrip("/") or "/"
    for meth, rx, perm, template in _COMPILED:
        if (meth == m or meth == "*") and rx.match(path):
            return perm, template
    return "admin", path


def role_allows(role: Role, permission: Permission) -> bool:
    if permission == "none":
        return True
    if permission == "local":
        return "admin" in ROLE_PERMISSIONS[role]
    return permission in ROLE_PERMISSIONS[role]
