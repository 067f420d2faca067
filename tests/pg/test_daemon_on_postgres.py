"""``storage.backend: postgres`` in agent.yaml, through the real CLI and a real daemon on a
throwaway PostgreSQL 15 cluster (tests/pgcluster.py): start, remember/recall over HTTP,
status showing the store and its pool, stop; a wrong password, an unreachable server and a
missing ``postgres`` extra each refuse the start in one line that says what to do and never
shows the password; a server restart under load costs at most a clear 503 per request in
flight, never a 500, and loses nothing acknowledged."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator

import httpx
import pytest

from signet import instance
from signet.workspace import Workspace
from tests import pgcluster
from tests.conftest import DaemonProcess, free_port

PASSWORD_ENV = "SIGNET_TEST_DAEMON_PG_PASSWORD"


@pytest.fixture(scope="module")
def cluster() -> pgcluster.Cluster:
    try:
        return pgcluster.shared("debian15")
    except pgcluster.Unavailable as exc:
        pytest.skip(f"PostgreSQL unavailable: {exc}")


def pg_workspace(make_workspace: Callable[..., Workspace], url: str) -> Workspace:
    return make_workspace(
        embedding="none", storage={"backend": "postgres", "url": url, "password": f"env:{PASSWORD_ENV}"}
    )


def cli(ws: Workspace, *args: str, password: str | None, extra: str = "") -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "SIGNET_WORKSPACE": str(ws.root)}
    env.pop(PASSWORD_ENV, None)
    if password is not None:
        env[PASSWORD_ENV] = password
    code = extra + "import sys\nfrom signet.cli.entry import run\nsys.argv = ['signet', *sys.argv[1:]]\nrun()\n"
    return subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=120, env=env, check=False
    )


def count_rows(url: str, password: str | None, sql: str) -> int:
    import psycopg

    with psycopg.connect(url, password=password) as conn:
        row = conn.execute(sql).fetchone()
        assert row is not None
        return int(row[0])


def test_start_remember_recall_status_stop_on_postgres(
    cluster: pgcluster.Cluster, make_workspace: Callable[..., Workspace]
) -> None:
    url = cluster.new_database(password=False)
    ws = pg_workspace(make_workspace, url)
    port = free_port()
    started = cli(ws, "start", "--port", str(port), "--wait", "60", password=cluster.password)
    assert started.returncode == 0, started.stdout + started.stderr
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30) as c:
            r = c.post("/api/memory/remember", json={"content": "The staging cluster runs PostgreSQL on three nodes"})
            assert r.status_code == 200, r.text
            mid = r.json()["id"]
            out = c.post("/api/memory/recall", json={"query": "staging cluster nodes"}).json()
            assert [x["id"] for x in out["results"]] == [mid]
            st = c.get("/api/status").json()
        # the row is in PostgreSQL, and the workspace's SQLite file was never made
        assert count_rows(url, cluster.password, f"SELECT COUNT(*) FROM memories WHERE id = '{mid}'") == 1
        assert not ws.database_path().exists()
        store = st["store"]
        assert store["backend"] == "postgres" and store["user"] == "postgres"
        assert store["location"] == f"127.0.0.1:{cluster.port}/{url.rsplit('/', 1)[1]}"
        assert st["database"] == store["location"]
        assert store["pool"]["max"] == 8 and store["pool"]["open"] >= 1 and store["pool"]["waiting"] == 0
        shown = cli(ws, "status", "--port", str(port), password=None)
        assert shown.returncode == 0, shown.stderr
        assert "postgres 127.0.0.1" in shown.stdout and "connections" in shown.stdout
        as_json = cli(ws, "status", "--port", str(port), "--json", password=None)
        assert json.loads(as_json.stdout)["store"]["backend"] == "postgres"
        assert cluster.password is not None
        for text in (shown.stdout, as_json.stdout, json.dumps(st)):
            assert cluster.password not in text
    finally:
        stopped = cli(ws, "stop", password=None)
    assert stopped.returncode == 0, stopped.stderr
    assert instance.running(ws.daemon_dir) is None
    logs = "".join(p.read_text() for p in ws.logs_dir.glob("*"))
    assert cluster.password not in logs


def refused(r: subprocess.CompletedProcess[str]) -> str:
    assert r.returncode != 0, r.stdout
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), r.stderr
    return lines[0]


def test_a_wrong_password_refuses_the_start_in_one_line_without_the_password(
    cluster: pgcluster.Cluster, make_workspace: Callable[..., Workspace]
) -> None:
    ws = pg_workspace(make_workspace, cluster.new_database(password=False))
    wrong = "Wr0ng-p@ss:word/with?chars"
    line = refused(cli(ws, "daemon", "--port", str(free_port()), password=wrong))
    assert "password authentication failed" in line and "storage.password" in line, line
    assert wrong not in line
    started = cli(ws, "start", "--port", str(free_port()), password=wrong)
    assert started.returncode != 0 and "storage.password" in started.stderr, started.stderr
    assert wrong not in started.stdout + started.stderr
    assert instance.running(ws.daemon_dir) is None  # nothing left behind
    assert wrong not in "".join(p.read_text() for p in ws.logs_dir.glob("*"))


def test_an_unreachable_server_refuses_the_start_in_one_line(make_workspace: Callable[..., Workspace]) -> None:
    ws = pg_workspace(make_workspace, f"postgresql://signet@127.0.0.1:{free_port()}/signet")
    line = refused(cli(ws, "daemon", "--port", str(free_port()), password="s3cret-never-shown"))
    assert "cannot open PostgreSQL at" in line and "check that the server runs" in line, line
    assert "s3cret-never-shown" not in line


def test_a_missing_postgres_extra_is_one_line_naming_it(make_workspace: Callable[..., Workspace]) -> None:
    ws = pg_workspace(make_workspace, "postgresql://signet@127.0.0.1:5432/signet")
    block = "import sys\nfor m in ('psycopg', 'psycopg_pool', 'sqlglot'):\n    sys.modules[m] = None\n"
    line = refused(cli(ws, "daemon", "--port", str(free_port()), password=None, extra=block))
    assert line == (
        "error: storage.backend: postgres needs PostgreSQL support (psycopg is not installed): "
        "pip install 'signet-memory[postgres]'"
    )


@pytest.fixture
def private_cluster() -> Iterator[pgcluster.Cluster]:
    """A cluster of this test's own: restarting the shared one would cut every other test's."""
    try:
        c = pgcluster.start("debian15")
    except pgcluster.Unavailable as exc:
        pytest.skip(f"PostgreSQL unavailable: {exc}")
    try:
        yield c
    finally:
        c.stop()


@pytest.mark.slow
def test_a_server_restart_costs_at_most_a_503_and_loses_nothing_acknowledged(
    private_cluster: pgcluster.Cluster,
    make_workspace: Callable[..., Workspace],
    start_daemon: Callable[..., DaemonProcess],
) -> None:
    url = private_cluster.new_database(password=False)
    ws = pg_workspace(make_workspace, url)
    assert private_cluster.password is not None
    d = start_daemon(ws, env={PASSWORD_ENV: private_cluster.password})
    acknowledged: list[str] = []
    answers: dict[int, int] = {}
    bad: list[str] = []
    stop = threading.Event()

    def writer(n: int) -> None:
        with d.client(timeout=30) as c:
            i = 0
            while not stop.is_set():
                i += 1
                r = c.post("/api/memory/remember", json={"content": f"writer {n} fact number {i} about restarts"})
                answers[r.status_code] = answers.get(r.status_code, 0) + 1
                if r.status_code == 200:
                    acknowledged.append(r.json()["id"])
                elif r.status_code != 503 or "error" not in r.json():
                    bad.append(f"{r.status_code} {r.text[:300]}")
                r = c.post("/api/memory/recall", json={"query": "restarts", "limit": 3})
                answers[r.status_code] = answers.get(r.status_code, 0) + 1
                if r.status_code not in (200, 503):
                    bad.append(f"recall {r.status_code} {r.text[:300]}")

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(3)]
    for t in threads:
        t.start()
    time.sleep(1.0)
    before = len(acknowledged)
    private_cluster.restart()
    time.sleep(1.5)
    stop.set()
    for t in threads:
        t.join(timeout=60)
    print(f"answers by status across the restart: {answers}; remembers acknowledged: {len(acknowledged)}")
    assert not bad, bad
    assert before > 0 and len(acknowledged) > before, (before, len(acknowledged), answers)
    with d.client() as c:  # the next requests are served: the writer and the readers reconnected
        r = c.post("/api/memory/remember", json={"content": "after the restart, one more fact"})
        assert r.status_code == 200, r.text
        acknowledged.append(r.json()["id"])
        assert c.get(f"/api/memory/{acknowledged[0]}").status_code == 200
        assert c.get("/health").json()["status"] == "ok"
    stored = count_rows(
        url, private_cluster.password, f"SELECT COUNT(*) FROM memories WHERE id IN ({_ids(acknowledged)})"
    )
    assert stored == len(set(acknowledged)), answers


def _ids(ids: list[str]) -> str:
    return ", ".join("'" + i.replace("'", "") + "'" for i in ids)
