"""``signet service install|uninstall|status``: the systemd unit and the launchd plist that
would run the daemon at login, written under a temp HOME / XDG_CONFIG_HOME, parsed, checked
by ``systemd-analyze verify`` where present, and removed. Nothing is registered with this
machine's service manager (``--no-manager``)."""

from __future__ import annotations

import configparser
import os
import plistlib
import shlex
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from signet.daemon.unit import ServiceSpec, render_systemd
from signet.workspace import Workspace
from tests.conftest import free_port, pg_password_env


def signet(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("XDG_", "SIGNET_"))}
    env.update(
        HOME=str(tmp_path / "home"),
        XDG_CONFIG_HOME=str(tmp_path / "config"),
        SIGNET_WORKSPACE=str(tmp_path / "my ws"),
        SIGNET_PORT="3999",
    )
    return subprocess.run(
        [sys.executable, "-m", "signet.cli.entry", *args], capture_output=True, text=True, env=env, timeout=120
    )


def test_systemd_unit_install_status_uninstall(tmp_path: Path) -> None:
    out = signet(tmp_path, "service", "install", "--platform", "systemd", "--no-manager")
    assert out.returncode == 0, out.stderr
    path = tmp_path / "config" / "systemd" / "user" / "signet.service"
    assert out.stdout == f"wrote {path}\n"
    unit = configparser.ConfigParser(interpolation=None, strict=False)
    unit.optionxform = str  # type: ignore[assignment,method-assign]
    unit.read_string(path.read_text())
    svc = unit["Service"]
    assert svc["Type"] == "simple" and svc["Restart"] == "on-failure" and int(svc["RestartSec"]) > 0
    assert unit["Install"]["WantedBy"] == "default.target"
    exec_start = svc["ExecStart"]
    assert exec_start.split()[0] == str(Path(sys.executable).with_name("signet")) and " daemon " in exec_start
    environment = path.read_text()
    assert f'Environment="SIGNET_WORKSPACE={tmp_path / "my ws"}"' in environment  # quoted: the path has a space
    assert "Environment=SIGNET_PORT=3999" in environment
    assert svc["WorkingDirectory"] == str(tmp_path / "my ws")
    status = signet(tmp_path, "service", "status", "--platform", "systemd", "--no-manager")
    assert status.returncode == 0 and status.stdout == f"installed: {path}\n"
    again = signet(tmp_path, "service", "install", "--platform", "systemd", "--no-manager")
    assert again.stdout == f"unchanged {path}\n"
    gone = signet(tmp_path, "service", "uninstall", "--platform", "systemd", "--no-manager")
    assert gone.returncode == 0 and not path.exists()
    missing = signet(tmp_path, "service", "status", "--platform", "systemd", "--no-manager")
    assert missing.returncode == 3 and "not installed" in missing.stdout
    twice = signet(tmp_path, "service", "uninstall", "--platform", "systemd", "--no-manager")
    assert twice.returncode == 1 and twice.stderr.count("\n") == 1 and twice.stderr.startswith("error: ")


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="systemd-analyze is not installed")
def test_systemd_analyze_verify_accepts_the_unit(tmp_path: Path) -> None:
    assert signet(tmp_path, "service", "install", "--platform", "systemd", "--no-manager").returncode == 0
    path = tmp_path / "config" / "systemd" / "user" / "signet.service"
    (tmp_path / "my ws").mkdir()
    res = subprocess.run(
        ["systemd-analyze", "verify", "--man=no", str(path)], capture_output=True, text=True, timeout=60
    )
    assert res.returncode == 0 and "signet.service" not in res.stderr, res.stderr
    # and it would have said so: a broken unit is refused
    path.write_text(path.read_text().replace("Restart=on-failure", "Restart=sometimes"))
    broken = subprocess.run(["systemd-analyze", "verify", "--man=no", str(path)], capture_output=True, text=True)
    assert "restart specifier" in broken.stderr


