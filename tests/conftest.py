"""Shared fixtures: real workspaces in temp dirs, a real Runtime, the real app, a real daemon.

- ``workspace``        a fresh workspace (agent.yaml with the local embedder) in tmp_path
- ``make_workspace``   factory: ``make_workspace(embedding="none", extra={...})``
- ``runtime``          a started Runtime on ``workspace`` with the embedder ready
- ``api``              a ``TestClient`` over the real FastAPI app of ``runtime`` (in-process)
- ``daemon``           a real ``signet daemon`` subprocess (uvicorn) on a free loopback port
- ``start_daemon``     factory for daemons on chosen workspaces (restart tests)
- ``model_cache``      the session's ``SIGNET_MODEL_CACHE`` (ONNX export of the bundled model)

The store: every workspace ``make_workspace`` builds uses SQLite (its file), unless the run
says ``SIGNET_TEST_STORAGE=postgres``: then its agent.yaml names a fresh database on the
session's PostgreSQL 15 cluster (tests/pgcluster.py), so the same tests run the runtime, the
in-process app, daemon subprocesses and the CLI on PostgreSQL, unchanged. A test that is about
the SQLite file by nature (corrupting it, PRAGMAs, the FTS5 index, file backups) is marked
``@pytest.mark.sqlite_only("why")`` and skipped in such a run (docs/team.md)::

    SIGNET_TEST_STORAGE=postgres pytest -m 'not long' tests/core/test_api_memory.py ...
"""

from __future__ import annotations

import atexit
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from fastapi.testclient import TestClient

from signet.daemon.app import create_app
from signet.runtime import Runtime
from signet.workspace import Workspace, setup_workspace

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

# One model cache for the whole session, set before anything runs so every daemon subprocess
# inherits it: the ONNX export is made once per session and never lands in the real home.
# A cache given from outside (SIGNET_MODEL_CACHE) is used as is and kept.
# Removed at exit (not in a fixture's teardown, which never runs when no test does).
if "SIGNET_MODEL_CACHE" not in os.environ:
    os.environ["SIGNET_MODEL_CACHE"] = tempfile.mkdtemp(prefix="signet-test-models-")
    atexit.register(shutil.rmtree, os.environ["SIGNET_MODEL_CACHE"], ignore_errors=True)

# `signet setup` links a `signet` launcher into $XDG_BIN_HOME (else ~/.local/bin): every test's
# setup links into this throwaway directory, never the real home's (tests/core/test_first_hour.py
# unsets it to test the ~/.local/bin default in a temporary HOME).
os.environ["XDG_BIN_HOME"] = tempfile.mkdtemp(prefix="signet-test-bin-")
atexit.register(shutil.rmtree, os.environ["XDG_BIN_HOME"], ignore_errors=True)

TEST_STORAGE = os.environ.get("SIGNET_TEST_STORAGE", "sqlite")
"""``sqlite`` (the default) or ``postgres``: which store every test workspace uses."""
if TEST_STORAGE not in ("sqlite", "postgres"):
    raise RuntimeError(f"SIGNET_TEST_STORAGE must be sqlite or postgres, not {TEST_STORAGE!r}")
PG_PASSWORD_ENV = "SIGNET_TEST_PG_PASSWORD"
"""Where a postgres run's workspaces read the cluster's password (storage.password: env:...):
set once the cluster runs, inherited by every daemon and CLI subprocess."""


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "sqlite_only(reason): about the SQLite file by nature (corruption, PRAGMAs, FTS5, file "
        "backups); skipped when SIGNET_TEST_STORAGE=postgres",
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if TEST_STORAGE != "postgres":
        return
    for item in items:
        mark = item.get_closest_marker("sqlite_only")
        if mark is not None:
            why = mark.args[0] if mark.args else mark.kwargs.get("reason", "about the SQLite file")
            item.add_marker(pytest.mark.skip(reason=f"sqlite_only: {why}"))


def pg_password_env() -> dict[str, str]:
    """The environment a postgres run's workspaces read their store password from (empty in a
    SQLite run): for a test that starts a process with an environment of its own."""
    value = os.environ.get(PG_PASSWORD_ENV)
    return {PG_PASSWORD_ENV: value} if value else {}


