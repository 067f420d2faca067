"""The shapes of ``/api/update/*`` (docs/updates.md)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class UpdateCheck(BaseModel):
    package: str
    current: str | None = Field(description="the installed version (null: not installed as a distribution)")
    latest: str | None = Field(description="the newest release on the index (null: unknown)")
    available: bool = Field(description="latest is newer than current")
    index_url: str
    checked_at: str
    error: str | None = Field(None, description="why the index could not be read (then available is false)")


class UpdateConfig(BaseModel):
    index_url: str
    pip_index_url: str
    package: str
    check_interval_hours: float
    auto_install: bool
    prereleases: bool


class UpdateConfigRequest(BaseModel):
    """Saved into agent.yaml's ``update`` section; the daemon reads it when it next starts."""

    model_config = ConfigDict(extra="forbid")

    check_interval_hours: float | None = Field(None, ge=0, le=24 * 365)
    auto_install: bool | None = None
    prereleases: bool | None = None


class UpdateConfigSaved(BaseModel):
    config: UpdateConfig
    restart_required: bool = Field(description="the running daemon still uses the settings it started with")


class UpdateRunRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    version: str = Field(
        min_length=1,
        max_length=64,
        description="the version to install: must be the latest a check reports (a confirmation, not a choice)",
    )
    dry_run: bool = Field(False, description="resolve and download with pip, install nothing")
    restart: bool = Field(True, description="restart the daemon after installing")


class UpdateRun(BaseModel):
    package: str
    version: str
    installed: bool = Field(description="false for a dry run")
    restarting: bool
    output: str = Field(description="the end of pip's output")
