"""SDK operations for running the workspace: scheduled tasks, skills, git sync, backups,
export/import and analytics.

Where the daemon's response model lives in a service package (tasks, skills, git) the SDK
returns it, as it does the analytics reports (signet.ops.analytics_report); the backup and
import reports are defined in the daemon's route modules, which the layers contract keeps out of the SDK's reach, so those come back as the
JSON object the daemon sent (docs/api.md documents their fields).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from signet.gitsync.models import GitConfig, GitConfigRequest, GitResult, GitStatus
from signet.ops.analytics_report import ErrorsReport, LatencyReport, UsageReport
from signet.sdk._core import Call, as_text, body, build, json_object, parser, query, segment
from signet.sdk._ops import _model
from signet.skills.models import (
    SkillDetail,
    SkillInstalled,
    SkillInstallRequest,
    SkillList,
    SkillRemoved,
    SkillSearchResult,
    SkillUsed,
)
from signet.tasks.models import Task, TaskCreate, TaskDeleted, TaskList, TaskPatch, TaskRun, TaskRunList

# --- scheduled tasks --------------------------------------------------------------------------


def list_tasks() -> Call[TaskList]:
    """Every scheduled task, oldest first."""
    return Call("GET", "/api/tasks", parser(TaskList))


def create_task(req: TaskCreate | Mapping[str, Any] | None = None, **fields: Any) -> Call[Task]:
    """Schedule a ``command`` (a program on ``tasks.allow``) or a ``harness`` with a ``prompt``."""
    model = _model(TaskCreate, req or {}, "", fields)
    return Call("POST", "/api/tasks", parser(Task), json=body(model))


def get_task(task_id: str) -> Call[Task]:
    return Call("GET", f"/api/tasks/{segment(task_id, 'task id')}", parser(Task))


def update_task(task_id: str, **fields: Any) -> Call[Task]:
    """Change a task's name, schedule, command or prompt, directory, timeout, secrets or ``enabled``."""
    model = build(TaskPatch, fields)
    return Call("PATCH", f"/api/tasks/{segment(task_id, 'task id')}", parser(Task), json=body(model))


def delete_task(task_id: str) -> Call[TaskDeleted]:
    """Remove a task and its run history."""
    return Call("DELETE", f"/api/tasks/{segment(task_id, 'task id')}", parser(TaskDeleted))


def run_task(task_id: str) -> Call[TaskRun]:
    """Start a run now (Conflict while one is in progress); it lands in :func:`task_runs`."""
    return Call("POST", f"/api/tasks/{segment(task_id, 'task id')}/run", parser(TaskRun))


def task_runs(task_id: str, *, limit: int = 20, offset: int = 0) -> Call[TaskRunList]:
    """The task's run history, newest first."""
    return Call(
        "GET",
        f"/api/tasks/{segment(task_id, 'task id')}/runs",
        parser(TaskRunList),
        params=query(limit=limit, offset=offset),
    )


# --- skills -----------------------------------------------------------------------------------


def list_skills() -> Call[SkillList]:
    """Installed skills by name, with their harness links and use counts."""
    return Call("GET", "/api/skills", parser(SkillList))


def search_skills(q: str, *, limit: int = 20) -> Call[SkillSearchResult]:
    """Installed skills and those of ``skills.index`` matching every word of ``q``."""
    return Call("GET", "/api/skills/search", parser(SkillSearchResult), params=query(q=q, limit=limit))


def get_skill(name: str) -> Call[SkillDetail]:
    """One skill: its front matter, instructions and files."""
    return Call("GET", f"/api/skills/{segment(name, 'skill name')}", parser(SkillDetail))


def install_skill(source: str, *, force: bool = False) -> Call[SkillInstalled]:
    """Install from a folder or archive on the daemon's machine (local callers) or a git URL
    (with ``skills.allowRemote``); Conflict when a skill of that name is installed, unless ``force``."""
    model = build(SkillInstallRequest, {"source": source, "force": force})
    return Call("POST", "/api/skills/install", parser(SkillInstalled), json=body(model))


