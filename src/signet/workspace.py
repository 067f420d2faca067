"""The ``$SIGNET_WORKSPACE`` layout (default ``~/.agents``) and its identity files.

Nothing here creates directories as a side effect of construction: :func:`setup_workspace`
is the one place that writes, and it never overwrites a file the user already has.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import yaml

from signet import plugins
from signet.config import Settings, load_settings

IDENTITY_FILES = ("AGENTS.md", "SOUL.md", "IDENTITY.md", "USER.md", "MEMORY.md")


def default_workspace_path() -> Path:
    env = os.environ.get("SIGNET_WORKSPACE")
    return Path(env).expanduser() if env else Path.home() / ".agents"


@dataclass(frozen=True)
class Workspace:
    root: Path

    @classmethod
    def from_env(cls) -> Workspace:
        return cls(default_workspace_path())

    @property
    def config_path(self) -> Path:
        return self.root / "agent.yaml"

    @property
    def memory_dir(self) -> Path:
        return self.root / "memory"

    def database_path(self, settings: Settings | None = None) -> Path:
        """The SQLite file ``memory.database`` names. With ``storage.backend: postgres`` the
        store is the server's (signet.store.choose) and this file is not used by the daemon;
        the commands that work on the file itself (backup, repair) say so and stop."""
        settings = settings or self.settings()
        rel = settings.memory.database
        p = Path(rel).expanduser()
        return p if p.is_absolute() else self.root / p

    @property
    def daemon_dir(self) -> Path:
        return self.root / ".daemon"

    @property
    def secrets_dir(self) -> Path:
        """The encrypted secret store (signet.secrets.store): never committed, never backed up."""
        return self.root / ".secrets"

    @property
    def pid_path(self) -> Path:
        return self.daemon_dir / "pid"

    @property
    def logs_dir(self) -> Path:
        return self.daemon_dir / "logs"

    def log_path(self, day: datetime | None = None) -> Path:
        d = (day or datetime.now(UTC)).strftime("%Y-%m-%d")
        return self.logs_dir / f"daemon-{d}.log"

    def settings(self) -> Settings:
        return load_settings(self.config_path)

    def identity_path(self, name: str) -> Path:
        return self.root / name

    def read_identity(self) -> dict[str, str]:
        """The identity files that exist, by name (missing ones are left out)."""
        out: dict[str, str] = {}
        for name in IDENTITY_FILES:
            p = self.identity_path(name)
            if p.is_file():
                out[name] = p.read_text(encoding="utf-8", errors="replace")
        return out


def _templates(
    agent_name: str, user_name: str | None, signet: str = "signet", description: str | None = None
) -> dict[str, str]:
    """``signet``: the command agents are told to run (signet.launcher.agent_command).
    ``description`` (one line, from setup) goes into IDENTITY.md, the file agents read as who
    they are, as well as agent.yaml's ``agent.description`` (the spec's manifest field)."""
    who = user_name or "the user"
    about = f"- description: {description}\n" if description else ""
    return {
        "AGENTS.md": (
            f"# {agent_name}\n\n"
            "You are a coding agent with a durable memory provided by Signet.\n\n"
            f'- Remember what matters with `{signet} remember "..."` (or the `memory_store` MCP tool).\n'
            f'- Look things up with `{signet} recall "..."` (or `memory_search`).\n'
            "- Prefer stored decisions and preferences over guesses.\n"
        ),
        "SOUL.md": "# Soul\n\nDirect, careful, and honest about uncertainty.\n",
        "IDENTITY.md": f"# Identity\n\n- name: {agent_name}\n{about}- memory: signet\n",
        "USER.md": f"# User\n\n- name: {who}\n",
        "MEMORY.md": "# Working memory\n\n(Signet writes only its marked block below, after each session; "
        "notes you write outside it are kept.)\n",
    }


@dataclass
class SetupReport:
    created: list[Path]
    kept: list[Path]


def setup_workspace(
    ws: Workspace,
    *,
    agent_name: str = "signet",
    user_name: str | None = None,
    embedding_provider: str = "local",
    harnesses: list[str] | None = None,
    llm_provider: str = "none",
    signet_command: str = "signet",
    description: str | None = None,
    search_alpha: float = 0.7,
    llm_endpoint: str | None = None,
) -> SetupReport:
    """Create the workspace idempotently; files that exist are kept untouched.

    ``llm_provider`` is written as ``memory.pipelineV2.extraction.provider``. The default is
    ``none`` so a fresh install never burns extraction jobs against a model that is not
    there: they wait, and ``signet pipeline status`` says so, until a provider is set.
    ``signet_command`` is how AGENTS.md tells agents to run Signet (a bare ``signet`` fails
    in a shell that does not have it on PATH). ``llm_endpoint``: where the extraction
    provider answers when not at its default (an Ollama found elsewhere by setup).
    """
    created: list[Path] = []
    kept: list[Path] = []
    for d in (ws.root, ws.memory_dir, ws.logs_dir):
        d.mkdir(parents=True, exist_ok=True)
    for name, text in _templates(agent_name, user_name, signet_command, description).items():
        p = ws.identity_path(name)
        if p.exists():
            kept.append(p)
        else:
            _write_new(p, text)
            created.append(p)
    # Last, and whole or not at all: a workspace with an agent.yaml is a finished one.
    if ws.config_path.exists():
        kept.append(ws.config_path)
    else:
        now = setup_time().isoformat()
        agent: dict[str, str] = {"name": agent_name}
        if description:
            agent["description"] = description
        extraction: dict[str, str] = {"provider": llm_provider, "model": _default_llm(llm_provider)}
        if llm_endpoint:
            extraction["endpoint"] = llm_endpoint
        manifest = {
            "version": 1,
            "schema": "signet/v1",
            "agent": {**agent, "created": now, "updated": now},
            "harnesses": list(harnesses or []),
            "embedding": {"provider": embedding_provider, "model": _default_model(embedding_provider)},
            "search": {"alpha": search_alpha, "top_k": 50, "min_score": 0.1, "vector_threads": 1},
            "memory": {
                "database": "memory/memories.db",
                "decay_rate": 0.95,
                "pipelineV2": {"extraction": extraction},
            },
        }
        _write_new(ws.config_path, yaml.safe_dump(manifest, sort_keys=False))
        created.append(ws.config_path)
    return SetupReport(created=created, kept=kept)


def _default_model(provider: str) -> str:
    return plugins.default_model("embedding", provider)


def _default_llm(provider: str) -> str:
    return plugins.default_model("LLM", provider)


def setup_time() -> datetime:
    """Now, or ``$SOURCE_DATE_EPOCH`` when set (the reproducible-builds convention): two setups
    with the same answers then write byte-identical files (provisioned machines, images)."""
    epoch = os.environ.get("SOURCE_DATE_EPOCH", "").strip()
    if epoch.isdigit():
        return datetime.fromtimestamp(int(epoch), UTC)
    return datetime.now(UTC)


def _write_new(path: Path, text: str) -> None:
    """Write a file that must not exist yet, whole or not at all: the text goes to a temporary
    file that is then hard-linked into place, which fails if the name exists (never clobbers a
    racing writer) and never leaves a half-written file under the name (Ctrl+C, a full disk)."""
    fd, name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    tmp = Path(name)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        tmp.chmod(0o644)
        try:
            os.link(tmp, path)
        except FileExistsError:
            raise
        except OSError:  # a file system without hard links: exclusive create, then the rename
            path.open("x").close()
            tmp.replace(path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
