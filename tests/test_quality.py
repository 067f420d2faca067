"""The package stays typed (mypy strict) and lint-clean (ruff): part of the test command."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", *args], cwd=ROOT, capture_output=True, text=True, timeout=600)


def test_ruff() -> None:
    r = run("ruff", "check", "src", "tests")
    assert r.returncode == 0, r.stdout + r.stderr


def test_mypy_strict() -> None:
    r = run("mypy", "src/signet")
    assert r.returncode == 0, r.stdout + r.stderr
