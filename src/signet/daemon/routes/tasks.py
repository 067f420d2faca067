"""``/api/tasks``: scheduled tasks (docs/tasks.md): CRUD, run now, the run history, and the
live output of a task's runs as server-sent events. All ``local`` (the spec's): open to local
callers, ``admin`` from a token."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Annotated, Any

from fastapi import APIRouter, Path, Query
from sse_starlette import EventSourceResponse, ServerSentEvent

from signet.daemon.deps import RuntimeDep
from signet.models import ErrorResponse
from signet.tasks.models import Task, TaskCreate, TaskDeleted, TaskList, TaskPatch, TaskRun, TaskRunList
from signet.tasks.service import TaskService

router = APIRouter(tags=["tasks"], responses={422: {"model": ErrorResponse}})

TaskId = Annotated[str, Path(min_length=1, max_length=64)]
NOT_ALLOWED: dict[int | str, dict[str, Any]] = {
    403: {"model": ErrorResponse, "description": "the program is not on tasks.allow"}
}


@router.get("/api/tasks", response_model=TaskList)
def list_tasks(runtime: RuntimeDep) -> TaskList:
    """Every task, oldest first."""
    return TaskList(tasks=runtime.tasks.list_tasks())


@router.post("/api/tasks", response_model=Task, status_code=201, responses=NOT_ALLOWED)
def create_task(runtime: RuntimeDep, body: TaskCreate) -> Task:
    """Schedule a command (on ``tasks.allow``) or a harness prompt."""
    return runtime.tasks.create(body)


@router.get("/api/tasks/{task_id}", response_model=Task)
def get_task(runtime: RuntimeDep, task_id: TaskId) -> Task:
    return runtime.tasks.get(task_id)


@router.patch("/api/tasks/{task_id}", response_model=Task, responses=NOT_ALLOWED)
def update_task(runtime: RuntimeDep, task_id: TaskId, body: TaskPatch) -> Task:
    """Change a task's name, schedule, command or prompt, directory, timeout, or turn it on or off."""
    return runtime.tasks.update(task_id, body)


@router.delete("/api/tasks/{task_id}", response_model=TaskDeleted)
def delete_task(runtime: RuntimeDep, task_id: TaskId) -> TaskDeleted:
    """Remove a task and its run history (a run in progress finishes unrecorded)."""
    runtime.tasks.delete(task_id)
    return TaskDeleted(id=task_id, deleted=True)


@router.post(
    "/api/tasks/{task_id}/run",
    response_model=TaskRun,
    status_code=202,
    responses={409: {"model": ErrorResponse, "description": "a run of this task is in progress"}},
)
def run_task(runtime: RuntimeDep, task_id: TaskId) -> TaskRun:
    """Start a run now (202); its output streams on ``/stream`` and lands in ``/runs``."""
    return runtime.tasks.run_now(task_id)


@router.get("/api/tasks/{task_id}/runs", response_model=TaskRunList)
def task_runs(
    runtime: RuntimeDep,
    task_id: TaskId,
    limit: Annotated[int, Query(ge=1, le=200)] = 20,
    offset: Annotated[int, Query(ge=0, le=1_000_000)] = 0,
) -> TaskRunList:
    """The run history, newest first (``tasks.keepRuns`` per task are kept)."""
    return runtime.tasks.runs(task_id, limit, offset)


def _sse(name: str, data: dict[str, Any]) -> ServerSentEvent:
    return ServerSentEvent(data=json.dumps(data, ensure_ascii=False), event=name)


async def _events(tasks: TaskService, task_id: str) -> AsyncIterator[ServerSentEvent]:
    sub = tasks.hub.subscribe(task_id, asyncio.get_running_loop())  # here: a stream never read never subscribes
    try:
        current = tasks.active_output(sub.task_id)
        if current is not None:
            run, text = current
            yield _sse("run", {"run_id": run.id, "trigger": run.trigger, "started_at": run.started_at})
            if text:
                yield _sse("output", {"run_id": run.id, "stream": "output so far", "text": text})
        while True:
            event = await sub.queue.get()
            if event is None:
                yield _sse("end", {"reason": "the daemon is stopping"})
                return
            yield _sse(*event)
    finally:
        tasks.hub.unsubscribe(sub)


STREAM_EVENT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": "one server-sent event (OpenAPI 3.1: the schema of a text/event-stream is one event's)",
    "properties": {
        "event": {"type": "string", "enum": ["run", "output", "done", "dropped", "end"]},
        "data": {"type": "string", "description": "JSON: {run_id, …}"},
    },
    "required": ["event", "data"],
}


@router.get(
    "/api/tasks/{task_id}/stream",
    response_class=EventSourceResponse,
    responses={
        200: {
            "content": {"text/event-stream": {"schema": STREAM_EVENT_SCHEMA}},
            "description": "events `run` (a run started: {run_id, trigger, started_at}), `output` ({run_id, stream, "
            "text}), `done` ({run_id, status, exit_code}), `dropped` (a slow reader lost events) and `end` (the "
            "daemon is stopping); `: ping` comments every `heartbeat` seconds",
        }
    },
)
async def stream_task(
    runtime: RuntimeDep,
    task_id: TaskId,
    heartbeat: Annotated[float, Query(ge=1, le=300, description="seconds between keep-alive pings")] = 15,
) -> EventSourceResponse:
    """The output of the task's runs as they happen; a run in progress is sent from its start."""
    tasks = runtime.tasks
    await asyncio.to_thread(tasks.get, task_id)  # 404 for an unknown task
    return EventSourceResponse(_events(tasks, task_id), ping=heartbeat, send_timeout=30)