def test_launchd_plist(tmp_path: Path) -> None:
    out = signet(tmp_path, "service", "install", "--platform", "launchd", "--no-manager")
    assert out.returncode == 0, out.stderr
    path = tmp_path / "home" / "Library" / "LaunchAgents" / "ai.signet.daemon.plist"
    plist = plistlib.loads(path.read_bytes())
    assert plist["Label"] == "ai.signet.daemon" and plist["RunAtLoad"] is True
    assert plist["KeepAlive"] == {"SuccessfulExit": False}  # restarted on failure
    assert plist["ProgramArguments"][1:3] == ["daemon", "--stderr-level"]
    assert plist["EnvironmentVariables"]["SIGNET_WORKSPACE"] == str(tmp_path / "my ws")
    assert signet(tmp_path, "service", "uninstall", "--platform", "launchd", "--no-manager").returncode == 0
    assert not path.exists()


def test_systemd_quoting_of_specials() -> None:
    spec = ServiceSpec(argv=["/opt/a b/signet", "daemon"], workspace=Path("/w/100%"), env={"PATH": "/x:$HOME"})
    text = render_systemd(spec)
    assert 'ExecStart="/opt/a b/signet" daemon' in text
    assert "WorkingDirectory=/w/100%%" in text
    assert "Environment=PATH=/x:$HOME" in text  # $ is not expanded in Environment=


def test_unknown_platform_is_one_line(tmp_path: Path) -> None:
    r = signet(tmp_path, "service", "install", "--platform", "windows", "--no-manager")
    assert r.returncode == 1 and r.stderr.count("\n") == 1 and "systemd or launchd" in r.stderr


def test_the_unit_s_command_runs_the_daemon_of_that_workspace(
    tmp_path: Path, make_workspace: Callable[..., Workspace]
) -> None:
    """What systemd would start: ExecStart with the unit's Environment, run here (not through
    systemd), serves the workspace on the port the installing shell had."""
    ws = make_workspace(embedding="none")
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("XDG_", "SIGNET_"))}
    env.update(HOME=str(tmp_path / "home"), XDG_CONFIG_HOME=str(tmp_path / "config"))
    env.update(
        SIGNET_WORKSPACE=str(ws.root), SIGNET_PORT=str(port), SIGNET_MODEL_CACHE=os.environ["SIGNET_MODEL_CACHE"]
    )
    args = [sys.executable, "-m", "signet.cli.entry", "service", "install", "--platform", "systemd", "--no-manager"]
    assert subprocess.run(args, env=env, capture_output=True, timeout=120).returncode == 0
    unit = configparser.ConfigParser(interpolation=None, strict=False)
    unit.optionxform = str  # type: ignore[assignment,method-assign]
    text = (tmp_path / "config" / "systemd" / "user" / "signet.service").read_text()
    unit.read_string(text)
    argv = shlex.split(unit["Service"]["ExecStart"])
    unit_env = dict(
        shlex.split(line.removeprefix("Environment="))[0].split("=", 1)
        for line in text.splitlines()
        if line.startswith("Environment=")
    )
    assert unit_env["SIGNET_WORKSPACE"] == str(ws.root.resolve()) and unit_env["SIGNET_PORT"] == str(port)
    proc = subprocess.Popen(
        argv,
        # a postgres test run's store password (storage.password: env:...) is the user's to give the unit
        env={"HOME": str(tmp_path / "home"), **unit_env, **pg_password_env()},
        cwd=unit["Service"]["WorkingDirectory"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        health = None
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                health = httpx.get(f"http://127.0.0.1:{port}/health", timeout=2)
                break
            except httpx.HTTPError:
                time.sleep(0.2)
        assert health is not None and health.status_code == 200, "the unit's command did not serve /health"
    finally:
        proc.send_signal(signal.SIGTERM)  # what systemd sends on stop
        # a clean stop: exit 0, or ended by the SIGTERM itself, which systemd counts as clean too
        # (SuccessExitStatus includes SIGTERM), so Restart=on-failure leaves it stopped
        assert proc.wait(timeout=30) in (0, -signal.SIGTERM)
