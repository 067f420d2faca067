"""Tokens: every tampered byte fails, expiry, revocation across a real daemon restart,
the secret file's mode, the CLI."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import time
from collections.abc import Callable

import pytest
from fastapi.testclient import TestClient

from signet.auth.tokens import issue, load_secret, secret_path, verify
from signet.daemon.app import create_app
from signet.errors import InvalidRequest, Unauthorized
from signet.workspace import Workspace
from tests.auth.conftest import bearer, configure, token_for
from tests.conftest import DaemonProcess, start_runtime

B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"


def _team(make_workspace: Callable[..., Workspace]) -> Workspace:
    return configure(make_workspace(embedding="none", memory={"pipelineV2": {"enabled": False}}), "team")


def test_secret_is_32_bytes_0600_and_stable(tmp_path: os.PathLike[str]) -> None:
    from pathlib import Path

    root = Path(tmp_path)
    s1 = load_secret(root)
    mode = stat.S_IMODE(secret_path(root).stat().st_mode)
    assert mode == 0o600 and len(s1) == 32
    assert load_secret(root) == s1
    secret_path(root).write_bytes(b"short")
    with pytest.raises(InvalidRequest, match="32-byte"):
        load_secret(root)


def test_every_tampered_byte_is_refused(make_workspace: Callable[..., Workspace]) -> None:
    ws = _team(make_workspace)
    tok = token_for(ws, "readonly", sub="tamper", project="p")
    rt = start_runtime(ws)
    try:
        with TestClient(create_app(rt, manage_runtime=False), base_url="http://localhost", client=("10.9.9.9", 1)) as c:
            assert c.get("/api/memories", headers=bearer(tok)).status_code == 200
            refused = 0
            for i, ch in enumerate(tok):
                if ch == ".":
                    continue
                # any other base64url character: a different byte in payload or signature
                forged = tok[:i] + (B64[(B64.index(ch) + 1) % 64]) + tok[i + 1 :]
                if forged == tok:
                    continue
                r = c.get("/api/memories", headers=bearer(forged))
                assert r.status_code == 401, (i, r.status_code)
                assert r.json() == {"error": "invalid or expired token", "code": "unauthorized"}
                refused += 1
            assert refused == len(tok) - 1
            for bad in ("", tok + "A", tok.replace(".", ""), tok + ".x", "Bearer", tok.split(".")[0] + "."):
                assert (
                    c.get("/api/memories", headers=bearer(bad) if bad else {"Authorization": "Bearer "}).status_code
                    == 401
                )
            assert c.get("/api/memories", headers={"Authorization": f"Basic {tok}"}).status_code == 401
    finally:
        rt.stop()


def test_expiry_is_honoured(make_workspace: Callable[..., Workspace]) -> None:
    ws = _team(make_workspace)
    secret = load_secret(ws.root)
    tok, claims = issue(secret, sub="a", role="agent", ttl_s=60, now=1000.0)
    assert verify(tok, secret, now=1059.0) == claims
    with pytest.raises(Unauthorized):
        verify(tok, secret, now=1060.0)
    # Through the real app: the same token is accepted up to its last second and refused from
    # its expiry on. The daemon's clock is moved, not slept through, so a slow start under load
    # cannot expire the token before its first request.
    issued = time.time()
    short = token_for(ws, "agent", ttl=60, now=issued)
    rt = start_runtime(ws)
    try:
        with TestClient(create_app(rt, manage_runtime=False), base_url="http://localhost", client=("10.9.9.9", 1)) as c:
            st = rt.auth.synced()
            st.clock = lambda: issued + 59
            assert c.get("/api/memories", headers=bearer(short)).status_code == 200
            st.clock = lambda: issued + 60
            expired = c.get("/api/memories", headers=bearer(short))
            assert expired.status_code == 401
            assert expired.json() == {"error": "invalid or expired token", "code": "unauthorized"}
            # and on the wall clock: a token whose expiry passed before the daemon started
            st.clock = time.time
            assert (
                c.get("/api/memories", headers=bearer(token_for(ws, "agent", ttl=60, now=issued - 61))).status_code
                == 401
            )
            assert c.get("/api/memories", headers=bearer(token_for(ws, "agent", ttl=3600))).status_code == 200
    finally:
        rt.stop()


def _cli(ws: Workspace, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "signet.cli.entry", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "SIGNET_WORKSPACE": str(ws.root)},
    )


def test_revocation_survives_a_daemon_restart(
    make_workspace: Callable[..., Workspace], start_daemon: Callable[..., DaemonProcess]
) -> None:
    ws = _team(make_workspace)
    made = _cli(ws, "token", "create", "--sub", "leaky", "--role", "agent", "--project", "web", "--ttl", "1h")
    assert made.returncode == 0, made.stderr
    leaked = made.stdout.strip()
    keep = _cli(ws, "token", "create", "--sub", "keeper", "--role", "readonly").stdout.strip()
    admin = token_for(ws, "admin")
    assert _cli(ws, "token", "create", "--sub", "x", "--role", "root").returncode == 1
    assert _cli(ws, "token", "create", "--sub", "x", "--ttl", "soon").returncode == 1

    d = start_daemon(ws)
    with d.client() as c:
        who = c.get("/api/auth/whoami", headers=bearer(leaked)).json()
        assert who["claims"]["sub"] == "leaky" and who["claims"]["scope"] == {"project": "web"}
        assert who["claims"]["exp"] - who["claims"]["iat"] == 3600
        assert c.get("/api/memories", headers=bearer(leaked)).status_code == 200
        r = c.post("/api/auth/revoke", headers=bearer(leaked), json={"token": leaked})
        assert r.status_code == 403  # only admins revoke
        r = c.post("/api/auth/revoke", headers=bearer(admin), json={"token": leaked, "reason": "leaked"})
        assert r.status_code == 200 and r.json()["sub"] == "leaky"
        assert c.get("/api/memories", headers=bearer(leaked)).status_code == 401
        assert c.post("/api/auth/revoke", headers=bearer(admin), json={"token": "forged.x"}).status_code == 400
    d.stop()
    d2 = start_daemon(ws)
    with d2.client() as c:
        assert c.get("/api/memories", headers=bearer(leaked)).status_code == 401
        assert c.get("/api/memories", headers=bearer(keep)).status_code == 200
        # the CLI revokes against the database while the daemon runs
        out = _cli(ws, "token", "revoke", keep, "--reason", "test")
        assert out.returncode == 0 and "keeper" in out.stdout
        assert c.get("/api/memories", headers=bearer(keep)).status_code == 401
    assert _cli(ws, "token", "revoke", "garbage").returncode == 1
