"""Does the speed machinery earn its keep on real conversation turns? (issue: architecture, part 6)

Two A/Bs, each arm alternating within one run so machine load hits both:

* keyword mirror: recall through ``MemoryService.recall`` (the one recall path) with the
  in-memory keyword index vs FTS5 alone, question by question, on a store of real turns
  (LongMemEval-S dev150 haystack turns, deduplicated, then LoCoMo turns) asked real questions
  of both sets; then an untimed pass counting identical answers;
* hot path: a real daemon (uvicorn on loopback) with and without the ``HotPath`` middleware,
  remember throughput of fresh real turns (16 connections) and recall latency over HTTP,
  arms alternating in rounds, each round on a fresh copy of the seeded store.

    python bench/realistic_ab.py --memories 50000 --cache-dir /tmp/signet-bench-cache --out ab.json

The file is a measurement script, not a test: figures and the decision go in docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import numpy as np

from signet.bench.conversations import load, vectors_for
from signet.bench.corpus import Sample
from signet.bench.latency import Timing, _free_port, _remember_load, embed_bulk, seed_workspace
from signet.bench.metrics import percentile

DATA = Path(__file__).resolve().parents[2] / "shared" / "bench-data"


def real_turns(limit: int) -> tuple[list[str], list[str], list[str]]:
    """(distinct turns, spare turns for remember load, questions) from both yardsticks."""
    data = load(limit, locomo=DATA / "locomo10.json", longmemeval=DATA / "longmemeval_s_dev150.json.gz")
    return data.turns, data.spare, data.questions


def _embed(turns: list[str]) -> np.ndarray:
    started = time.monotonic()

    def progress(task: str, done: int, total: int) -> None:
        print(f"\r{task} {done}/{total} {time.monotonic() - started:.0f}s", end="", file=sys.stderr, flush=True)

    vecs = embed_bulk(turns, progress)
    print(file=sys.stderr)
    return vecs


def keyword_ab(root: Path, questions: list[str]) -> dict[str, Any]:
    from signet.models import RecallRequest
    from signet.runtime import Runtime
    from signet.workspace import Workspace

    rt = Runtime(Workspace(root)).start()
    try:
        if not rt.embeddings.wait_idle(900):
            raise SystemExit(f"embedder not ready: {rt.embeddings.error}")
        mirror = rt.keywords
        if mirror is None or not mirror.wait_ready(600):
            raise SystemExit("the keyword index is off or did not build")
        for q in questions[:30]:
            rt.service.recall(RecallRequest(query=q, track_access=False))
        took: dict[str, list[float]] = {"mirror": [], "fts5": []}
        for i, q in enumerate(questions[30:]):
            arm = "mirror" if i % 2 == 0 else "fts5"
            rt.service.recaller.keywords = mirror if arm == "mirror" else None
            t0 = time.perf_counter()
            rt.service.recall(RecallRequest(query=q, track_access=False))
            took[arm].append((time.perf_counter() - t0) * 1000)
        same = 0
        for q in questions[30:]:
            answers = []
            for kw in (mirror, None):
                rt.service.recaller.keywords = kw
                answers.append([r.id for r in rt.service.recall(RecallRequest(query=q, track_access=False)).results])
            same += answers[0] == answers[1]
        return {arm: Timing(v).summary() for arm, v in took.items()} | {
            "identical_ids": same,
            "questions": len(questions) - 30,
        }
    finally:
        rt.stop()


SERVE = """
import sys, uvicorn
from pathlib import Path
from signet.daemon.app import create_app
from signet.daemon.hotpath import HotPath
from signet.runtime import Runtime
from signet.workspace import Workspace
rt = Runtime(Workspace(Path(sys.argv[1])))
app = create_app(rt)
if sys.argv[3] == "off":
    app.user_middleware = [m for m in app.user_middleware if m.cls is not HotPath]
uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[2]), log_config=None, access_log=False)
"""


def _daemon(root: Path, hot: str) -> tuple[subprocess.Popen[bytes], str]:
    port = _free_port()
    log = (root.parent / "daemon.log").open("wb")
    proc = subprocess.Popen([sys.executable, "-c", SERVE, str(root), str(port), hot], stdout=log, stderr=log)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 900
    with httpx.Client(base_url=url, timeout=5) as c:
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise SystemExit(f"daemon exited {proc.returncode}: {(root.parent / 'daemon.log').read_text()[-2000:]}")
            try:
                st = c.get("/api/status").json()
                emb, kw = st["embedding"], st.get("keyword_index", {}).get("state")
                if emb["state"] == "ready" and kw in ("ready", "off"):  # both arms alike; pending vectors fill in
                    return proc, url
            except httpx.HTTPError:
                pass
            time.sleep(0.3)
    proc.kill()
    raise SystemExit("daemon not ready")


def hotpath_ab(seeded: Path, spare: list[str], questions: list[str], rounds: int) -> dict[str, Any]:
    out: dict[str, dict[str, list[float]]] = {
        a: {"remember_per_s": [], "recall_p50": [], "recall_p95": []} for a in ("hot", "off")
    }
    per_round = len(spare) // (2 * rounds)
    qs = questions[:200]
    for r in range(rounds):
        for k, arm in enumerate(("hot", "off") if r % 2 == 0 else ("off", "hot")):
            with tempfile.TemporaryDirectory(prefix="signet-ab-") as tmp:
                root = Path(tmp) / "ws"
                shutil.copytree(seeded, root)
                proc, url = _daemon(root, "on" if arm == "hot" else "off")
                try:
                    with httpx.Client(base_url=url, timeout=60) as c:
                        lat = []
                        for i, q in enumerate(qs):
                            t0 = time.perf_counter()
                            resp = c.post("/api/memory/recall", json={"query": q, "limit": 10})
                            resp.raise_for_status()
                            if i >= 20:
                                lat.append((time.perf_counter() - t0) * 1000)
                    start = (2 * r + k) * per_round
                    bodies = [
                        json.dumps({"content": t, "project": "ab"}).encode() for t in spare[start : start + per_round]
                    ]
                    port = int(url.rsplit(":", 1)[1])
                    wall, _, accepted, errors = asyncio.run(_remember_load(port, bodies, 16, lambda *_: None))
                    if errors:
                        raise SystemExit(f"remember errors: {errors}")
                    out[arm]["remember_per_s"].append(round(accepted / wall, 1))
                    out[arm]["recall_p50"].append(round(percentile(lat, 50), 2))
                    out[arm]["recall_p95"].append(round(percentile(lat, 95), 2))
                    print(
                        f"round {r} {arm}: {out[arm]['remember_per_s'][-1]}/s recall p95 {out[arm]['recall_p95'][-1]}",
                        file=sys.stderr,
                    )
                finally:
                    proc.terminate()
                    proc.wait(60)
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--memories", type=int, default=50_000)
    p.add_argument("--questions", type=int, default=600)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--cache-dir", type=Path, default=None)
    p.add_argument("--only", choices=("keyword", "hotpath"), default=None)
    p.add_argument("--out", type=Path, default=None)
    args = p.parse_args()
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    turns, spare, questions = real_turns(args.memories)
    chars = sum(map(len, turns))
    print(f"{len(turns)} turns, {chars / len(turns):.0f} chars on average; {len(questions)} questions", file=sys.stderr)
    vecs = vectors_for(turns, args.cache_dir, _embed)
    report: dict[str, Any] = {
        "memories": len(turns),
        "avg_chars": round(chars / len(turns)),
        "load_avg_at_start": os.getloadavg(),
    }
    with tempfile.TemporaryDirectory(prefix="signet-realistic-") as tmp:
        root = Path(tmp) / "ws"
        samples = [Sample(t, "", "conversations", "", ()) for t in turns]
        seed_workspace(root, samples, vecs, lambda *_: None)
        del vecs
        if args.only in (None, "keyword"):
            report["keyword"] = keyword_ab(root, questions[: args.questions + 30])
            print(json.dumps(report["keyword"], indent=1), file=sys.stderr)
        if args.only in (None, "hotpath"):
            report["hotpath"] = hotpath_ab(root, spare, questions, args.rounds)
    report["load_avg_at_end"] = os.getloadavg()
    text = json.dumps(report, indent=2)
    print(text)
    if args.out:
        args.out.write_text(text)


if __name__ == "__main__":
    main()
