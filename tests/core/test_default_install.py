"""The default install (`pip install -e '.[local]'`, the README's first command) has no
PostgreSQL driver and no SQL translator: the CLI, the daemon and the runtime must import and
run without them, and the one command that needs them says how to get them."""

from __future__ import annotations

import subprocess
import sys

import pytest

BLOCK = "import sys\nfor m in ('psycopg', 'psycopg_pool', 'sqlglot'):\n    sys.modules[m] = None  # import fails\n"


def run(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", BLOCK + code], capture_output=True, text=True, timeout=120)


def test_the_cli_daemon_and_runtime_import_without_the_postgres_extra() -> None:
    r = run(
        "import signet.cli.main, signet.daemon.app, signet.daemon.server, signet.runtime, signet.mcp.stdio\n"
        "sys.argv = ['signet', '--help']\n"
        "from signet.cli.entry import run\nrun()\n"
    )
    assert r.returncode == 0 and "migrate-storage" in r.stdout, r.stderr


@pytest.mark.parametrize("to", ["postgresql://u@db/x", "sqlite:/tmp/never.db"])
def test_migrate_storage_without_the_extra_says_how_to_get_it(to: str) -> None:
    r = run(f"sys.argv = ['signet', 'migrate-storage', '--to', {to!r}]\nfrom signet.cli.entry import run\nrun()\n")
    assert r.returncode != 0 and r.stdout == "", r.stdout
    assert r.stderr.strip().splitlines() == [
        "error: signet migrate-storage needs PostgreSQL support (psycopg is not installed): "
        "pip install 'signet-memory[postgres]'"
    ], r.stderr