def pg_storage_section() -> dict[str, Any]:
    """agent.yaml's ``storage`` for a new test workspace in a postgres run: a fresh database."""
    from tests import pgcluster

    try:
        cluster = pgcluster.shared("debian15")
    except pgcluster.Unavailable as exc:
        pytest.skip(f"SIGNET_TEST_STORAGE=postgres but PostgreSQL is unavailable: {exc}")
    if cluster.password:
        os.environ[PG_PASSWORD_ENV] = cluster.password
    url = cluster.new_database(password=False)
    return {"backend": "postgres", "url": url, "password": f"env:{PG_PASSWORD_ENV}"}


# pytest-xdist's workers get COLUMNS=80 / LINES=24 in their environment, which every CLI run
# in a test inherits: Rich then wraps at 80 columns whatever the pseudo-terminal's size, and a
# long temp path splits mid-word. The tests size output by their terminal, as users' runs do.
for _name in ("COLUMNS", "LINES"):
    os.environ.pop(_name, None)

# Secret stores made by tests keep their key in a file in the test's workspace, never in the
# real OS keyring of the machine running the tests (keyring's own switch; daemons inherit it).
os.environ["PYTHON_KEYRING_BACKEND"] = "keyring.backends.fail.Keyring"


class StoreConnection:
    """A test's own autocommit connection to a workspace's store, whichever engine it is:
    SQLite's SQL in, rows by position and name out (signet.store.postgres translates it on
    PostgreSQL). For tests that inject a fault or read a table behind the daemon's back."""

    def __init__(self, ws: Workspace) -> None:
        settings = ws.settings()
        if settings.storage.backend == "postgres":
            from signet.store import pg_url
            from signet.store.postgres import Connection, PostgresDatabase

            target = pg_url.resolve(settings.storage.url or "", settings.storage.password)
            self._conn: Any = Connection(PostgresDatabase(target, apply_migrations=False)._connect(), target)
            self._close: Callable[[], None] = self._conn.raw.close
        else:
            from signet.store.database import connect

            self._conn = connect(ws.database_path())
            self._close = self._conn.close

    def execute(self, sql: str, params: Any = ()) -> Any:
        return self._conn.execute(sql, params)

    def executemany(self, sql: str, seq: Any) -> Any:
        return self._conn.executemany(sql, seq)

    def commit(self) -> None:
        """Every statement commits on its own (both engines' connections are autocommit)."""

    def close(self) -> None:
        self._close()

    def __enter__(self) -> StoreConnection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@pytest.fixture(scope="session")
def model_cache() -> Path:
    return Path(os.environ["SIGNET_MODEL_CACHE"])


def write_config(ws: Workspace, **sections: Any) -> None:
    """Deep-merge ``sections`` into the workspace's agent.yaml."""
    data = yaml.safe_load(ws.config_path.read_text()) if ws.config_path.exists() else {}
    data = data or {}

    def merge(dst: dict[str, Any], src: dict[str, Any]) -> None:
        for k, v in src.items():
            if isinstance(v, dict) and isinstance(dst.get(k), dict):
                merge(dst[k], v)
            else:
                dst[k] = v

    merge(data, sections)
    ws.config_path.write_text(yaml.safe_dump(data, sort_keys=False))


@pytest.fixture
def make_workspace(tmp_path: Path) -> Callable[..., Workspace]:
    counter = {"n": 0}

    def make(embedding: str = "local", **sections: Any) -> Workspace:
        counter["n"] += 1
        ws = Workspace(tmp_path / f"ws{counter['n']}")
        setup_workspace(ws, agent_name="test-agent", user_name="Tester", embedding_provider=embedding)
        # No LLM runs in tests unless a test points the pipeline at its fake server (tests/pipeline).
        write_config(ws, memory={"pipelineV2": {"extraction": {"provider": "none"}}})
        if TEST_STORAGE == "postgres":
            write_config(ws, storage=pg_storage_section())
        if sections:
            write_config(ws, **sections)
        return ws

    return make


@pytest.fixture
def workspace(make_workspace: Callable[..., Workspace]) -> Workspace:
    return make_workspace()


def wait_embedder(rt: Runtime, timeout: float = 120.0) -> None:
    if rt.settings.embedding.provider == "none":
        return
    deadline = time.monotonic() + timeout
    while rt.embeddings.state == "loading" and time.monotonic() < deadline:
        time.sleep(0.05)
    assert rt.embeddings.state == "ready", rt.embeddings.error


