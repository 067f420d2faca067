"""Diagnostics score real conditions of a real database, and `signet doctor` reports them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from fastapi.testclient import TestClient

from signet.runtime import Runtime


def test_healthy_then_degraded_signals(api: TestClient, runtime: Runtime) -> None:
    for i in range(3):
        api.post("/api/memory/remember", json={"content": f"diagnosable memory {i}"})
    runtime.embeddings.wait_idle(60)
    rep = api.get("/api/diagnostics").json()
    assert rep["status"] == "healthy" and rep["score"] >= 0.99, rep
    # PostgreSQL checks its own pages: the SQLite file check is skipped there (docs/team.md).
    assert rep["domains"]["storage"]["metrics"]["quick_check"] == (
        "ok" if runtime.db.dialect == "sqlite" else "skipped"
    )
    assert rep["domains"]["index"]["metrics"]["coverage"] == 1.0

    old = (datetime.now(UTC) - timedelta(hours=1)).isoformat()

    def jobs(conn: Any) -> None:
        for i in range(60):
            conn.execute(
                "INSERT INTO memory_jobs(id, job_type, status, created_at, updated_at) VALUES (?, 'extract', 'pending', ?, ?)",
                (f"j{i}", old, old),
            )
        conn.execute(
            "INSERT INTO memory_jobs(id, job_type, status, created_at, updated_at, failed_at) VALUES ('d1', 'extract', 'dead', ?, ?, ?)",
            (old, old, old),
        )

    runtime.db.write(jobs)
    q = api.get("/api/diagnostics/queue").json()
    assert q["status"] != "healthy"
    # 60 inserted + one extraction job per remembered memory (the pipeline waits: provider none in tests)
    assert any("63 jobs pending" in f for f in q["findings"]) and any("dead jobs" in f for f in q["findings"])
    assert q["metrics"]["oldest_pending_age_s"] > 3000
    assert api.get("/api/diagnostics/nope").status_code == 404
    overall = api.get("/api/diagnostics").json()
    assert overall["score"] < rep["score"]
