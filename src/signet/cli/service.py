"""``signet service install|uninstall|status``: run the daemon at login, restarted when it
fails: a systemd user unit (Linux) or a launchd agent (macOS) (docs/service.md).

``install`` writes the file and registers it with the service manager (``systemctl --user
enable``, ``launchctl bootstrap``): the daemon starts at the next login, or now with
``--start``. ``--no-manager`` only writes or removes the file.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from typing import Annotated

import typer

from signet.cli.app import app
from signet.daemon import unit
from signet.errors import SignetError
from signet.harnesses.base import signet_argv
from signet.harnesses.merge import write_atomic
from signet.workspace import Workspace

service_app = typer.Typer(
    help="Run the daemon at login (systemd user unit / launchd agent): install, uninstall, status.",
    no_args_is_help=True,
)
app.add_typer(service_app, name="service")

PASSED_ENV = ("SIGNET_PORT", "SIGNET_HOST", "SIGNET_MODEL_CACHE", "PATH")
"""Carried into the unit from the installing shell, so the service serves the same address and
finds the same programs (tasks run harness CLIs). Never a token."""

PlatformOpt = Annotated[str | None, typer.Option("--platform", help="systemd or launchd (default: this system's).")]
ManagerOpt = Annotated[
    bool,
    typer.Option("--manager/--no-manager", help="Register with systemctl/launchctl (off: only the file)."),
]


def _platform(name: str | None) -> unit.Platform:
    if name is None:
        found = unit.detect_platform()
        if found is None:
            raise SignetError("no supported service manager here (systemd on Linux, launchd on macOS)")
        return found
    if name not in ("systemd", "launchd"):
        raise SignetError(f"unknown platform {name!r}; choose systemd or launchd")
    return "systemd" if name == "systemd" else "launchd"


def spec_for(ws: Workspace) -> unit.ServiceSpec:
    env = {k: os.environ[k] for k in PASSED_ENV if os.environ.get(k)}
    env["SIGNET_WORKSPACE"] = str(ws.root.resolve())
    return unit.ServiceSpec(argv=[*signet_argv(), "daemon", "--stderr-level", "warning"], workspace=ws.root, env=env)


def _run_manager(commands: list[list[str]], *, check: bool) -> None:
    for argv in commands:
        if shutil.which(argv[0]) is None:
            typer.secho(f"note: {argv[0]} not found; run `{' '.join(argv)}` yourself", err=True, fg="yellow")
            return
        try:
            res = subprocess.run(argv, capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            raise SignetError(f"`{' '.join(argv)}` did not finish within 30 s") from None
        if res.returncode != 0:
            said = (res.stderr or res.stdout).strip().splitlines()
            message = f"`{' '.join(argv)}` failed: {said[-1] if said else f'exit {res.returncode}'}"
            if check:
                raise SignetError(message)
            typer.secho(f"note: {message}", err=True, fg="yellow")


@service_app.command("install")
def install(
    platform: PlatformOpt = None,
    manager: ManagerOpt = True,
    start: Annotated[bool, typer.Option("--start", help="Also start it now (stop a running daemon first).")] = False,
) -> None:
    """Write the unit (or plist) that runs `signet daemon` at login, restarted on failure."""
    plat = _platform(platform)
    ws = Workspace.from_env()
    path = unit.unit_path(plat)
    content = unit.render(plat, spec_for(ws))
    old = path.read_bytes() if path.exists() else None
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, content, mode=0o644)
    said = "unchanged" if old == content else "updated" if old is not None else "wrote"
    typer.echo(f"{said} {path}")
    if manager:
        _run_manager(unit.manager_commands(plat, path, "enable"), check=True)
        if start and plat == "systemd":
            _run_manager([["systemctl", "--user", "start", unit.UNIT_NAME]], check=True)
        typer.echo("the daemon starts at login" + (" and was started now" if start else ""))


@service_app.command("uninstall")
def uninstall(platform: PlatformOpt = None, manager: ManagerOpt = True) -> None:
    """Stop and unregister the service and remove its file."""
    plat = _platform(platform)
    path = unit.unit_path(plat)
    if not path.exists():
        raise SignetError(f"no service installed ({path} does not exist)")
    if manager:
        _run_manager(unit.manager_commands(plat, path, "disable"), check=False)
    path.unlink()
    typer.echo(f"removed {path}")


@service_app.command("status")
def status(platform: PlatformOpt = None, manager: ManagerOpt = True) -> None:
    """Whether the service file exists, matches this install, and what the manager says."""
    plat = _platform(platform)
    ws = Workspace.from_env()
    path = unit.unit_path(plat)
    if not path.exists():
        typer.echo(f"not installed ({path} does not exist; `signet service install`)")
        raise typer.Exit(3)
    current = path.read_bytes() == unit.render(plat, spec_for(ws))
    typer.echo(f"installed: {path}" + ("" if current else " (differs from this install: run `signet service install`)"))
    if manager:
        for argv in unit.status_commands(plat):
            if shutil.which(argv[0]) is None:
                break
            try:
                res = subprocess.run(argv, capture_output=True, text=True, timeout=10, stdin=subprocess.DEVNULL)
            except subprocess.TimeoutExpired:
                break
            first = (res.stdout or res.stderr).strip().splitlines()
            typer.echo(f"{' '.join(argv[2:]) if plat == 'systemd' else 'launchctl'}: {first[0] if first else '-'}")
