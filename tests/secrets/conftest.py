"""Workspaces with secrets: ``sh`` on the exec allow-list, no embedder (these tests are about
the store, the runs and who may reach them, not recall)."""

from __future__ import annotations

import base64
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from signet.workspace import Workspace

VALUE = "tok-7f3a9c2e-SECRET-b81d"
"""The value the tests hide: long enough for every encoded form, short enough that ``base64``
prints it on one line."""


def leaked_forms(value: str = VALUE) -> dict[str, str]:
    """What would give ``value`` away if it appeared in a response, a log or a row."""
    raw = value.encode()
    return {
        "raw": value,
        "base64": base64.b64encode(raw).decode(),
        "base64 with newline (echo | base64)": base64.b64encode(raw + b"\n").decode()[:-4],
        "urlsafe base64": base64.urlsafe_b64encode(raw).decode().rstrip("="),
        "hex": raw.hex(),
        "percent-encoded": quote(value, safe=""),
    }


def assert_hidden(text: str, where: str, value: str = VALUE) -> None:
    found = [name for name, form in leaked_forms(value).items() if form in text]
    assert found == [], f"the secret leaked into {where} as {found}"


@pytest.fixture
def secret_workspace(make_workspace: Callable[..., Workspace]) -> Callable[..., Workspace]:
    """``secret_workspace(**exec_settings)``: a workspace whose exec allow-list is ``["sh"]``
    unless ``allow`` says otherwise."""

    def make(**exec_settings: Any) -> Workspace:
        exec_settings.setdefault("allow", ["sh"])
        return make_workspace(embedding="none", secrets={"exec": exec_settings})

    return make


def cli(ws: Workspace, *args: str, input: str | None = None, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """The real ``signet`` command in a subprocess, on ``ws``."""
    return subprocess.run(
        [sys.executable, "-m", "signet.cli.entry", *args],
        capture_output=True,
        text=True,
        env={**os.environ, "SIGNET_WORKSPACE": str(ws.root)},
        timeout=timeout,
        input=input,
    )


def workspace_text(root: Path) -> dict[str, str]:
    """Every file under ``root`` (database, WAL, logs, store, key excluded), as text."""
    out = {}
    for path in root.rglob("*"):
        if path.is_file() and path.name != "key":
            out[str(path.relative_to(root))] = path.read_bytes().decode("utf-8", errors="replace")
    return out
