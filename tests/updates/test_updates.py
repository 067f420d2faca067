"""Updates against a package index the test serves on 127.0.0.1: the check, the API, the CLI,
pip resolving from that index (dry runs: nothing is installed into this environment), and the
scheduled check that installs only with autoInstall."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import httpx
import pytest
import yaml
from fastapi.testclient import TestClient

from signet import instance
from signet.config import UpdateSettings
from signet.errors import Conflict, InvalidRequest
from signet.runtime import Runtime
from signet.updates.service import UpdateService, restart_daemon
from signet.updates.versions import newest, pip_index
from signet.workspace import Workspace
from tests.conftest import DaemonProcess, free_port
from tests.updates.index_server import Index, serve_index

App = Callable[[Workspace], tuple[Runtime, TestClient]]
PROBE = "signet-update-probe"
CURRENT = version("signet-memory")


@pytest.fixture
def index() -> Iterator[Index]:
    with serve_index() as idx:
        yield idx


def settings(index: Index, **kw: object) -> UpdateSettings:
    return UpdateSettings.model_validate({"indexUrl": index.json_url, **kw})


def test_newest_skips_yanked_prereleases_and_junk() -> None:
    data = {
        "info": {"version": "9.9.9"},
        "releases": {
            "0.1.0": [{"yanked": False}],
            "0.2.0": [{"yanked": False}],
            "0.2.5": [{"yanked": True}],
            "0.3.0rc1": [{"yanked": False}],
            "not a version": [{}],
            "0.4.0": [],
        },
    }
    assert newest(data, prereleases=False) == "0.2.0"
    assert newest(data, prereleases=True) == "0.3.0rc1"
    assert newest({"info": {"version": "1.0"}}, prereleases=False) == "1.0"
    assert pip_index("https://pypi.org/pypi", None) == "https://pypi.org/simple"
    assert pip_index("http://h/pypi/", "http://other/simple") == "http://other/simple"


def test_check_against_the_local_index(index: Index, tmp_path: Path) -> None:
    index.publish("signet-memory", CURRENT)
    updates = UpdateService(settings(index), tmp_path)
    found = updates.check()
    assert (found.current, found.latest, found.available, found.error) == (CURRENT, CURRENT, False, None)
    index.publish("signet-memory", "99.0.0")
    index.publish("signet-memory", "100.0.0", yanked=True)
    index.publish("signet-memory", "101.0.0rc1")
    found = updates.check()
    assert (found.latest, found.available) == ("99.0.0", True)
    assert index.requests[-1] == "/pypi/signet-memory/json"
    assert UpdateService(settings(index, prereleases=True), tmp_path).check().latest == "101.0.0rc1"


def test_an_unreachable_or_unknown_index_is_an_answer_not_a_crash(index: Index, tmp_path: Path) -> None:
    closed = UpdateSettings.model_validate({"indexUrl": f"http://127.0.0.1:{free_port()}/pypi", "timeoutSeconds": 2})
    found = UpdateService(closed, tmp_path).check()
    assert found.available is False and found.error is not None and "unreachable" in found.error
    unknown = UpdateService(settings(index, package="no-such-package"), tmp_path).check()
    assert unknown.error is not None and "has no package" in unknown.error


def test_run_installs_only_the_version_a_check_reports(index: Index, tmp_path: Path) -> None:
    index.publish(PROBE, "2.0.0", wheel=True)
    updates = UpdateService(settings(index, package=PROBE), tmp_path)
    with pytest.raises(InvalidRequest, match=r"is 2\.0\.0, not 1\.0"):
        updates.run("1.0")
    done = updates.run("2.0.0", dry_run=True)
    assert done.installed is False and done.restarting is False and PROBE in done.output
    assert f"/files/{PROBE.replace('-', '_')}-2.0.0-py3-none-any.whl" in index.requests  # pip fetched it from here
    with pytest.raises(PackageNotFoundError):
        version(PROBE)  # a dry run installs nothing


def test_up_to_date_run_is_a_conflict_and_pip_never_runs(index: Index, tmp_path: Path) -> None:
    index.publish("signet-memory", CURRENT)
    with pytest.raises(Conflict, match="up to date"):
        UpdateService(settings(index), tmp_path).run(CURRENT)
    assert not [r for r in index.requests if r.startswith(("/simple", "/files"))]


class DryRunUpdates(UpdateService):
    """The scheduled path end to end, with pip kept to a dry run (this test's environment is
    shared: a real install would change it)."""

    def pip_argv(self, version: str, *, dry_run: bool) -> list[str]:
        return super().pip_argv(version, dry_run=True)


def test_the_scheduled_check_installs_only_with_auto_install(index: Index, tmp_path: Path) -> None:
    index.publish(PROBE, "2.0.0", wheel=True)
    restarted: list[Path] = []
    off = DryRunUpdates(settings(index, package=PROBE), tmp_path, restart=restarted.append)
    assert off.scheduled_check() is None and restarted == []
    assert not [r for r in index.requests if r.startswith("/files")]
    on = DryRunUpdates(settings(index, package=PROBE, autoInstall=True), tmp_path, restart=restarted.append)
    done = on.scheduled_check()
    assert done is not None and done.version == "2.0.0" and restarted == [tmp_path]
    assert UpdateSettings().check_interval_h == 0 and UpdateSettings().auto_install is False  # off by default


def test_api(index: Index, make_workspace: Callable[..., Workspace], open_app: App) -> None:
    index.publish(PROBE, "2.0.0", wheel=True)
    ws = make_workspace(embedding="none", update={"indexUrl": index.json_url, "package": PROBE})
    _, c = open_app(ws)
    found = c.get("/api/update/check").json()
    assert found["available"] is True and found["latest"] == "2.0.0" and found["current"] is None
    cfg = c.get("/api/update/config").json()
    assert cfg["pip_index_url"] == index.url + "/simple" and cfg["auto_install"] is False
    r = c.post("/api/update/run", json={"version": "2.0.0", "dry_run": True})
    assert r.status_code == 200 and r.json()["installed"] is False, r.text
    assert c.post("/api/update/run", json={"version": "3.0"}).status_code == 400
    assert c.post("/api/update/run", json={}).status_code == 422
    saved = c.post("/api/update/config", json={"check_interval_hours": 24, "auto_install": False})
    assert saved.status_code == 200 and saved.json()["restart_required"] is True
    on_disk = yaml.safe_load(ws.config_path.read_text())["update"]
    assert on_disk["checkIntervalHours"] == 24 and on_disk["indexUrl"] == index.json_url
    assert c.post("/api/update/config", json={"index_url": "http://evil/pypi"}).status_code == 422
    assert c.post("/api/update/config", json={"check_interval_hours": -1}).status_code == 422


def test_unreachable_index_over_the_api_is_200_with_an_error(
    make_workspace: Callable[..., Workspace], open_app: App
) -> None:
    ws = make_workspace(embedding="none", update={"indexUrl": f"http://127.0.0.1:{free_port()}/pypi"})
    _, c = open_app(ws)
    r = c.get("/api/update/check")
    assert r.status_code == 200 and r.json()["error"] and r.json()["available"] is False
    run = c.post("/api/update/run", json={"version": "1.0"})
    assert run.status_code == 400 and "unreachable" in run.json()["error"]


def test_cli(index: Index, make_workspace: Callable[..., Workspace]) -> None:
    index.publish(PROBE, "2.0.0", wheel=True)
    ws = make_workspace(embedding="none", update={"indexUrl": index.json_url, "package": PROBE})
    env = {**os.environ, "SIGNET_WORKSPACE": str(ws.root)}

    def signet(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "signet.cli.entry", "update", *args],
            capture_output=True,
            text=True,
            env=env,
            timeout=300,
            stdin=subprocess.DEVNULL,
        )

    check = signet("check")
    assert (
        check.returncode == 0 and check.stdout == f"{PROBE} 2.0.0 is available (installed: None); `signet update run`\n"
    )
    refused = signet("run")  # no terminal to ask on, no --yes: nothing installed
    assert refused.returncode == 1 and refused.stderr.count("\n") == 1 and "--yes" in refused.stderr
    dry = signet("run", "--dry-run")
    assert dry.returncode == 0 and dry.stdout == f"{PROBE} 2.0.0 resolves; nothing installed (dry run)\n", dry.stderr
    ws.config_path.write_text(ws.config_path.read_text().replace(index.url, f"http://127.0.0.1:{free_port()}"))
    down = signet("check")
    assert down.returncode == 1 and down.stderr.count("\n") == 1 and "unreachable" in down.stderr


def test_after_an_install_the_daemon_restarts_itself_on_its_own_port(
    make_workspace: Callable[..., Workspace], start_daemon: Callable[..., DaemonProcess]
) -> None:
    """The restart an install triggers (pip itself is covered above, as dry runs): a detached
    ``signet restart`` replaces the daemon, on the port it was started with (not the default)."""
    ws = make_workspace(embedding="none")
    d = start_daemon(ws)
    first = instance.read_instance(ws.daemon_dir)
    assert first is not None and first.pid == d.proc.pid and first.port == d.port
    restart_daemon(ws.root)
    try:
        assert d.proc.wait(timeout=60) is not None  # the old daemon was stopped
        deadline = time.monotonic() + 60
        now = None
        while time.monotonic() < deadline:
            now = instance.running(ws.daemon_dir)
            try:
                if now is not None and now.pid != first.pid and httpx.get(f"{d.url}/health", timeout=2).is_success:
                    break
            except httpx.HTTPError:  # started, not listening yet
                pass
            time.sleep(0.2)
        assert now is not None and now.pid != first.pid and now.port == d.port, "no new daemon on the same port"
    finally:
        subprocess.run(
            [sys.executable, "-m", "signet.cli.entry", "stop"],
            env={**os.environ, "SIGNET_WORKSPACE": str(ws.root)},
            capture_output=True,
            timeout=60,
        )
