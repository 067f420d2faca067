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


def test_ruff_format() -> None:
    r = run("ruff", "format", "--check", "src", "tests", "bench")
    assert r.returncode == 0, "run `ruff format src tests bench`:\n" + r.stdout + r.stderr


def test_mypy_strict() -> None:
    r = run("mypy", "src/signet")
    assert r.returncode == 0, r.stdout + r.stderr


def test_import_layers() -> None:
    """The layer and no-cycle contracts of pyproject.toml ([tool.importlinter]): an import that
    runs back up the layers, or a cycle between sibling packages, fails here."""
    r = subprocess.run(
        [str(Path(sys.executable).parent / "lint-imports")], cwd=ROOT, capture_output=True, text=True, timeout=600
    )
    assert r.returncode == 0, r.stdout + r.stderr
    assert "2 kept, 0 broken" in r.stdout, r.stdout
