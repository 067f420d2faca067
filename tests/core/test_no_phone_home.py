"""Nothing phones home: a real run (setup, daemon with the bundled local model, remember,
recall, stop) with a fresh HOME leaves nothing in it but the workspace the user asked for and
the ``signet`` launcher setup links (and says it links) into ``~/.local/bin``."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import httpx

from tests.conftest import free_port


def test_a_fresh_home_holds_only_the_workspace(tmp_path: Path) -> None:
    home, port = tmp_path / "home", free_port()
    home.mkdir()
    ws = home / ".agents"
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("XDG_", "ORT_")) and k not in ("SIGNET_WORKSPACE", "HOME")
    }
    env.update(
        HOME=str(home),
        SIGNET_PORT=str(port),
        SIGNET_HOST="127.0.0.1",
        SIGNET_MODEL_CACHE=os.environ["SIGNET_MODEL_CACHE"],
    )  # the session's model export, outside HOME

    def signet(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "signet.cli.entry", *args], capture_output=True, text=True, env=env, timeout=300
        )

    assert signet("setup", "-y", "--embedding", "local", "--llm", "none").returncode == 0
    started = signet("start", "--wait", "120")
    assert started.returncode == 0, started.stderr
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=60) as c:
            c.post("/api/memory/remember", json={"content": "the deploy key lives in the team vault"})
            deadline = time.monotonic() + 180
            while (emb := c.get("/api/status").json()["embedding"])["state"] != "ready" or emb["pending"]:
                assert emb["state"] in ("loading", "ready") and time.monotonic() < deadline, emb
                time.sleep(0.2)
            assert c.post("/api/memory/recall", json={"query": "where is the deploy key"}).json()["method"] == "hybrid"
    finally:
        assert signet("stop").returncode == 0
    left = sorted(str(p.relative_to(home)) for p in home.rglob("*") if not p.is_relative_to(ws) and p != ws)
    assert left == [".local", ".local/bin", ".local/bin/signet"], left
    launcher = home / ".local" / "bin" / "signet"
    assert launcher.is_symlink() and launcher.resolve() == (Path(sys.executable).parent / "signet").resolve()
