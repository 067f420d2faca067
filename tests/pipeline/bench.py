"""Pipeline throughput measurements (docs/pipeline.md, "Measurements").

    /work/venv/bin/python -m tests.pipeline.bench

1. queue: lease + complete of 2,000 jobs through one Database (the writer thread), and
   through two Databases on one file racing;
2. end to end: 200 remembers, each extracted into 2 facts by a fake LLM that answers at
   once (so this is Signet's own overhead: recall for candidates, decisions, writes, graph),
   embedding off, 1 worker.
"""

from __future__ import annotations

import functools
import statistics
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import yaml

from signet.models import RememberRequest
from signet.pipeline import queue
from signet.runtime import Runtime
from signet.store.database import Database
from signet.workspace import Workspace, setup_workspace
from tests.pipeline.fake_llm import FakeLLM, as_json


def fill(db: Database, n: int) -> None:
    def write(conn: Any) -> None:
        for i in range(n):
            queue.enqueue(conn, "extract", memory_id=f"m{i}")

    db.write(write)


def drain(db: Database) -> int:
    n = 0
    while (job := db.write(queue.lease)) is not None:
        jid = job.id
        db.write(functools.partial(queue.complete, job_id=jid, result={}))
        n += 1
    return n


def bench_queue(root: Path, n: int = 2000) -> None:
    with Database(root / "q1.db") as db:
        fill(db, n)
        t = time.perf_counter()
        done = drain(db)
        dt = time.perf_counter() - t
    print(f"queue, one database: {done} lease+complete in {dt:.2f}s = {done / dt:.0f} jobs/s")
    with Database(root / "q2.db") as a, Database(root / "q2.db") as b:
        fill(a, n)
        counts = [0, 0]
        t = time.perf_counter()
        threads = [
            threading.Thread(target=lambda i=i, d=d: counts.__setitem__(i, drain(d))) for i, d in enumerate((a, b))
        ]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        dt = time.perf_counter() - t
    print(
        f"queue, two databases racing: {sum(counts)} ({counts[0]} + {counts[1]}) in {dt:.2f}s = "
        f"{sum(counts) / dt:.0f} jobs/s"
    )


def bench_e2e(root: Path, n: int = 200) -> None:
    fake = FakeLLM().start()
    fake.extract = lambda text: as_json(
        {
            "facts": [
                {"content": f"Fact one derived from: {text[:60]}", "type": "fact", "confidence": 0.9},
                {
                    "content": "Shared procedural fact about the deploy checklist",
                    "type": "procedural",
                    "confidence": 0.9,
                },
            ],
            "entities": [{"source": "deploy", "relationship": "uses", "target": "checklist", "confidence": 0.8}],
        }
    )
    fake.decide = lambda fact, cands: as_json({"action": "add", "targetId": None, "confidence": 0.9, "reason": "new"})
    ws = Workspace(root / "ws")
    setup_workspace(ws, agent_name="bench", user_name="bench", embedding_provider="none")
    data = yaml.safe_load(ws.config_path.read_text()) or {}
    data.setdefault("memory", {})["pipelineV2"] = {
        "pollIntervalMs": 20,
        "extraction": {"provider": "ollama", "endpoint": fake.url, "timeout": 10},
    }
    ws.config_path.write_text(yaml.safe_dump(data))
    rt = Runtime(ws).start()
    try:
        t = time.perf_counter()
        for i in range(n):
            rt.service.remember(RememberRequest(content=f"Service {i} deploys with the checklist on host h{i}"))
        remembered = time.perf_counter() - t
        while True:
            st = rt.db.read(queue.stats)["by_status"]
            if st["pending"] == 0 and st["leased"] == 0:
                break
            time.sleep(0.02)
        dt = time.perf_counter() - t
        lat = [
            r[0]
            for r in rt.db.read(
                lambda c: c.execute("SELECT latency_ms FROM llm_calls WHERE outcome = 'success'").fetchall()
            )
        ]
        facts = rt.db.read(
            lambda c: c.execute("SELECT COUNT(*) FROM memories WHERE source_type = 'pipeline'").fetchone()[0]
        )
    finally:
        rt.stop()
        fake.stop()
    print(
        f"end to end: {n} remembers in {remembered:.2f}s; all {n} jobs done after {dt:.2f}s = "
        f"{n / dt:.1f} jobs/s; {facts} facts written; {len(lat)} LLM calls, "
        f"p50 round trip {statistics.median(lat):.1f} ms"
    )


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        bench_queue(Path(tmp))
        bench_e2e(Path(tmp))


if __name__ == "__main__":
    main()
