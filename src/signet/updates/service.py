"""Checking for, and installing, a newer Signet.

Nothing here contacts the index until asked: ``check`` is called by ``GET /api/update/check``
and ``signet update check``, and by the daemon's scheduled check only when
``update.checkIntervalHours`` is above 0. An install runs ``python -m pip install
<package>==<version>`` in the daemon's own environment and happens only when asked with the
version a check found (``POST /api/update/run``, ``signet update run``), or when a scheduled
check finds one and ``update.autoInstall`` is on. After an install the daemon restarts
itself: a detached ``signet restart`` (a new interpreter loads the new code).
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import threading
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

from signet import instance
from signet.config import UpdateSettings, load_settings
from signet.errors import Conflict, InvalidRequest
from signet.harnesses.base import signet_argv
from signet.updates import versions
from signet.updates.models import UpdateCheck, UpdateConfig, UpdateConfigRequest, UpdateConfigSaved, UpdateRun

log = logging.getLogger(__name__)
OUTPUT_TAIL = 4000


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def restart_argv(workspace: Path) -> list[str]:
    """``signet restart`` on the address the running daemon serves (its ``daemon.json``), so
    a daemon started with ``--port`` comes back on that port."""
    argv = [*signet_argv(), "restart"]
    running = instance.read_instance(workspace / ".daemon")
    if running is not None:
        argv += ["--host", running.host, "--port", str(running.port)]
    return argv


def restart_daemon(workspace: Path) -> None:
    """Start ``signet restart`` detached: it stops this daemon and starts the updated one."""
    env = {**os.environ, "SIGNET_WORKSPACE": str(workspace)}
    subprocess.Popen(
        restart_argv(workspace),
        env=env,
        start_new_session=True,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


class UpdateService:
    def __init__(
        self,
        settings: UpdateSettings,
        workspace: Path,
        *,
        restart: Callable[[Path], None] = restart_daemon,
    ) -> None:
        self.settings = settings
        self.workspace = workspace
        self.restart = restart
        self.last: UpdateCheck | None = None
        self._install_lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # -- check --------------------------------------------------------------------------------
    def check(self) -> UpdateCheck:
        """Read the index; an unreachable or odd index is an answer with ``error`` set."""
        s = self.settings
        current = versions.installed_version(s.package)
        latest: str | None = None
        error: str | None = None
        try:
            latest = versions.newest(
                versions.fetch_index(s.index_url, s.package, s.timeout_s), prereleases=s.prereleases
            )
        except InvalidRequest as exc:
            error = exc.message
        self.last = UpdateCheck(
            package=s.package,
            current=current,
            latest=latest,
            available=error is None and versions.is_newer(latest, current),
            index_url=s.index_url,
            checked_at=_now(),
            error=error,
        )
        return self.last

    def config(self) -> UpdateConfig:
        s = self.settings
        return UpdateConfig(
            index_url=s.index_url,
            pip_index_url=versions.pip_index(s.index_url, s.pip_index_url),
            package=s.package,
            check_interval_hours=s.check_interval_h,
            auto_install=s.auto_install,
            prereleases=s.prereleases,
        )

    def save_config(self, change: UpdateConfigRequest) -> UpdateConfigSaved:
        """Write the change into agent.yaml's ``update`` section (validated before it replaces
        the file; comments in agent.yaml are not kept). The index URLs are not settable here:
        pointing pip at another index is a change to the file, by its owner."""
        path = self.workspace / "agent.yaml"
        data: Any = yaml.safe_load(path.read_text(encoding="utf-8")) if path.exists() else {}
        data = data if isinstance(data, dict) else {}
        section = data.get("update") if isinstance(data.get("update"), dict) else {}
        values = {
            "checkIntervalHours": change.check_interval_hours,
            "autoInstall": change.auto_install,
            "prereleases": change.prereleases,
        }
        section.update({k: v for k, v in values.items() if v is not None})
        data["update"] = section
        tmp = path.with_name(".agent.yaml.update.tmp")
        tmp.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
        try:
            saved = load_settings(tmp).update  # a ConfigError here leaves agent.yaml as it was
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
        tmp.replace(path)
        return UpdateConfigSaved(
            config=UpdateService(saved, self.workspace).config(), restart_required=saved != self.settings
        )

    # -- install ------------------------------------------------------------------------------
    def pip_argv(self, version: str, *, dry_run: bool) -> list[str]:
        s = self.settings
        argv = [sys.executable, "-m", "pip", "install", "--disable-pip-version-check", "--no-input"]
        argv += ["--index-url", versions.pip_index(s.index_url, s.pip_index_url)]
        argv += ["--dry-run"] if dry_run else []
        return [*argv, f"{s.package}=={version}"]

    def run(self, version: str, *, dry_run: bool = False, restart: bool = True) -> UpdateRun:
        """Install ``version``, which must be the newest release a check finds now (the caller
        confirms what it saw); then restart the daemon when ``restart``."""
        found = self.check()
        if found.error is not None:
            raise InvalidRequest(found.error)
        if not found.available or found.latest is None:
            raise Conflict(f"{found.package} {found.current} is up to date (the index has {found.latest})")
        if version != found.latest:
            raise InvalidRequest(f"the update to install is {found.latest}, not {version}; check again")
        if not self._install_lock.acquire(blocking=False):
            raise Conflict("an update is being installed")
        try:
            try:
                res = subprocess.run(
                    self.pip_argv(version, dry_run=dry_run),
                    capture_output=True,
                    text=True,
                    timeout=self.settings.install_timeout_s,
                    stdin=subprocess.DEVNULL,
                )
            except subprocess.TimeoutExpired:
                raise InvalidRequest(f"pip did not finish within {self.settings.install_timeout_s:g} s") from None
        finally:
            self._install_lock.release()
        output = (res.stdout + res.stderr)[-OUTPUT_TAIL:]
        if res.returncode != 0:
            last = output.strip().splitlines()[-1] if output.strip() else f"exit {res.returncode}"
            raise InvalidRequest(f"pip could not install {found.package} {version}: {last}")
        restarting = restart and not dry_run
        log.info("update: %s %s %s", found.package, version, "resolved (dry run)" if dry_run else "installed")
        return UpdateRun(
            package=found.package, version=version, installed=not dry_run, restarting=restarting, output=output
        )

    # -- the scheduled check ------------------------------------------------------------------
    def start(self) -> None:
        if self.settings.check_interval_h <= 0 or self._thread is not None:
            return
        self._stop.clear()
        self._thread = threading.Thread(target=self._loop, name="signet-update-check", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def _loop(self) -> None:
        interval = self.settings.check_interval_h * 3600
        while not self._stop.wait(min(interval, 60) if self.last is None else interval):
            self.scheduled_check()

    def scheduled_check(self) -> UpdateRun | None:
        """One scheduled check: report what it found, and install it when autoInstall is on."""
        found = self.check()
        if found.error is not None:
            log.warning("update check: %s", found.error)
            return None
        if not found.available or found.latest is None:
            return None
        if not self.settings.auto_install:
            log.info("update check: %s %s is available (installed: %s)", found.package, found.latest, found.current)
            return None
        try:
            done = self.run(found.latest)
        except (InvalidRequest, Conflict) as exc:
            log.warning("update: installing %s failed: %s", found.latest, exc.message)
            return None
        self.restart(self.workspace)
        return done
