"""Cost of the auth layer per request: ``python -m signet.bench.auth [N]``.

The same in-process request (``GET /api/memories?limit=1`` on the real app and a real SQLite
file) in ``local`` mode (Host check only) and ``team`` mode (token verify, revocation lookup,
agent-scoped read, rate limiter). Figures are in docs/security.md.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

import yaml
from fastapi.testclient import TestClient

from signet.auth.tokens import issue, load_secret
from signet.daemon.app import create_app
from signet.runtime import Runtime
from signet.workspace import Workspace, setup_workspace


def measure(mode: str, n: int) -> tuple[float, float]:
    with tempfile.TemporaryDirectory() as tmp:
        ws = Workspace(Path(tmp) / "ws")
        setup_workspace(ws, embedding_provider="none")
        data = yaml.safe_load(ws.config_path.read_text()) or {}
        data["auth"] = {"mode": mode, "rateLimits": {"default": 10**9, "operations": {}}}
        data.setdefault("memory", {})["pipelineV2"] = {"enabled": False}
        ws.config_path.write_text(yaml.safe_dump(data))
        rt = Runtime(ws).start()
        try:
            tok, _ = issue(load_secret(ws.root), sub="bench", role="agent", ttl_s=3600, agent="a")
            headers = {"Authorization": f"Bearer {tok}"} if mode != "local" else {}
            with TestClient(create_app(rt, manage_runtime=False), base_url="http://localhost") as c:
                c.post("/api/memory/remember", headers=headers, json={"content": "bench memory"})
                times = []
                for i in range(n + 50):
                    t = time.perf_counter()
                    r = c.get("/api/memories", params={"limit": 1}, headers=headers)
                    if i >= 50:
                        times.append(time.perf_counter() - t)
                    if r.status_code != 200:
                        raise SystemExit(f"{mode}: HTTP {r.status_code} {r.text}")
        finally:
            rt.stop()
    times.sort()
    return times[len(times) // 2] * 1e3, times[int(len(times) * 0.95)] * 1e3


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    for mode in ("local", "team", "local", "team"):
        p50, p95 = measure(mode, n)
        print(f"{mode:6s} p50 {p50:.3f} ms  p95 {p95:.3f} ms  ({n} requests)")


if __name__ == "__main__":
    main()
