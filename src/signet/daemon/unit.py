"""The daemon as a system service that starts at login and restarts on failure: a systemd
user unit on Linux, a launchd agent on macOS (docs/service.md).

Rendering is pure (text in, text out) so tests parse what would be installed; the paths follow
each system's rule: ``$XDG_CONFIG_HOME/systemd/user/signet.service`` (default
``~/.config``), ``~/Library/LaunchAgents/ai.signet.daemon.plist``. The unit runs
``signet daemon`` in the foreground with the workspace in its environment, so it serves the
same workspace as the ``signet`` that installed it.
"""

from __future__ import annotations

import os
import plistlib
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

Platform = Literal["systemd", "launchd"]
UNIT_NAME = "signet.service"
LAUNCHD_LABEL = "ai.signet.daemon"
RESTART_SEC = 5


def detect_platform() -> Platform | None:
    """systemd on Linux, launchd on macOS; None elsewhere."""
    if sys.platform == "darwin":
        return "launchd"
    if sys.platform.startswith("linux"):
        return "systemd"
    return None


def unit_path(platform: Platform, home: Path | None = None) -> Path:
    home = home or Path.home()
    if platform == "launchd":
        return home / "Library" / "LaunchAgents" / f"{LAUNCHD_LABEL}.plist"
    config = os.environ.get("XDG_CONFIG_HOME")
    base = Path(config) if config and Path(config).is_absolute() else home / ".config"
    return base / "systemd" / "user" / UNIT_NAME


@dataclass(frozen=True)
class ServiceSpec:
    argv: list[str]
    """The daemon's command line: ``signet daemon …`` with absolute paths."""
    workspace: Path
    env: dict[str, str]
    """Environment the daemon runs with (``SIGNET_WORKSPACE`` and whatever else was set)."""


def _systemd_quote(arg: str, *, dollar: bool = True) -> str:
    """One word of ExecStart (``dollar``: ``$`` is expanded there) or Environment: ``%``
    specifiers escaped, quoted when it has spaces, quotes or backslashes."""
    arg = arg.replace("%", "%%")
    if dollar:
        arg = arg.replace("$", "$$")
    if arg and not any(c in arg for c in " \t\"'\\;"):
        return arg
    return '"' + arg.replace("\\", "\\\\").replace('"', '\\"') + '"'


def render_systemd(spec: ServiceSpec) -> str:
    env = "\n".join(f"Environment={_systemd_quote(f'{k}={v}', dollar=False)}" for k, v in sorted(spec.env.items()))
    return (
        "# Written by `signet service install` (docs/service.md); `signet service uninstall` removes it.\n"
        "[Unit]\n"
        f"Description=Signet memory daemon ({spec.workspace})\n"
        "\n"
        "[Service]\n"
        "Type=simple\n"
        f"ExecStart={' '.join(_systemd_quote(a) for a in spec.argv)}\n"
        f"{env}\n"
        f"WorkingDirectory={str(spec.workspace).replace('%', '%%')}\n"
        "Restart=on-failure\n"
        f"RestartSec={RESTART_SEC}\n"
        "TimeoutStopSec=30\n"
        "\n"
        "[Install]\n"
        "WantedBy=default.target\n"
    )


def render_launchd(spec: ServiceSpec) -> bytes:
    log = spec.workspace / ".daemon" / "logs" / "launchd.log"
    plist = {
        "Label": LAUNCHD_LABEL,
        "ProgramArguments": spec.argv,
        "EnvironmentVariables": dict(sorted(spec.env.items())),
        "WorkingDirectory": str(spec.workspace),
        "RunAtLoad": True,
        "KeepAlive": {"SuccessfulExit": False},  # restarted when it fails, not after a clean `signet stop`
        "ThrottleInterval": RESTART_SEC,
        "ProcessType": "Background",
        "StandardOutPath": str(log),
        "StandardErrorPath": str(log),
    }
    return plistlib.dumps(plist)


def render(platform: Platform, spec: ServiceSpec) -> bytes:
    return render_launchd(spec) if platform == "launchd" else render_systemd(spec).encode()


def manager_commands(platform: Platform, path: Path, action: Literal["enable", "disable"]) -> list[list[str]]:
    """What registers the written file with the service manager (or unregisters it)."""
    if platform == "systemd":
        if action == "enable":
            return [["systemctl", "--user", "daemon-reload"], ["systemctl", "--user", "enable", UNIT_NAME]]
        return [["systemctl", "--user", "disable", UNIT_NAME], ["systemctl", "--user", "daemon-reload"]]
    domain = f"gui/{os.getuid()}"
    if action == "enable":
        return [["launchctl", "bootstrap", domain, str(path)]]
    return [["launchctl", "bootout", f"{domain}/{LAUNCHD_LABEL}"]]


def status_commands(platform: Platform) -> list[list[str]]:
    if platform == "systemd":
        return [["systemctl", "--user", "is-enabled", UNIT_NAME], ["systemctl", "--user", "is-active", UNIT_NAME]]
    return [["launchctl", "print", f"gui/{os.getuid()}/{LAUNCHD_LABEL}"]]
