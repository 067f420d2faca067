"""``/api/secrets`` on the real app (in-process, local mode): storing, listing, runs with the
allow-list, timeouts, the queue, bounded output and the audit rows."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from signet.runtime import Runtime
from signet.workspace import Workspace
from tests.secrets.conftest import VALUE, assert_hidden

App = Callable[[Workspace], tuple[Runtime, TestClient]]


def audit_rows(rt: Runtime) -> list[dict[str, Any]]:
    def read(c: Any) -> list[dict[str, Any]]:
        cur = c.execute("SELECT * FROM secret_exec_runs ORDER BY created_at")
        cols = [d[0] for d in cur.description]
        return [dict(zip(cols, row, strict=True)) for row in cur.fetchall()]

    return rt.db.read(read)


def put(c: TestClient, name: str = "TOKEN", value: str = VALUE) -> None:
    r = c.post("/api/secrets", json={"name": name, "value": value})
    assert r.status_code == 200, r.text


def wait_for(c: TestClient, run_id: str, timeout: float = 30) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        run = c.get(f"/api/secrets/exec/{run_id}").json()
        if run["status"] not in ("queued", "running"):
            return dict(run)
        time.sleep(0.05)
    raise AssertionError(f"run {run_id} did not finish: {run}")


def test_store_list_replace_delete(secret_workspace: Callable[..., Workspace], open_app: App) -> None:
    ws = secret_workspace()
    _, c = open_app(ws)
    assert c.get("/api/secrets").json() == {"secrets": [], "key_store": None}
    assert c.post("/api/secrets", json={"name": "TOKEN", "value": VALUE}).json() == {"name": "TOKEN", "created": True}
    assert c.post("/api/secrets", json={"name": "TOKEN", "value": VALUE}).json()["created"] is False
    listed = c.get("/api/secrets")
    assert [s["name"] for s in listed.json()["secrets"]] == ["TOKEN"] and listed.json()["key_store"] == "file"
    assert_hidden(listed.text, "GET /api/secrets")
    # unknown fields, bad names and reserved names are refused without echoing the value
    for body in (
        {"name": "TOKEN", "value": VALUE, "extra": 1},
        {"name": "bad-name", "value": VALUE},
        {"name": "PATH", "value": VALUE},
        {"name": "TOKEN", "value": VALUE + "\x00"},
    ):
        r = c.post("/api/secrets", json=body)
        assert r.status_code in (400, 422), r.text
        assert_hidden(r.text, "an error answer")
    # JSON can carry a lone surrogate, which no file or environment can: a 422, never a 500
    for path, raw in (
        ("/api/secrets", b'{"name": "TOKEN", "value": "abc\\ud800def"}'),
        ("/api/secrets/exec", b'{"command": ["sh", "\\udc80"], "secrets": ["TOKEN"], "wait": true}'),
    ):
        r = c.post(path, content=raw, headers={"content-type": "application/json"})
        assert r.status_code == 422, r.text
    assert c.delete("/api/secrets/TOKEN").json() == {"name": "TOKEN", "deleted": True}
    r = c.delete("/api/secrets/TOKEN")
    assert r.status_code == 404 and r.json()["code"] == "not_found"


def test_exec_redacts_and_records(secret_workspace: Callable[..., Workspace], open_app: App) -> None:
    ws = secret_workspace()
    rt, c = open_app(ws)
    put(c)
    r = c.post(
        "/api/secrets/exec",
        json={
            "command": ["sh", "-c", "echo $TOKEN; echo $TOKEN | base64; echo done >&2"],
            "secrets": ["TOKEN"],
            "wait": True,
        },
        headers={"X-Signet-Actor": "tester"},
    )
    assert r.status_code == 200, r.text
    run = r.json()
    assert run["status"] == "done" and run["exit_code"] == 0 and run["redactions"] == 2
    assert run["stdout"].count("[REDACTED:TOKEN]") == 2 and run["stderr"] == "done\n"
    assert run["actor"] == "tester" and run["origin"] == "daemon" and run["secrets"] == ["TOKEN"]
    assert_hidden(r.text, "the exec answer")
    again = c.get(f"/api/secrets/exec/{run['id']}")
    assert again.json() == run
    (row,) = audit_rows(rt)
    assert row["status"] == "done" and row["actor"] == "tester"
    assert_hidden(repr(row), "the audit row")


def test_single_secret_route_queues_and_is_polled(secret_workspace: Callable[..., Workspace], open_app: App) -> None:
    ws = secret_workspace()
    _, c = open_app(ws)
    put(c)
    r = c.post("/api/secrets/TOKEN/exec", json={"command": ["sh", "-c", 'sleep 0.3; printf %s "$TOKEN"']})
    assert r.status_code == 202 and r.json()["status"] in ("queued", "running")
    run = wait_for(c, r.json()["id"])
    assert run["status"] == "done" and run["stdout"] == "[REDACTED:TOKEN]"
    missing = c.get("/api/secrets/exec/no-such-run")
    assert missing.status_code == 404 and missing.json()["code"] == "not_found"


def test_no_command_runs_by_default(make_workspace: Callable[..., Workspace], open_app: App) -> None:
    """The spec names no allow-list: exec is off until agent.yaml lists commands."""
    ws = make_workspace(embedding="none")
    rt, c = open_app(ws)
    put(c)
    r = c.post("/api/secrets/exec", json={"command": ["sh", "-c", "echo hi"], "secrets": ["TOKEN"], "wait": True})
    assert r.status_code == 403 and r.json()["code"] == "command_not_allowed"
    assert "secrets.exec.allow" in r.json()["error"]
    (row,) = audit_rows(rt)
    assert row["status"] == "refused" and row["exit_code"] is None and "allow" in row["error"]


def test_commands_off_the_list_are_refused(
    secret_workspace: Callable[..., Workspace], open_app: App, tmp_path: Path
) -> None:
    tools = tmp_path / "tools"
    tools.mkdir()
    echo = Path("/bin/echo") if Path("/bin/echo").exists() else Path("/usr/bin/echo")
    # two names for one program: allowing one must not allow the other
    (tools / "allowed-tool").symlink_to(echo)
    (tools / "other-tool").symlink_to(echo)
    ws = secret_workspace(allow=["sh", str(tools / "allowed-tool")])
    rt, c = open_app(ws)
    put(c)

    def exec_(*command: str) -> Any:
        return c.post("/api/secrets/exec", json={"command": list(command), "secrets": ["TOKEN"], "wait": True})

    ok = exec_(str(tools / "allowed-tool"), "hello")
    assert ok.status_code == 200 and ok.json()["stdout"] == "hello\n"
    for command, code in (
        ((str(tools / "other-tool"), "x"), 403),
        (("bash", "-c", "echo $TOKEN"), 403),
        (("ls",), 403),
        (("./sh",), 400),
        (("no-such-program-anywhere",), 403),
    ):
        r = exec_(*command)
        assert r.status_code == code, (command, r.text)
        assert "\n" not in r.json()["error"]
    refused = [row for row in audit_rows(rt) if row["status"] == "refused"]
    assert len(refused) == 5


def test_a_hanging_command_is_killed_at_its_timeout(
    secret_workspace: Callable[..., Workspace], open_app: App, tmp_path: Path
) -> None:
    ws = secret_workspace(timeoutSeconds=1, maxTimeoutSeconds=5)
    _, c = open_app(ws)
    put(c)
    pidfile = tmp_path / "child.pid"
    started = time.monotonic()
    r = c.post(
        "/api/secrets/exec",
        json={
            "command": ["sh", "-c", f"sleep 60 & echo $! > {pidfile}; echo started; wait"],
            "secrets": ["TOKEN"],
            "wait": True,
        },
    )
    elapsed = time.monotonic() - started
    run = r.json()
    assert run["status"] == "timeout" and run["exit_code"] == -9, run
    assert run["stdout"] == "started\n" and "timeout" in run["error"]
    assert elapsed < 30
    child = int(pidfile.read_text())
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and Path(f"/proc/{child}").exists() and "Z" not in _state(child):
        time.sleep(0.05)
    assert not Path(f"/proc/{child}").exists() or "Z" in _state(child), "the command's child outlived the timeout"
    over = c.post("/api/secrets/exec", json={"command": ["sh", "-c", "true"], "secrets": ["TOKEN"], "timeout_s": 6})
    assert over.status_code == 400 and "maxTimeoutSeconds" in over.json()["error"]


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1][:1]
    except (FileNotFoundError, IndexError):
        return "Z"


def test_missing_secrets_are_named(secret_workspace: Callable[..., Workspace], open_app: App) -> None:
    ws = secret_workspace()
    _, c = open_app(ws)
    put(c)
    r = c.post("/api/secrets/exec", json={"command": ["sh", "-c", "true"], "secrets": ["TOKEN", "NOPE"]})
    assert r.status_code == 404 and "NOPE" in r.json()["error"]
    r = c.post("/api/secrets/NOPE/exec", json={"command": ["sh", "-c", "true"]})
    assert r.status_code == 404


def test_the_command_sees_only_its_secrets_and_a_small_environment(
    secret_workspace: Callable[..., Workspace], open_app: App, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SIGNET_TEST_DAEMON_ONLY", "daemon-environment-value")
    ws = secret_workspace()
    _, c = open_app(ws)
    put(c)
    put(c, "OTHER", "other-secret-value-xyz")
    r = c.post("/api/secrets/exec", json={"command": ["sh", "-c", "env"], "secrets": ["TOKEN"], "wait": True})
    env = r.json()["stdout"]
    assert "TOKEN=[REDACTED:TOKEN]" in env
    assert "SIGNET_TEST_DAEMON_ONLY" not in env and "OTHER" not in env and "other-secret-value" not in env
    assert "PATH=" in env


def test_long_output_is_cut_without_showing_part_of_a_value(
    secret_workspace: Callable[..., Workspace], open_app: App
) -> None:
    ws = secret_workspace(maxOutputBytes=1024)
    _, c = open_app(ws)
    put(c)
    for pad in range(1010, 1030, 3):  # the value straddles the cut at byte 1024
        script = f"head -c {pad} /dev/zero | tr '\\\\0' x; printf %s \"$TOKEN\"; head -c 5000 /dev/zero | tr '\\\\0' y"
        run = c.post(
            "/api/secrets/exec", json={"command": ["sh", "-c", script], "secrets": ["TOKEN"], "wait": True}
        ).json()
        assert run["truncated"] is True
        visible = run["stdout"].replace("[REDACTED:TOKEN]", "")
        assert VALUE[:4] not in visible and VALUE[-4:] not in visible, pad
        assert len(run["stdout"].encode()) <= 1024 + len("[REDACTED:TOKEN]")


def test_a_command_that_cannot_start_is_an_error_run(
    secret_workspace: Callable[..., Workspace], open_app: App, tmp_path: Path
) -> None:
    script = tmp_path / "broken"
    script.write_text("#!/no/such/interpreter\n")
    script.chmod(0o755)
    ws = secret_workspace(allow=[str(script)])
    _, c = open_app(ws)
    put(c)
    run = c.post("/api/secrets/exec", json={"command": [str(script)], "secrets": ["TOKEN"], "wait": True}).json()
    assert run["status"] == "error" and "could not start" in run["error"] and run["exit_code"] is None


def test_runs_left_by_a_stopped_daemon_are_marked(secret_workspace: Callable[..., Workspace], open_app: App) -> None:
    ws = secret_workspace(maxConcurrent=1)
    rt, c = open_app(ws)
    put(c)
    slow = c.post("/api/secrets/exec", json={"command": ["sh", "-c", "sleep 30"], "secrets": ["TOKEN"]}).json()
    queued = c.post("/api/secrets/exec", json={"command": ["sh", "-c", "true"], "secrets": ["TOKEN"]}).json()
    deadline = time.monotonic() + 10
    while c.get(f"/api/secrets/exec/{slow['id']}").json()["status"] != "running" and time.monotonic() < deadline:
        time.sleep(0.05)
    started = time.monotonic()
    rt.secrets.stop()
    assert time.monotonic() - started < 10  # the running command was killed, not waited for
    assert c.get(f"/api/secrets/exec/{slow['id']}").json()["status"] == "cancelled"
    assert c.get(f"/api/secrets/exec/{queued['id']}").json()["status"] == "interrupted"
    rt.secrets.start()


def test_a_long_token_wrapped_by_base64_is_redacted(secret_workspace: Callable[..., Workspace], open_app: App) -> None:
    long_value = "github_pat_11AAAAAAA0" + "x1Y2z3" * 12
    ws = secret_workspace()
    _, c = open_app(ws)
    put(c, "GH_TOKEN", long_value)
    r = c.post(
        "/api/secrets/GH_TOKEN/exec",
        json={"command": ["sh", "-c", "echo $GH_TOKEN | base64; echo $GH_TOKEN | base64 -w 16"], "wait": True},
    )
    run = r.json()
    assert run["status"] == "done" and run["redactions"] == 2, run
    assert_hidden(r.text, "the exec answer", long_value)
    assert_hidden(r.text.replace("\\n", ""), "the exec answer, unwrapped", long_value)
