"""Measure the dashboard's first paint on a large store (docs/dashboard.md#first-paint-on-a-large-store).

Not a test (it takes minutes): ``.venv/bin/python -m tests.dashboard.first_paint --n 100000``.
It seeds a workspace with the synthetic benchmark corpus through the service's batch path
(``signet.bench.latency.seed_workspace``) once, reusing it on later runs; the vectors are
random unit vectors, since timing the pages does not need meaningful ones and embedding 100k
texts would take the better part of an hour on a small machine. Then it starts a real daemon,
opens each page in Debian's chromium and reports, per page, the browser's first contentful
paint and the time until the page's data is on screen (the memory list's rows, the map's
points), cold (the map's projection computed) and warm (the median of the later loads).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path
from typing import Any

import numpy as np

from signet.bench.corpus import generate
from signet.bench.latency import seed_workspace
from signet.workspace import Workspace
from tests.conftest import launch_daemon
from tests.dashboard.conftest import chromium_path

# page -> (its data first on screen, all of it on screen: the count / the full map)
PAGES = {
    "memories": ("#results li", "() => /\\d+ memories ·/.test(document.getElementById('list-meta').textContent)"),
    "map": ("canvas#map[data-points]", "() => document.querySelector('canvas#map[data-complete]') !== null"),
}


def seed(root: Path, n: int) -> None:
    done = root / ".seeded"
    if done.exists():
        return
    if root.exists():
        raise SystemExit(f"{root} holds an unfinished seed (no {done.name}): delete it and run again")
    samples = generate(n)
    rng = np.random.default_rng(7)
    vecs = rng.standard_normal((n, 384)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    last = [0.0]

    def progress(task: str, done: int, total: int) -> None:
        if time.monotonic() - last[0] > 5 or done == total:
            last[0] = time.monotonic()
            print(f"{task}: {done}/{total}", flush=True)

    seed_workspace(root, samples, vecs, progress)
    done.touch()


def load(browser: Any, url: str, ready: str, complete: str) -> dict[str, float]:
    ctx = browser.new_context(viewport={"width": 1280, "height": 860})
    page = ctx.new_page()
    try:
        t0 = time.perf_counter()
        page.goto(url)
        page.locator(ready).first.wait_for(timeout=180_000)
        data_ms = (time.perf_counter() - t0) * 1000
        page.wait_for_function(complete, timeout=180_000)
        complete_ms = (time.perf_counter() - t0) * 1000
        fcp = page.evaluate(
            "() => (performance.getEntriesByName('first-contentful-paint')[0] || {startTime: -1}).startTime"
        )
        return {
            "first_contentful_paint_ms": round(float(fcp), 1),
            "data_on_screen_ms": round(data_ms, 1),
            "complete_ms": round(complete_ms, 1),
        }
    finally:
        ctx.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--root", type=Path, default=Path("/tmp/signet-dashboard-paint"))
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    root = args.root / f"ws-{args.n}"
    t0 = time.monotonic()
    seed(root, args.n)
    print(f"store ready in {time.monotonic() - t0:.0f} s", flush=True)
    ws = Workspace(root)
    from playwright.sync_api import sync_playwright

    d = launch_daemon(ws)
    report: dict[str, Any] = {"memories": args.n}
    try:
        with sync_playwright() as pw:
            exe = chromium_path()
            assert exe, "chromium is not installed"
            browser = pw.chromium.launch(executable_path=exe, args=["--no-sandbox", "--disable-dev-shm-usage"])
            for name, (ready, complete) in PAGES.items():
                runs = [load(browser, f"{d.url}/#/{name}", ready, complete) for _ in range(args.runs + 1)]
                report[name] = {
                    "cold": runs[0],
                    "warm_median": {k: statistics.median(r[k] for r in runs[1:]) for k in runs[0]},
                }
                print(name, json.dumps(report[name]), flush=True)
            browser.close()
    finally:
        d.stop()
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
