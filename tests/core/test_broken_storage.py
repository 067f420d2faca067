"""Broken disks: a full or read-only filesystem under a real daemon (a size-limited tmpfs
mounted for the test). Writes answer 507 with what to do and nothing half-written, reads go
on, /health says degraded with the reason and recovers, start-up refuses in one line."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.conftest import free_port


@pytest.fixture
def small_fs(tmp_path: Path) -> Iterator[Path]:
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=24m", "tmpfs", str(mnt)], capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip(f"cannot mount a size-limited tmpfs here (needs root): {r.stderr.strip()}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


def fill(mnt: Path, leave_mb: float = 0.0) -> Path:
    """Fill the filesystem, leaving about ``leave_mb`` free."""
    filler = mnt / "filler"
    st = os.statvfs(mnt)
    size = max(0, int(st.f_bavail * st.f_frsize - leave_mb * 1e6))
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    try:
        chunk, written = b"\0" * (1 << 20), 0
        while written < size:
            try:
                written += os.write(fd, chunk[: min(len(chunk), size - written)] or b"\0")
            except OSError:  # ENOSPC: full, as intended
                break
    finally:
        os.close(fd)
    return filler


def _holders(mnt: Path) -> list[str]:
    """Processes with a file open under ``mnt`` (what keeps a remount busy)."""
    found = []
    for fd in Path("/proc").glob("[0-9]*/fd/*"):
        try:
            target = str(fd.readlink())
        except OSError:
            continue
        if target.startswith(str(mnt)):
            pid = fd.parts[2]
            found.append(f"{pid} {Path(f'/proc/{pid}/cmdline').read_bytes()[:120]!r} {target}")
    return found


def remount(mnt: Path, mode: str) -> None:
    """``mount -o remount,<mode>``, retried while a process that just exited still holds files."""
    deadline = time.monotonic() + 15
    while True:
        r = subprocess.run(["mount", "-o", f"remount,{mode}", str(mnt)], capture_output=True, text=True)
        if r.returncode == 0:
            return
        assert time.monotonic() < deadline, (r.stderr, _holders(mnt))
        time.sleep(0.2)


def test_a_full_disk_and_a_read_only_workspace(small_fs: Path) -> None:
    ws, port = small_fs / "ws", free_port()
    env = {**os.environ, "SIGNET_WORKSPACE": str(ws), "SIGNET_PORT": str(port), "SIGNET_HOST": "127.0.0.1"}

    def signet(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "signet.cli.entry", *args], capture_output=True, text=True, env=env, timeout=120
        )

    assert signet("setup", "-y", "--embedding", "none", "--llm", "none").returncode == 0
    assert signet("start").returncode == 0
    url = f"http://127.0.0.1:{port}"
    try:
        with httpx.Client(base_url=url, timeout=30) as c:
            kept = c.post("/api/memory/remember", json={"content": "written before the disk filled"}).json()["id"]
            filler = fill(small_fs)
            answers = [c.post("/api/memory/remember", json={"content": f"filler {i} " + "x" * 3000}) for i in range(40)]
            full = [a for a in answers if a.status_code == 507]
            assert full and all(a.status_code in (200, 507) for a in answers), [a.status_code for a in answers]
            err = full[-1].json()
            assert err["code"] == "disk_full" and err["error"].startswith("disk full (") and str(ws) in err["error"]
            # Reads go on; health and status say why.
            assert c.get(f"/api/memory/{kept}").status_code == 200
            assert c.post("/api/memory/recall", json={"query": "written before"}).json()["results"]
            # The recall's access count is a write that needs no new page: it may land on the
            # full disk. Wait for it; the disk is still full, and health must keep saying so.
            deadline = time.monotonic() + 3
            while c.get(f"/api/memory/{kept}").json().get("access_count", 0) < 1 and time.monotonic() < deadline:
                time.sleep(0.1)
            health = c.get("/health").json()
            assert health["status"] == "degraded" and any("disk full" in r for r in health["reasons"]), health
            assert any("disk full" in w for w in c.get("/api/status").json()["warnings"])
            stored = c.get("/api/memories", params={"limit": 200}).json()["total"]
            # Nothing half-written: every stored memory is whole and has its history.
            rows = c.get("/api/memories", params={"limit": 200}).json()["items"]
            for m in rows:
                assert c.get(f"/api/memory/{m['id']}/history").json()["events"][0]["event"] == "created"
            # Space comes back: writes resume by themselves and health recovers.
            filler.unlink()
            assert c.post("/api/memory/remember", json={"content": "after the space came back"}).status_code == 200
            assert c.get("/health").json() == {"status": "ok"}
            assert c.get("/api/memories", params={"limit": 200}).json()["total"] == stored + 1
    finally:
        assert signet("stop").returncode == 0

    # Start-up on a full disk: one line, non-zero, no traceback.
    filler = fill(small_fs)
    r = signet("daemon")
    assert r.returncode != 0 and r.stderr.strip().splitlines() == [r.stderr.strip()], r.stderr
    assert r.stderr.startswith("error: disk full (") and str(ws) in r.stderr, r.stderr
    filler.unlink()

    # A read-only workspace: start-up refuses in one line. (A filesystem cannot be remounted
    # read-only under a daemon that holds files open for writing: the kernel says busy.)
    remount(small_fs, "ro")
    try:
        r = signet("daemon")
        assert r.returncode != 0 and "read-only" in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
        r = signet("start")
        assert r.returncode != 0 and "read-only" in r.stderr, r.stderr
    finally:
        remount(small_fs, "rw")
