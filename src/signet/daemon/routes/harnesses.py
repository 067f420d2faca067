"""Harnesses, identity and config files: ``/api/harnesses``, ``/api/harnesses/regenerate``,
``/api/identity``, ``/api/config``.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Annotated, Any

import yaml
from fastapi import APIRouter
from pydantic import BaseModel, Field

from signet.config import parse_settings
from signet.daemon.deps import RuntimeDep
from signet.errors import ConfigError, InvalidRequest
from signet.harnesses import install as harness_install
from signet.harnesses.merge import HarnessConfigError, write_atomic
from signet.hooks.identity import IDENTITY_FILES
from signet.models import ErrorResponse, StrictModel

router = APIRouter(tags=["harnesses"], responses={400: {"model": ErrorResponse}})

CONFIG_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,100}\.(md|yaml|yml)$")
MAX_CONFIG_BYTES = 1_000_000


class HarnessFile(BaseModel):
    path: str
    description: str
    exists: bool
    present: bool = Field(description="Signet's part is in the file as installed.")


class HarnessStatus(BaseModel):
    name: str
    display_name: str
    installed: bool
    installed_at: str | None
    complete: bool
    files: list[HarnessFile]


class HarnessList(BaseModel):
    harnesses: list[HarnessStatus]


class RegenerateRequest(StrictModel):
    harnesses: Annotated[list[Annotated[str, Field(max_length=100)]], Field(max_length=50)] | None = None


class RegeneratedFile(BaseModel):
    harness: str
    path: str
    action: str


class RegenerateResponse(BaseModel):
    regenerated: list[RegeneratedFile]
    errors: dict[str, str]


class IdentityFile(BaseModel):
    name: str
    exists: bool
    size: int | None
    updated_at: str | None


class IdentityResponse(BaseModel):
    name: str
    description: str | None
    fields: dict[str, str] = Field(description="`- key: value` lines of IDENTITY.md")
    content: str | None = Field(description="IDENTITY.md as written")
    files: list[IdentityFile]


class ConfigFile(BaseModel):
    name: str
    size: int
    updated_at: str
    content: str


class ConfigList(BaseModel):
    files: list[ConfigFile]


class SaveConfigRequest(StrictModel):
    file: Annotated[str, Field(min_length=1, max_length=120)]
    content: Annotated[str, Field(max_length=MAX_CONFIG_BYTES)]
    dry_run: bool = Field(False, description="validate only (the dashboard checks as you type); nothing is written")


class SaveConfigResponse(BaseModel):
    saved: str
    bytes: int
    restart_required: bool = Field(description="agent.yaml changes apply when the daemon restarts.")
    dry_run: bool = Field(False, description="validated only: the file on disk is unchanged")


def _mtime(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).isoformat(timespec="seconds")


@router.get("/api/harnesses", response_model=HarnessList)
def list_harnesses(runtime: RuntimeDep) -> HarnessList:
    """Every known harness, whether it is installed, and which of its files hold Signet's part."""
    ws = runtime.workspace.root
    out = [
        HarnessStatus.model_validate(harness_install.status(h, ws)) for h in harness_install.all_harnesses().values()
    ]
    return HarnessList(harnesses=out)


@router.post("/api/harnesses/regenerate", response_model=RegenerateResponse)
def regenerate(runtime: RuntimeDep, body: RegenerateRequest | None = None) -> RegenerateResponse:
    """Rewrite installed harnesses' instruction files (CLAUDE.md…) from the identity files."""
    ws = runtime.workspace.root
    names = body.harnesses if body is not None and body.harnesses is not None else harness_install.installed(ws)
    known = set(harness_install.all_harnesses())
    unknown = [n for n in names if n not in known]
    if unknown:
        raise InvalidRequest(f"unknown harness: {', '.join(unknown)}", known=sorted(known))
    done: list[RegeneratedFile] = []
    errors: dict[str, str] = {}
    for name in names:
        try:
            changes = harness_install.regenerate(ws, [name])
        except HarnessConfigError as exc:
            errors[name] = str(exc)
            continue
        done.extend(
            RegeneratedFile(harness=n, path=str(c.path), action=c.action) for n, cs in changes.items() for c in cs
        )
    return RegenerateResponse(regenerated=done, errors=errors)


def identity_fields(text: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for line in text.splitlines():
        m = re.match(r"^\s*[-*]\s*\**([A-Za-z][\w \-]{0,40}?)\**\s*:\s*(.+?)\s*$", line)
        if m:
            out[m.group(1).strip().lower()] = m.group(2)
    return out


@router.get("/api/identity", response_model=IdentityResponse)
def identity(runtime: RuntimeDep) -> IdentityResponse:
    """The agent's identity: IDENTITY.md parsed, the agent name, and which identity files exist."""
    root = runtime.workspace.root
    files = []
    for name in IDENTITY_FILES:
        p = root / name
        st = p.stat() if p.is_file() else None
        files.append(
            IdentityFile(
                name=name,
                exists=st is not None,
                size=st.st_size if st else None,
                updated_at=_mtime(st.st_mtime) if st else None,
            )
        )
    ident = root / "IDENTITY.md"
    content = ident.read_text(encoding="utf-8", errors="replace") if ident.is_file() else None
    fields = identity_fields(content or "")
    agent = runtime.settings.agent
    return IdentityResponse(
        name=fields.get("name") or agent.name,
        description=agent.description,
        fields=fields,
        content=content,
        files=files,
    )


@router.get("/api/config", response_model=ConfigList)
def list_config(runtime: RuntimeDep) -> ConfigList:
    """The workspace's config files (``*.md``, ``*.yaml``) with their content."""
    root = runtime.workspace.root
    out = []
    for p in sorted(root.iterdir()):
        if p.is_file() and CONFIG_NAME.match(p.name):
            st = p.stat()
            if st.st_size > MAX_CONFIG_BYTES:
                continue
            out.append(
                ConfigFile(
                    name=p.name,
                    size=st.st_size,
                    updated_at=_mtime(st.st_mtime),
                    content=p.read_text(encoding="utf-8", errors="replace"),
                )
            )
    return ConfigList(files=out)


@router.post("/api/config", response_model=SaveConfigResponse)
def save_config(body: SaveConfigRequest, runtime: RuntimeDep) -> SaveConfigResponse:
    """Save one config file at the workspace root. ``agent.yaml`` is validated first: an
    invalid manifest is refused (400, naming the key) and the file on disk is kept."""
    if not CONFIG_NAME.match(body.file):
        raise InvalidRequest("file must be a name (no path) ending in .md, .yaml or .yml", file=body.file)
    if body.file.endswith((".yaml", ".yml")):
        try:
            data: Any = yaml.safe_load(body.content)
        except yaml.YAMLError as exc:
            raise InvalidRequest(f"{body.file}: not valid YAML: {exc}") from None
        if body.file == "agent.yaml":
            try:
                parse_settings(data, source=body.file)
            except ConfigError as exc:
                raise InvalidRequest(exc.message, **exc.details) from None
    data_bytes = body.content.encode("utf-8")
    if body.dry_run:
        return SaveConfigResponse(saved=body.file, bytes=len(data_bytes), restart_required=False, dry_run=True)
    path = runtime.workspace.root / body.file
    write_atomic(path, data_bytes)
    return SaveConfigResponse(saved=body.file, bytes=len(data_bytes), restart_required=body.file == "agent.yaml")
