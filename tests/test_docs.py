"""Docs that cannot drift: every setting, command and route must be documented."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from signet.config import Settings

ROOT = Path(__file__).resolve().parents[1]
DOCS = "\n".join(p.read_text(encoding="utf-8") for p in sorted((ROOT / "docs").glob("*.md")))


def setting_keys(model: type[BaseModel], prefix: str = "") -> list[str]:
    keys: list[str] = []
    for name, field in model.model_fields.items():
        key = prefix + (field.alias or name)
        ann: Any = field.annotation
        if isinstance(ann, type) and issubclass(ann, BaseModel):
            keys.extend(setting_keys(ann, key + "."))
        else:
            keys.append(key)
    return keys


def test_every_setting_is_documented() -> None:
    config_doc = "\n".join(p.read_text() for p in (ROOT / "docs").glob("*.md"))
    missing = [
        k for k in setting_keys(Settings) if f"`{k}`" not in config_doc and f"`{k.split('.')[-1]}`" not in config_doc
    ]
    assert missing == [], f"undocumented agent.yaml keys: {missing}"


def test_every_cli_command_is_documented() -> None:
    from typer.main import get_command

    from signet.cli.main import app

    root = get_command(app)
    names: list[str] = []

    def walk(cmd: Any, prefix: str) -> None:
        subs = getattr(cmd, "commands", None)
        if subs:
            for name, sub in subs.items():
                walk(sub, f"{prefix} {name}".strip())
        else:
            names.append(prefix)

    walk(root, "")
    missing = [n for n in names if f"signet {n}" not in DOCS]
    assert missing == [], f"undocumented commands: {missing}"


def test_every_route_is_documented() -> None:
    from signet.daemon.app import create_app, iter_routes
    from signet.workspace import Workspace

    app = create_app(Workspace(ROOT / ".no-such-workspace"), manage_runtime=False)
    missing = []
    paths = {path for _, path, _ in iter_routes(app.routes)}
    assert "/api/memory/recall" in paths and len(paths) > 20
    for path in sorted(paths):
        if path.startswith(("/openapi", "/docs", "/redoc")) or path in ("/", "/dashboard/{asset}"):
            continue
        # `{memory_id}` in code may be written `{id}` in docs
        pattern = re.escape(path)
        pattern = re.sub(r"\\\{[^}]+\\\}", r"\\{[^}]+\\}", pattern)
        if not re.search(pattern, DOCS):
            missing.append(path)
    assert missing == [], f"undocumented routes: {missing}"


def test_every_doc_the_readme_links_exists() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    links = re.findall(r"\]\(((?:docs/)[^)#]+)\)", readme)
    assert links, "README links no docs"
    missing = [link for link in links if not (ROOT / link).exists()]
    assert missing == [], f"README links missing docs: {missing}"
