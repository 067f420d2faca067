"""The shapes of ``/api/skills`` (docs/skills.md)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class Skill(BaseModel):
    name: str
    description: str
    version: str | None = None
    path: str = Field(description="the skill's folder in the workspace")
    source: str | None = Field(None, description="what it was installed from (a folder, a git URL, an archive)")
    linked: list[str] = Field(default_factory=list, description="harnesses whose skills folder links to it")
    use_count: int = 0
    last_used_at: str | None = None
    relevance: float = Field(0.0, description="use_count decayed by the days since the last use")


class SkillProblem(BaseModel):
    name: str
    error: str


class SkillList(BaseModel):
    skills: list[Skill]
    problems: list[SkillProblem] = Field(
        default_factory=list, description="folders under skills/ that are not valid skills"
    )


class SkillDetail(Skill):
    body: str = Field(description="SKILL.md after its front matter")
    files: list[str] = Field(description="the files in the skill's folder, relative to it")


class SkillInstallRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    source: str = Field(
        min_length=1,
        max_length=2048,
        description="a folder or a .tar.gz/.zip archive on the daemon's machine, or a git URL "
        "(git URLs only with skills.allowRemote)",
    )
    force: bool = Field(False, description="replace an installed skill of the same name")


class LinkInfo(BaseModel):
    harness: str
    path: str
    action: str
    note: str = ""


class SkillInstalled(BaseModel):
    skill: Skill
    replaced: bool
    links: list[LinkInfo]


class SkillRemoved(BaseModel):
    name: str
    removed: bool
    links: list[LinkInfo]


class SkillUsed(BaseModel):
    name: str
    use_count: int


class SkillSearchHit(BaseModel):
    name: str
    description: str
    version: str | None = None
    installed: bool
    source: str | None = None
    score: float


class SkillSearchResult(BaseModel):
    query: str
    results: list[SkillSearchHit]
