"""The secrets API's shapes, shared by the routes, the SDK and the MCP tools.

No answer model has a field that could hold a value: names, times and redacted output only.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, Field, field_validator

from signet.models import StrictModel
from signet.secrets.names import MAX_VALUE_CHARS, NAME_PATTERN, encodable

SecretName = Annotated[
    str, Field(pattern=NAME_PATTERN, description="upper case, digits, underscores; the environment variable name")
]
Argument = Annotated[str, Field(max_length=8192)]
RunStatus = Literal["queued", "running", "done", "timeout", "cancelled", "error", "interrupted", "refused"]


class SecretInfo(BaseModel):
    name: str
    created_at: str
    updated_at: str


class SecretList(BaseModel):
    secrets: list[SecretInfo] = Field(description="by name; values are never returned")
    key_store: Literal["keyring", "file"] | None = Field(
        description="where the store's key lives (None: nothing stored yet)"
    )


class SecretPutRequest(StrictModel):
    name: SecretName
    value: Annotated[str, Field(min_length=1, max_length=MAX_VALUE_CHARS, description="stored encrypted; never shown")]

    @field_validator("value")
    @classmethod
    def _no_nul(cls, value: str) -> str:
        if "\x00" in value:
            raise ValueError("a secret value cannot contain NUL characters")
        if not encodable(value):
            raise ValueError("a secret value must be valid Unicode text (no lone surrogates)")
        return value


class SecretPutResponse(BaseModel):
    name: str
    created: bool = Field(description="True: a new secret; False: the value of an existing one was replaced")


class SecretDeleteResponse(BaseModel):
    name: str
    deleted: bool


class _ExecFields(StrictModel):
    command: list[Argument] = Field(
        min_length=1,
        max_length=256,
        description="the program (on secrets.exec.allow) and its arguments; no shell unless the program is one",
    )
    timeout_s: float | None = Field(
        None, gt=0, le=86_400, description="seconds before the run is killed (default secrets.exec.timeoutSeconds)"
    )
    wait: bool = Field(False, description="answer when the run has finished (200) instead of when it is queued (202)")

    @field_validator("command")
    @classmethod
    def _no_nul(cls, command: list[str]) -> list[str]:
        if any("\x00" in arg for arg in command):
            raise ValueError("command arguments cannot contain NUL characters")
        if not all(encodable(arg) for arg in command):
            raise ValueError("command arguments must be valid Unicode text (no lone surrogates)")
        if not command[0]:
            raise ValueError("the program name cannot be empty")
        return command


class ExecRequest(_ExecFields):
    secrets: list[SecretName] = Field(
        min_length=1, max_length=64, description="secrets to inject, each as the environment variable of its name"
    )


class SingleExecRequest(_ExecFields):
    """``POST /api/secrets/{name}/exec``: the one secret is the path's."""


class ExecRun(BaseModel):
    """One run: its state while queued or running, its redacted output once finished."""

    id: str
    status: RunStatus
    command: list[str] = Field(description="as given, with any secret value in it redacted")
    secrets: list[str]
    actor: str
    origin: Literal["daemon", "cli"]
    created_at: str
    started_at: str | None
    finished_at: str | None
    exit_code: int | None = Field(description="negative: killed by that signal")
    stdout: str = Field(description="redacted; at most secrets.exec.maxOutputBytes")
    stderr: str = Field(description="redacted; at most secrets.exec.maxOutputBytes")
    truncated: bool
    redactions: int = Field(description="how many places in the output were masked")
    error: str | None
