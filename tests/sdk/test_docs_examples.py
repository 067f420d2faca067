"""Every ```python block of docs/sdk.md runs, on its own, against a live daemon.

Each block runs in a fresh interpreter, as a reader would paste it, with the daemon's address
in ``SIGNET_HOST``/``SIGNET_PORT`` (how the SDK finds a daemon without arguments).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import DaemonProcess

DOC = Path(__file__).resolve().parents[2] / "docs" / "sdk.md"
BLOCKS = re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), flags=re.DOTALL)


def test_the_doc_has_examples() -> None:
    assert len(BLOCKS) >= 5


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_sdk_doc_example_runs(index: int, sdk_daemon: DaemonProcess) -> None:
    env = {
        **os.environ,
        "SIGNET_HOST": "127.0.0.1",
        "SIGNET_PORT": str(sdk_daemon.port),
        "SIGNET_WORKSPACE": str(sdk_daemon.workspace.root),
    }
    env.pop("SIGNET_TOKEN", None)
    proc = subprocess.run(
        [sys.executable, "-c", BLOCKS[index]], env=env, capture_output=True, text=True, timeout=60, check=False
    )
    assert proc.returncode == 0, f"example {index + 1} failed:\n{BLOCKS[index]}\n{proc.stderr[-2000:]}"
    assert proc.stdout.strip(), "examples print what they show"
