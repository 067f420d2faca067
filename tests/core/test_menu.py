"""Bare ``signet``: a menu on a terminal (driven by ``pexpect``) whose entries run the real
commands against a real daemon; the help when piped, as before."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pexpect  # type: ignore[import-untyped]
import pytest

from tests.conftest import free_port

SIGNET = [str(Path(sys.executable).with_name("signet"))]  # the installed console script, as users run it


def environment(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SIGNET_", "XDG_"))}
    return {
        **env,
        "HOME": str(tmp_path / "home"),
        "SIGNET_WORKSPACE": str(tmp_path / "ws"),
        "SIGNET_HOST": "127.0.0.1",
        "SIGNET_PORT": str(free_port()),
        "TERM": "xterm",
        "PYTHONPATH": str(Path(__file__).resolve().parents[2] / "src"),
    }


def choose(child: pexpect.spawn, choice: str) -> None:
    child.expect_exact("Choose")
    child.expect_exact(": ")
    child.sendline(choice)


def test_piped_signet_prints_the_help(tmp_path: Path) -> None:
    env = environment(tmp_path)
    bare = subprocess.run(SIGNET, env=env, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=60)
    helped = subprocess.run([*SIGNET, "--help"], env=env, capture_output=True, text=True, timeout=60)
    assert "Usage: signet" in bare.stderr and "Commands:" in bare.stderr  # as before the menu: on stderr, exit 2
    assert bare.stderr == helped.stdout and bare.returncode == 2
    assert "Choose" not in bare.stdout + bare.stderr


@pytest.mark.timeout(300)
def test_menu_runs_the_real_commands(tmp_path: Path) -> None:
    env = environment(tmp_path)
    setup = subprocess.run(
        [*SIGNET, "setup", "-y", "--embedding=none", "--llm=none", "--no-launcher", "--no-git"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert setup.returncode == 0, setup.stderr
    child = pexpect.spawn(
        SIGNET[0], SIGNET[1:], env=env, cwd=str(tmp_path), encoding="utf-8", timeout=90, dimensions=(50, 160)
    )
    try:
        choose(child, "launch")  # not an entry: refused with the reason, asked again
        child.expect_exact("unknown choice 'launch'")
        choose(child, "start")
        child.expect_exact("started")
        choose(child, "remember")
        child.expect_exact("Memory to store")
        child.expect_exact(": ")
        child.sendline("")  # empty: asked again
        child.expect_exact("type the memory")
        child.expect_exact(": ")
        child.sendline("the staging database is called heron-7")
        child.expect(r"(stored|remembered|saved)")
        choose(child, "3")  # recall, by its number
        child.expect_exact("Search for")
        child.expect_exact(": ")
        child.sendline("staging database")
        child.expect_exact("heron-7")
        choose(child, "status")
        child.expect_exact("memories")
        choose(child, "stop")
        child.expect_exact("stopped")
        choose(child, "quit")
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
        subprocess.run([*SIGNET, "stop"], env=env, capture_output=True, timeout=60)
    assert child.exitstatus == 0


def test_menu_ends_on_end_of_input(tmp_path: Path) -> None:
    child = pexpect.spawn(
        SIGNET[0], SIGNET[1:], env=environment(tmp_path), encoding="utf-8", timeout=60, dimensions=(50, 160)
    )
    child.expect_exact("Choose")
    child.expect_exact(": ")
    child.sendeof()
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