def start_runtime(ws: Workspace, *, wait: bool = True, storage: Any = None) -> Runtime:
    """``storage``: another store than the workspace's SQLite file (tests/core/test_api_memory.py
    runs on PostgreSQL too)."""
    rt = Runtime(ws, storage=storage).start()
    if wait:
        wait_embedder(rt)
    return rt


@pytest.fixture
def runtime(workspace: Workspace) -> Iterator[Runtime]:
    rt = start_runtime(workspace)
    try:
        yield rt
    finally:
        rt.stop()


@pytest.fixture
def open_app() -> Iterator[Callable[[Workspace], tuple[Runtime, TestClient]]]:
    """Factory: ``open_app(ws)`` starts a runtime on ``ws`` and a client over its real app; all
    are closed at teardown (for tests that need several, or a workspace configured first)."""
    opened: list[tuple[Runtime, TestClient]] = []

    def make(ws: Workspace) -> tuple[Runtime, TestClient]:
        rt = start_runtime(ws)
        client = TestClient(create_app(rt, manage_runtime=False), raise_server_exceptions=False)
        client.__enter__()
        opened.append((rt, client))
        return rt, client

    yield make
    for rt, client in opened:
        client.__exit__(None, None, None)
        rt.stop()


@pytest.fixture
def api(runtime: Runtime) -> Iterator[TestClient]:
    app = create_app(runtime, manage_runtime=False)
    with TestClient(app, raise_server_exceptions=False) as client:
        yield client


def default_sigint() -> None:
    """In the child before exec: Ctrl-C as a user's shell delivers it. A test run started in the
    background by a non-interactive shell ignores SIGINT, every child inherits that, and Python
    started with SIGINT ignored never raises KeyboardInterrupt (the Ctrl-C tests then hang)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class DaemonProcess:
    workspace: Workspace
    port: int
    proc: subprocess.Popen[bytes]
    log: Path

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def client(self, timeout: float = 30.0) -> httpx.Client:
        return httpx.Client(base_url=self.url, timeout=timeout)

    def wait_embedder(self, timeout: float = 120.0) -> None:
        deadline = time.monotonic() + timeout
        with self.client() as c:
            while time.monotonic() < deadline:
                st = c.get("/api/status").json()
                if st["embedding"]["state"] == "ready" and st["embedding"]["pending"] == 0:
                    return
                time.sleep(0.1)
        raise AssertionError(f"embedder not ready after {timeout}s: {st}")

    def stop(self, sig: int | None = None) -> None:
        if self.proc.poll() is None:
            if sig is None:
                self.proc.terminate()
            else:
                self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def launch_daemon(ws: Workspace, port: int | None = None, env: dict[str, str] | None = None) -> DaemonProcess:
    port = port or free_port()
    log = ws.root / f"daemon-test-{port}.log"
    with log.open("ab") as fh:  # the child keeps its own copy of the descriptor
        proc = subprocess.Popen(
            [sys.executable, "-m", "signet.cli.entry", "daemon", "--host", "127.0.0.1", "--port", str(port)],
            stdout=fh,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env={**os.environ, "SIGNET_WORKSPACE": str(ws.root), **(env or {})},
        )
    d = DaemonProcess(ws, port, proc, log)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"daemon exited with {proc.returncode}: {log.read_text()[-2000:]}")
        try:
            health = httpx.get(f"{d.url}/health", timeout=0.5)
            # "starting": it listens while its app is built (signet.daemon.boot); tests want the app
            if health.status_code == 200 and health.json().get("status") != "starting":
                return d
        except httpx.HTTPError:
            pass
        time.sleep(0.05)
    d.stop()
    raise AssertionError(f"daemon did not serve /health: {log.read_text()[-2000:]}")


@pytest.fixture
def start_daemon() -> Iterator[Callable[..., DaemonProcess]]:
    started: list[DaemonProcess] = []

    def start(ws: Workspace, port: int | None = None, env: dict[str, str] | None = None) -> DaemonProcess:
        d = launch_daemon(ws, port, env)
        started.append(d)
        return d

    yield start
    for d in started:
        d.stop()


@pytest.fixture
def daemon(workspace: Workspace, start_daemon: Callable[..., DaemonProcess]) -> DaemonProcess:
    return start_daemon(workspace)
