"""The shapes of ``/api/git/*`` (docs/git.md)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class GitCommit(BaseModel):
    sha: str
    message: str
    date: str


class GitStatus(BaseModel):
    repository: bool = Field(description="whether the workspace is a git repository")
    branch: str | None = None
    remote: str = Field(description="the remote synced with (git.remote)")
    url: str | None = Field(None, description="the remote's URL; null: none configured")
    changed: list[str] = Field(default_factory=list, description="files changed since the last commit")
    ahead: int | None = Field(None, description="local commits the remote lacks (as of the last fetch)")
    behind: int | None = Field(None, description="remote commits not merged here (as of the last fetch)")
    conflicts: list[str] = Field(default_factory=list, description="files left in conflict by a merge")
    last_commit: GitCommit | None = None


class GitConfig(BaseModel):
    remote: str
    url: str | None
    branch: str | None


class GitConfigRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    url: str = Field(
        min_length=1,
        max_length=2048,
        description="the remote's URL: https://, ssh://, user@host:path, file:// or an absolute path",
    )


class GitResult(BaseModel):
    action: str = Field(description="pull, push or sync")
    committed: bool = Field(description="local changes were committed first")
    pulled: bool = Field(False, description="commits from the remote were merged")
    pushed: bool = Field(False, description="commits were sent to the remote")
    head: str = Field(description="the commit the workspace is at")
    detail: str
