"""The tasks API's shapes, shared by the routes and the CLI."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, Field, field_validator, model_validator

from signet.models import StrictModel
from signet.secrets.models import SecretName
from signet.secrets.names import encodable

Harness = Literal["claude-code", "codex", "opencode"]
HARNESS_COMMANDS: dict[str, tuple[str, ...]] = {
    "claude-code": ("claude", "-p"),
    "codex": ("codex", "exec"),
    "opencode": ("opencode", "run"),
}
"""How each harness runs one prompt non-interactively: the prompt is the last argument."""

RunStatus = Literal["running", "done", "timeout", "error", "skipped", "missed", "interrupted", "cancelled"]
Argument = Annotated[str, Field(max_length=8192)]
Name = Annotated[str, Field(min_length=1, max_length=200)]
ScheduleText = Annotated[
    str, Field(min_length=1, max_length=200, description="cron ('*/5 * * * *', '@hourly', UTC) or 'every 30s|5m|2h|1d'")
]
Prompt = Annotated[str, Field(min_length=1, max_length=100_000)]
Cwd = Annotated[str, Field(min_length=1, max_length=4096, description="absolute directory to run in")]
Timeout = Annotated[float, Field(gt=0, le=86_400, description="seconds before the run is killed")]
SECRETS_DESCRIPTION = (
    "secrets (signet secret put) each run gets as the environment variable of its name; their values are "
    "redacted from the run's output, live and stored"
)


def _check_text(values: list[str]) -> None:
    if any("\x00" in v or not encodable(v) for v in values):
        raise ValueError("text cannot contain NUL characters or lone surrogates")


class _TaskFields(StrictModel):
    @field_validator("command", "prompt", "name", "cwd", check_fields=False)
    @classmethod
    def _text(cls, value: object) -> object:
        if isinstance(value, str):
            _check_text([value])
        elif isinstance(value, list):
            _check_text([v for v in value if isinstance(v, str)])
        return value


class TaskCreate(_TaskFields):
    """A task runs either ``command`` (a program on ``tasks.allow`` and its arguments, no shell
    unless the program is one) or a ``harness`` with a ``prompt``."""

    name: Name
    schedule: ScheduleText
    command: list[Argument] | None = Field(None, min_length=1, max_length=256)
    harness: Harness | None = None
    prompt: Prompt | None = None
    cwd: Cwd | None = Field(None, description="absolute directory to run in (default: the workspace)")
    timeout_s: Timeout | None = Field(None, description="default tasks.timeoutSeconds")
    secrets: list[SecretName] = Field(default_factory=list, max_length=64, description=SECRETS_DESCRIPTION)
    enabled: bool = True

    @model_validator(mode="after")
    def _one_kind(self) -> TaskCreate:
        if (self.command is None) == (self.harness is None):
            raise ValueError("give either 'command' or 'harness' (with 'prompt')")
        if (self.harness is None) != (self.prompt is None):
            raise ValueError("'harness' and 'prompt' go together")
        return self


class TaskPatch(_TaskFields):
    """Fields to change; a task keeps its kind (command or harness)."""

    name: Name | None = None
    schedule: ScheduleText | None = None
    command: list[Argument] | None = Field(None, min_length=1, max_length=256)
    prompt: Prompt | None = None
    cwd: Cwd | None = None
    timeout_s: Timeout | None = None
    secrets: list[SecretName] | None = Field(None, max_length=64, description="replaces the list; [] for none")
    enabled: bool | None = None


class Task(BaseModel):
    id: str
    name: str
    schedule: str
    command: list[str] = Field(description="what runs (for a harness task: its CLI with the prompt)")
    harness: str | None
    prompt: str | None
    cwd: str
    timeout_s: float | None
    secrets: list[str] = Field(description="names of the secrets its runs get (never their values)")
    enabled: bool
    created_at: str
    updated_at: str
    next_run_at: str | None = Field(description="UTC; None when the task is disabled")
    running: bool = Field(description="a run is in progress")


class TaskList(BaseModel):
    tasks: list[Task]


class TaskRun(BaseModel):
    id: str
    task_id: str
    trigger: Literal["schedule", "manual"]
    status: RunStatus
    scheduled_for: str | None
    started_at: str | None
    finished_at: str | None
    exit_code: int | None = Field(description="negative: killed by that signal")
    output: str = Field(description="stdout and stderr as they came, at most tasks.maxOutputBytes")
    truncated: bool
    error: str | None


class TaskRunList(BaseModel):
    items: list[TaskRun] = Field(description="newest first")
    total: int
    limit: int
    offset: int


class TaskDeleted(BaseModel):
    id: str
    deleted: bool