def remove_skill(name: str) -> Call[SkillRemoved]:
    """Remove a skill's folder and its links in the harnesses."""
    return Call("DELETE", f"/api/skills/{segment(name, 'skill name')}", parser(SkillRemoved))


def use_skill(name: str) -> Call[SkillUsed]:
    """Count one use of a skill (relevance decays with the days since the last use)."""
    return Call("POST", f"/api/skills/{segment(name, 'skill name')}/use", parser(SkillUsed))


# --- git --------------------------------------------------------------------------------------


def git_status() -> Call[GitStatus]:
    """Branch, remote, changed files, ahead/behind (as of the last fetch), conflicts."""
    return Call("GET", "/api/git/status", parser(GitStatus))


def git_config() -> Call[GitConfig]:
    return Call("GET", "/api/git/config", parser(GitConfig))


def git_set_remote(url: str) -> Call[GitConfig]:
    """Point the remote at ``url`` (https, ssh, scp-like, file or an absolute path; never ``ext::``)."""
    model = build(GitConfigRequest, {"url": url})
    return Call("POST", "/api/git/config", parser(GitConfig), json=body(model))


def git_pull() -> Call[GitResult]:
    """Commit local changes, then fetch and merge (Conflict naming the files on a conflict)."""
    return Call("POST", "/api/git/pull", parser(GitResult))


def git_push() -> Call[GitResult]:
    """Commit local changes, then push (never forced)."""
    return Call("POST", "/api/git/push", parser(GitResult))


def git_sync() -> Call[GitResult]:
    """Pull, then push."""
    return Call("POST", "/api/git/sync", parser(GitResult))


# --- backups, export and import ---------------------------------------------------------------


def backups() -> Call[dict[str, Any]]:
    """``{directory, keep, min_free_mb, backups: [{name, path, created_at, reason, size_bytes}]}``, oldest first."""
    return Call("GET", "/api/backup", json_object)


def backup(reason: str | None = None) -> Call[dict[str, Any]]:
    """Back the database up now, then rotate: ``{backup: {...}, removed: [...]}``."""
    return Call("POST", "/api/backup", json_object, json={"reason": reason} if reason is not None else None)


def export(*, vectors: bool = False, deleted: bool = True) -> Call[str]:
    """The whole store as JSON Lines text (a header line, then entity, relation and memory lines):
    feed its lines after the first to :func:`import_lines` on another daemon."""
    return Call("GET", "/api/export", as_text, params=query(vectors=vectors, deleted=deleted), text=True)


def import_lines(
    lines: Sequence[Mapping[str, Any]], *, first_line: int = 2, entity_map: Mapping[str, str] | None = None
) -> Call[dict[str, Any]]:
    """Import one batch (at most 1000) of an export's data lines in one transaction; pass the
    answer's ``entity_map`` with later batches. Idempotent."""
    payload: dict[str, Any] = {"lines": list(lines), "first_line": first_line}
    if entity_map:
        payload["entity_map"] = dict(entity_map)
    return Call("POST", "/api/import", json_object, json=payload)


# --- analytics --------------------------------------------------------------------------------


def analytics_usage() -> Call[UsageReport]:
    """Request counts per endpoint, actor, provider and connector since the daemon started."""
    return Call("GET", "/api/analytics/usage", parser(UsageReport))


def analytics_latency() -> Call[LatencyReport]:
    """Latency percentiles per operation and route over the recent window."""
    return Call("GET", "/api/analytics/latency", parser(LatencyReport))


def analytics_errors(
    *, stage: str | None = None, code: str | None = None, since: datetime | str | None = None, limit: int = 100
) -> Call[ErrorsReport]:
    """Recent errors, newest first, with a summary by stage and code."""
    return Call(
        "GET",
        "/api/analytics/errors",
        parser(ErrorsReport),
        params=query(stage=stage, code=code, since=since, limit=limit),
    )
