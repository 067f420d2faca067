"""Modes: local is decided by the peer address (never Host), Host/Origin checks, hybrid,
binding refused in local mode; once against a real uvicorn daemon."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient

from signet.auth.bind import check_bind
from signet.config import Settings
from signet.daemon.app import create_app
from signet.errors import ConfigError
from signet.workspace import Workspace
from tests.auth.conftest import bearer, configure, expired_token, token_for
from tests.conftest import DaemonProcess, free_port, start_runtime

REMOTE = ("10.1.2.3", 5000)
LOOPBACK = ("127.0.0.1", 5000)


def _ws(make_workspace: Callable[..., Workspace], mode: str, **auth: Any) -> Workspace:
    return configure(make_workspace(embedding="none", memory={"pipelineV2": {"enabled": False}}), mode, **auth)


def test_hybrid_remote_caller_with_host_localhost_gets_401(make_workspace: Callable[..., Workspace]) -> None:
    ws = _ws(make_workspace, "hybrid")
    rt = start_runtime(ws)
    try:
        app = create_app(rt, manage_runtime=False)
        with TestClient(app, base_url="http://localhost:3850", client=REMOTE) as remote:
            r = remote.get("/api/memories", headers={"Host": "localhost"})
            assert r.status_code == 401 and r.json()["code"] == "unauthorized"
            assert r.headers["www-authenticate"] == "Bearer"
            assert remote.post("/api/memory/remember", json={"content": "x"}).status_code == 401
            assert remote.get("/health").status_code == 200  # public
            who = remote.get("/api/auth/whoami").json()
            assert who["local"] is False and who["authenticated"] is False
            ok = remote.get("/api/memories", headers=bearer(token_for(ws, "readonly")))
            assert ok.status_code == 200
        with TestClient(app, base_url="http://127.0.0.1:3850", client=LOOPBACK) as local:
            assert local.get("/api/memories").status_code == 200  # loopback peer: full access
            assert local.post("/api/memory/remember", json={"content": "local write"}).status_code == 200
            assert local.get("/api/auth/whoami").json()["local"] is True
            # a reverse proxy on this host relaying a remote caller is not local
            assert local.get("/api/memories", headers={"X-Forwarded-For": "203.0.113.9"}).status_code == 401
            # a loopback caller that sends a token is held to it
            held = bearer(token_for(ws, "readonly"))
            assert local.post("/api/memory/remember", headers=held, json={"content": "y"}).status_code == 403
            assert local.get("/api/memories", headers=bearer(expired_token(ws))).status_code == 401
            # a foreign Host from a loopback peer (DNS rebinding) is refused
            r = local.get("/api/memories", headers={"Host": "evil.example:3850"})
            assert r.status_code == 403 and r.json()["reason"] == "host_not_allowed"
            r = local.get("/api/memories", headers={"Origin": "https://evil.example"})
            assert r.status_code == 403 and r.json()["reason"] == "origin_not_allowed"
            assert "access-control-allow-origin" not in r.headers
    finally:
        rt.stop()


def test_local_mode_host_checks_and_no_tokens(make_workspace: Callable[..., Workspace]) -> None:
    ws = _ws(make_workspace, "local", allowedHosts=["signet.internal"])
    rt = start_runtime(ws)
    try:
        with TestClient(create_app(rt, manage_runtime=False), base_url="http://127.0.0.1:3850", client=LOOPBACK) as c:
            for host in ("localhost", "127.0.0.1:3850", "[::1]:3850", "signet.internal"):
                assert c.get("/api/memories", headers={"Host": host}).status_code == 200, host
            for host in ("evil.example", "127.0.0.1.evil.example", "localhost.evil.example:3850"):
                assert c.get("/api/memories", headers={"Host": host}).status_code == 403, host
            assert c.get("/api/memories", headers=bearer("garbage")).status_code == 200  # local: tokens ignored
    finally:
        rt.stop()


def test_team_mode_loopback_needs_a_token_too(make_workspace: Callable[..., Workspace]) -> None:
    ws = _ws(make_workspace, "local")
    from tests.conftest import write_config

    write_config(ws, authMode="team")  # the spec's top-level spelling wins
    rt = start_runtime(ws)
    try:
        with TestClient(create_app(rt, manage_runtime=False), base_url="http://127.0.0.1:3850", client=LOOPBACK) as c:
            assert c.get("/api/memories").status_code == 401
            assert c.get("/api/memories", headers=bearer(token_for(ws, "agent"))).status_code == 200
            assert (
                c.get("/api/auth/whoami", headers=bearer(token_for(ws, "agent", sub="zed"))).json()["claims"]["sub"]
                == "zed"
            )
    finally:
        rt.stop()


def test_token_endpoint_and_whoami(make_workspace: Callable[..., Workspace]) -> None:
    ws = _ws(make_workspace, "team")
    rt = start_runtime(ws)
    try:
        with TestClient(create_app(rt, manage_runtime=False), base_url="http://localhost", client=REMOTE) as c:
            admin = bearer(token_for(ws, "admin"))
            r = c.post(
                "/api/auth/token",
                headers=admin,
                json={"sub": "bot", "role": "readonly", "project": "p", "ttlSeconds": 60},
            )
            assert r.status_code == 200
            tok = r.json()["token"]
            who = c.get("/api/auth/whoami", headers=bearer(tok)).json()
            assert who["claims"]["role"] == "readonly" and who["claims"]["scope"] == {"project": "p"}
            assert who["project"] == "p"
            assert c.post("/api/auth/token", headers=bearer(tok), json={"sub": "x"}).status_code == 403
            bad = c.post("/api/auth/token", headers=admin, json={"sub": "x", "role": "root"})
            assert bad.status_code == 422
    finally:
        rt.stop()


def test_check_bind_refuses_non_loopback_in_local_mode() -> None:
    check_bind("127.0.0.1", Settings())
    check_bind("::1", Settings())
    check_bind("localhost", Settings())
    with pytest.raises(ConfigError, match=r"refusing to listen on 0\.0\.0\.0"):
        check_bind("0.0.0.0", Settings())
    check_bind("0.0.0.0", Settings.model_validate({"auth": {"mode": "team"}}))
    check_bind("10.0.0.5", Settings.model_validate({"authMode": "hybrid"}))


def test_daemon_refuses_to_start_on_a_public_address_in_local_mode(make_workspace: Callable[..., Workspace]) -> None:
    ws = _ws(make_workspace, "local")
    proc = subprocess.run(
        [sys.executable, "-m", "signet.cli.entry", "daemon", "--host", "0.0.0.0", "--port", str(free_port())],
        capture_output=True,
        text=True,
        timeout=60,
        env={"SIGNET_WORKSPACE": str(ws.root), "PATH": "/usr/bin:/bin"},
    )
    assert proc.returncode != 0
    assert "refusing to listen on 0.0.0.0" in proc.stderr and "security.md" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_real_daemon_hybrid_host_check(
    make_workspace: Callable[..., Workspace], start_daemon: Callable[..., DaemonProcess]
) -> None:
    ws = _ws(make_workspace, "hybrid")
    d = start_daemon(ws)
    with d.client() as c:
        assert c.get("/api/memories").status_code == 200  # loopback peer
        r = c.get("/api/memories", headers={"Host": "attacker.example"})
        assert r.status_code == 403 and r.json()["reason"] == "host_not_allowed"
        assert c.get("/api/memories", headers=bearer("forged.token")).status_code == 401
    assert httpx.get(f"http://localhost:{d.port}/health", timeout=5).status_code == 200


def _non_loopback_ipv4() -> str | None:
    import socket

    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        s.connect(("10.255.255.255", 1))  # no packet is sent: this only picks the outgoing interface
        ip = str(s.getsockname()[0])
    except OSError:
        return None
    finally:
        s.close()
    return None if ip.startswith("127.") or ip == "0.0.0.0" else ip


def test_real_daemon_on_a_second_address_remote_peer_needs_a_token(make_workspace: Callable[..., Workspace]) -> None:
    """A real uvicorn daemon in hybrid mode on this machine's non-loopback address: requests
    arrive from that address (not loopback), so ``Host: localhost`` does not make them local."""
    import time

    ip = _non_loopback_ipv4()
    if ip is None:
        pytest.skip("no non-loopback IPv4 address on this machine")
    ws = _ws(make_workspace, "hybrid")  # the bind address is an allowed Host without configuring it
    port = free_port()
    log = ws.root / "daemon-remote.log"
    with log.open("ab") as fh:
        proc = subprocess.Popen(
            [sys.executable, "-m", "signet.cli.entry", "daemon", "--host", ip, "--port", str(port)],
            stdout=fh,
            stderr=subprocess.STDOUT,
            env={**os.environ, "SIGNET_WORKSPACE": str(ws.root)},
        )
    try:
        url = f"http://{ip}:{port}"
        deadline = time.monotonic() + 30
        while True:
            assert proc.poll() is None, log.read_text()[-2000:]
            try:
                if httpx.get(f"{url}/health", timeout=0.5).status_code == 200:
                    break
            except httpx.HTTPError:
                assert time.monotonic() < deadline, log.read_text()[-2000:]
                time.sleep(0.05)
        with httpx.Client(base_url=url, timeout=10) as c:
            r = c.get("/api/memories", headers={"Host": "localhost"})
            assert r.status_code == 401 and r.json() == {
                "error": "authentication required: send Authorization: Bearer <token>",
                "code": "unauthorized",
            }
            assert c.get("/api/auth/whoami").json()["local"] is False
            assert c.get("/api/memories", headers=bearer(token_for(ws, "readonly"))).status_code == 200
            assert (
                c.post(
                    "/api/memory/remember", headers=bearer(token_for(ws, "readonly")), json={"content": "x"}
                ).status_code
                == 403
            )
            assert c.get("/api/memories", headers={"Host": "evil.example"}).status_code == 403
    finally:
        proc.terminate()
        proc.wait(timeout=20)
