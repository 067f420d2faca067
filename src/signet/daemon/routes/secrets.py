"""``/api/secrets``: the names of the workspace's secrets, storing and deleting one, and runs of
allowed commands with secrets in their environment and their output redacted (docs/secrets.md).

Every route needs ``admin`` (signet.auth.policy): agents and tokens below admin get 403 on all
of them. No route answers with a value: the list has names, a run has redacted output.
``POST /api/secrets/exec`` queues a run (202) and ``GET /api/secrets/exec/{job_id}`` reads it;
``wait: true`` answers when it has finished (200).
"""

from __future__ import annotations

import asyncio
from typing import Annotated

from fastapi import APIRouter, Path, Response
from starlette.concurrency import run_in_threadpool

from signet.daemon.deps import ActorDep, RuntimeDep
from signet.models import ErrorResponse
from signet.runtime import Runtime
from signet.secrets.models import (
    ExecRequest,
    ExecRun,
    SecretDeleteResponse,
    SecretList,
    SecretPutRequest,
    SecretPutResponse,
    SingleExecRequest,
)
from signet.secrets.names import NAME_PATTERN, check_name, check_value

router = APIRouter(tags=["secrets"], responses={422: {"model": ErrorResponse}})

NamePath = Annotated[str, Path(pattern=NAME_PATTERN, description="the secret's name")]
RUN_RESPONSES: dict[int | str, dict[str, object]] = {
    200: {"model": ExecRun, "description": "the finished run (wait: true)"},
    403: {"model": ErrorResponse, "description": "not admin, or the command is not in secrets.exec.allow"},
    404: {"model": ErrorResponse, "description": "a named secret does not exist"},
    503: {"model": ErrorResponse, "description": "the store's key cannot be read, or the store is damaged"},
}


@router.get("/api/secrets", response_model=SecretList)
def list_secrets(runtime: RuntimeDep) -> SecretList:
    """The secrets' names and times; never a value."""
    return runtime.secrets.list_secrets()


@router.post(
    "/api/secrets",
    response_model=SecretPutResponse,
    responses={503: {"model": ErrorResponse, "description": "the store's key cannot be read or written"}},
)
def put_secret(runtime: RuntimeDep, body: SecretPutRequest) -> SecretPutResponse:
    """Store a value (encrypted) under a name, replacing any value it had."""
    created = runtime.secrets.store.put(check_name(body.name), check_value(body.value))
    return SecretPutResponse(name=body.name, created=created)


@router.delete("/api/secrets/{name}", response_model=SecretDeleteResponse)
def delete_secret(runtime: RuntimeDep, name: NamePath) -> SecretDeleteResponse:
    """Remove a secret; 404 when there is none of that name."""
    runtime.secrets.store.delete(check_name(name))
    return SecretDeleteResponse(name=name, deleted=True)


async def _start(
    runtime: Runtime, response: Response, req: ExecRequest | SingleExecRequest, names: list[str], actor: str
) -> ExecRun:
    service = runtime.secrets
    prepared = await run_in_threadpool(service.prepare, req.command, names, req.timeout_s, actor)
    finished = await run_in_threadpool(service.submit, prepared)
    if not req.wait:
        return prepared.run
    response.status_code = 200
    return await asyncio.wrap_future(finished)


@router.post("/api/secrets/exec", response_model=ExecRun, status_code=202, responses=RUN_RESPONSES)
async def exec_with_secrets(runtime: RuntimeDep, actor: ActorDep, response: Response, body: ExecRequest) -> ExecRun:
    """Run an allowed command with the named secrets as environment variables; its output is
    redacted (raw, base64, percent-encoded and hex forms of every value)."""
    return await _start(runtime, response, body, [check_name(n) for n in body.secrets], actor)


@router.get("/api/secrets/exec/{job_id}", response_model=ExecRun)
def exec_run(runtime: RuntimeDep, job_id: Annotated[str, Path(min_length=1, max_length=64)]) -> ExecRun:
    """A run's state, and its redacted output once it has finished."""
    return runtime.secrets.get(job_id)


@router.post("/api/secrets/{name}/exec", response_model=ExecRun, status_code=202, responses=RUN_RESPONSES)
async def exec_with_secret(
    runtime: RuntimeDep, actor: ActorDep, response: Response, name: NamePath, body: SingleExecRequest
) -> ExecRun:
    """The same run with the one secret the path names (the spec's single-secret form)."""
    return await _start(runtime, response, body, [check_name(name)], actor)
