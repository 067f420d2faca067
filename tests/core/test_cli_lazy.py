"""The ``signet`` script imports only the module of the command asked for
(:mod:`signet.cli.commands`): the table must name exactly what the modules register, and a
known command must run, with its help and its errors, without the rest of the CLI."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import signet.cli.main  # noqa: F401  (registers every command on the app)
from signet.cli.app import app
from signet.cli.commands import COMMANDS, MODULES

SHOW_LOADED = """
import atexit, sys
def show():
    names = sorted(m.split(".")[2] for m in sys.modules if m.count(".") == 2 and m.startswith("signet.cli."))
    print("LOADED " + " ".join(names), file=sys.stderr)
atexit.register(show)
sys.argv = ["signet", *sys.argv[1:]]
from signet.cli.entry import run
run()
"""


def registered() -> dict[str, set[str]]:
    """Every top-level command and group on the app -> the modules that define it."""
    found: dict[str, set[str]] = {}
    for command in app.registered_commands:
        assert command.callback is not None
        name = command.name or command.callback.__name__.replace("_", "-")
        found.setdefault(name, set()).add(command.callback.__module__)
    for group in app.registered_groups:
        sub = group.typer_instance
        assert sub is not None
        name = group.name or sub.info.name
        assert isinstance(name, str)
        mods = {c.callback.__module__ for c in sub.registered_commands if c.callback is not None}
        if sub.registered_callback is not None and sub.registered_callback.callback is not None:
            mods.add(sub.registered_callback.callback.__module__)
        found.setdefault(name, set()).update(mods)
    return found


def test_the_table_names_every_command_and_the_module_that_registers_it() -> None:
    found = registered()
    assert set(COMMANDS) == set(found), "signet.cli.commands.COMMANDS is out of date"
    for name, module in COMMANDS.items():
        assert f"signet.cli.{module}" in found[name], name
    assert set(COMMANDS.values()) <= set(MODULES)


def run_script(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "SIGNET_WORKSPACE": str(tmp_path / "ws"), "HOME": str(tmp_path)}
    return subprocess.run(
        [sys.executable, "-c", SHOW_LOADED, *args], capture_output=True, text=True, env=env, timeout=120
    )


def loaded(proc: subprocess.CompletedProcess[str]) -> set[str]:
    line = next(x for x in proc.stderr.splitlines() if x.startswith("LOADED"))
    return set(line.split()[1:])


def test_a_known_command_loads_its_module_alone(tmp_path: Path) -> None:
    status = run_script(tmp_path, "status", "--help")
    assert status.returncode == 0, status.stderr
    assert "Usage: signet status" in status.stdout
    mods = loaded(status)
    assert "daemon" in mods
    assert not mods & {"setup", "wizard", "llm_detect", "bench", "install", "main"}, mods

    # Its errors are the CLI's usual one line and exit code.
    bad = run_script(tmp_path, "recall", "--limit", "many", "x")
    assert bad.returncode == 2
    assert bad.stderr.startswith("error: ") and "--limit" in bad.stderr
    assert "main" not in loaded(bad)


def test_help_and_unknown_names_load_every_command(tmp_path: Path) -> None:
    helped = run_script(tmp_path, "--help")
    assert helped.returncode == 0, helped.stderr
    assert {"main", *MODULES} <= loaded(helped)
    for name in ("remember", "status", "bench", "migrate-storage"):
        assert name in helped.stdout

    unknown = run_script(tmp_path, "rememebr", "x")
    assert unknown.returncode == 2
    assert "rememebr" in unknown.stderr
