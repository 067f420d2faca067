"""``signet bench reliability``: does a real daemon hold up over time, under load, floods,
kills and hostile input? On real conversation turns, through HTTP, in four phases:

1. **soak**: a store of real turns, then clients recalling real questions, remembering spare
   turns and listing, for ``minutes`` after a warm-up, while a holder keeps ``idle_connections``
   sockets open that send nothing (reopening each one the daemon closes). Every response is
   counted by status; RSS, open files, open connections and the keyword index's rebuilds and
   fallbacks (``/metrics``) are sampled; RSS is read after warm-up and again after the load
   stops and the daemon has sat idle for ``settle_s``.
2. **kills**: ``kills`` times, writers remember turns (single and batch) and the daemon is
   killed with SIGKILL mid-write; after the last restart every acknowledged write must be in
   the store, which must pass ``integrity_check``, FTS5's own check, and have a history event
   for every memory.
3. **fuzz**: schemathesis against the live daemon's OpenAPI schema: no 5xx, and every answer
   conforms (status codes, content types, bodies, headers).

Figures, not a pass/fail test: ``docs/reliability.md`` records them with the command.
"""

from __future__ import annotations

import random
import selectors
import shutil
import signal
import socket
import sqlite3
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from signet.bench.conversations import Conversations, load, vectors_for
from signet.bench.corpus import Sample
from signet.bench.latency import Daemon, Timing, _noop, embed_bulk, machine, run_daemon, seed_workspace
from signet.daemon.connections import raise_fd_limit
from signet.workspace import Workspace

Progress = Callable[[str, int, int], None]


@dataclass
class ReliabilityOptions:
    locomo: Path | None = None
    longmemeval: Path | None = None
    memories: int = 20_000
    minutes: float = 30.0
    warmup_minutes: float = 3.0
    settle_s: float = 90.0
    sample_s: float = 30.0
    idle_connections: int = 1000
    clients: int = 4
    kills: int = 10
    fuzz_examples: int = 25
    cache_dir: Path | None = None
    seed: int = 7
    workdir: Path | None = None


# -- what the daemon process looks like -------------------------------------------------------


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for pid {pid}")


def open_files(pid: int) -> int:
    return len(list(Path(f"/proc/{pid}/fd").iterdir()))


def scrape(url: str) -> dict[str, float]:
    """``/metrics`` as ``{"name{label=value}": value}`` (counters by their sample name)."""
    from prometheus_client.parser import text_string_to_metric_families

    text = httpx.get(f"{url}/metrics", timeout=30).text
    out: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            labels = ",".join(f"{k}={v}" for k, v in sorted(s.labels.items()))
            out[f"{s.name}{{{labels}}}" if labels else s.name] = s.value
    return out


# -- load -------------------------------------------------------------------------------------


@dataclass
class LoadStats:
    statuses: Counter[int] = field(default_factory=Counter)
    errors: Counter[str] = field(default_factory=Counter)
    recall_ms: list[float] = field(default_factory=list)
    remember_ms: list[float] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def summary(self) -> dict[str, Any]:
        total = sum(self.statuses.values())
        return {
            "requests": total,
            "by_status": {str(k): v for k, v in sorted(self.statuses.items())},
            "server_errors_5xx": sum(v for k, v in self.statuses.items() if k >= 500),
            "client_errors": dict(self.errors),
            "recall_ms": Timing(self.recall_ms).summary() if self.recall_ms else {},
            "remember_ms": Timing(self.remember_ms).summary() if self.remember_ms else {},
        }


class Load:
    """``clients`` threads of an agent's traffic until stopped: 85 % recall of a real question
    (every prompt recalls), 10 % remember of a spare real turn, 5 % a page of the memory list.

    The remembers cycle through the spare turns, so once each has been stored the rest are
    duplicates: the store grows by at most the spare turns, and RSS measured after the soak
    shows what the daemon holds on to, not a bigger store (``vectors`` in the samples)."""

    def __init__(self, url: str, data: Conversations, clients: int, seed: int) -> None:
        self.url, self.data, self.clients, self.seed = url, data, clients, seed
        self.stats = LoadStats()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._written = 0

    def start(self) -> Load:
        self._stop.clear()
        self._threads = [threading.Thread(target=self._run, args=(i,), daemon=True) for i in range(self.clients)]
        for t in self._threads:
            t.start()
        return self

    def stop(self) -> LoadStats:
        self._stop.set()
        for t in self._threads:
            t.join(timeout=120)
        return self.stats

    def _next_turn(self) -> str:
        with self.stats.lock:
            n = self._written
            self._written += 1
        spare = self.data.spare or self.data.turns
        return spare[n % len(spare)]

    def _run(self, i: int) -> None:
        rng = random.Random(self.seed * 31 + i)
        questions = self.data.questions
        with httpx.Client(base_url=self.url, timeout=60) as c:
            while not self._stop.is_set():
                roll = rng.random()
                t0 = time.perf_counter()
                try:
                    if roll < 0.85:
                        r = c.post(
                            "/api/memory/recall", json={"query": questions[rng.randrange(len(questions))], "limit": 10}
                        )
                        bucket = self.stats.recall_ms
                    elif roll < 0.95:  # 10 %
                        r = c.post("/api/memory/remember", json={"content": self._next_turn(), "source_type": "bench"})
                        bucket = self.stats.remember_ms
                    else:
                        r = c.get("/api/memories", params={"limit": 20, "offset": rng.randrange(1000)})
                        bucket = None
                except httpx.HTTPError as exc:
                    with self.stats.lock:
                        self.stats.errors[type(exc).__name__] += 1
                    time.sleep(0.1)
                    continue
                ms = (time.perf_counter() - t0) * 1000
                with self.stats.lock:
                    self.stats.statuses[r.status_code] += 1
                    if bucket is not None and r.status_code == 200:
                        bucket.append(ms)


class IdleHolder:
    """Keeps ``count`` sockets open to the daemon that never send a byte; each one the daemon
    closes (its header timeout) is opened again, so the flood lasts as long as the soak."""

    def __init__(self, port: int, count: int) -> None:
        self.port, self.count = port, count
        self.reopened = 0
        self.failed = 0
        self._sel = selectors.DefaultSelector()  # epoll: select() cannot watch over 1024 sockets
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _open(self) -> None:
        try:
            s = socket.create_connection(("127.0.0.1", self.port), timeout=5)
        except OSError:
            self.failed += 1
            return
        s.setblocking(False)
        self._sel.register(s, selectors.EVENT_READ)

    def held(self) -> int:
        return len(self._sel.get_map())

    def start(self) -> IdleHolder:
        for _ in range(self.count):
            self._open()
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.is_set():
            for key, _ in self._sel.select(timeout=0.5):
                sock: socket.socket = key.fileobj  # type: ignore[assignment]
                try:
                    data = sock.recv(4096)
                except (BlockingIOError, InterruptedError):
                    continue
                except OSError:
                    data = b""
                if not data:  # closed by the daemon: open another in its place
                    self._sel.unregister(sock)
                    sock.close()
                    self.reopened += 1
                    self._open()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)
        for key in list(self._sel.get_map().values()):
            self._sel.unregister(key.fileobj)
            key.fileobj.close()  # type: ignore[union-attr]
        self._sel.close()


def _sample(d: Daemon, holder: IdleHolder | None, t0: float) -> dict[str, Any]:
    m = scrape(d.url)
    return {
        "t_s": round(time.monotonic() - t0, 1),
        "rss_mb": round(rss_mb(d.proc.pid), 1),
        "open_files": open_files(d.proc.pid),
        "connections_open": int(m.get("signet_connections_open", 0)),
        "idle_held": holder.held() if holder is not None else 0,
        "vectors": int(m.get("signet_vectors", 0)),
        "keyword_rebuilds": int(m.get("signet_keyword_index_rebuilds_total", 0)),
        "keyword_answered": int(m.get("signet_keyword_index_answered_total", 0)),
        "keyword_fallbacks": int(sum(v for k, v in m.items() if k.startswith("signet_keyword_index_fallbacks_total"))),
    }


def soak(d: Daemon, data: Conversations, opts: ReliabilityOptions, progress: Progress) -> dict[str, Any]:
    t0 = time.monotonic()
    warm = Load(d.url, data, opts.clients, opts.seed).start()
    _wait(opts.warmup_minutes * 60, progress, "soak: warm-up")
    warm.stop()
    after_warmup = _sample(d, None, t0)
    before = scrape(d.url)

    holder = IdleHolder(d.port, opts.idle_connections).start() if opts.idle_connections else None
    load = Load(d.url, data, opts.clients, opts.seed + 1).start()
    samples = [after_warmup]
    end = time.monotonic() + opts.minutes * 60
    total = max(1, int(opts.minutes * 60))
    while (left := end - time.monotonic()) > 0:
        time.sleep(min(opts.sample_s, left))
        samples.append(_sample(d, holder, t0))
        progress("soak: load + idle connections", total - max(0, int(end - time.monotonic())), total)
    stats = load.stop()
    if holder is not None:
        holder.stop()
    _wait(opts.settle_s, progress, "soak: idle after load")
    settled = _sample(d, None, t0)
    after = scrape(d.url)

    def delta(prefix: str) -> dict[str, int]:
        return {
            k.split("reason=")[-1].rstrip("}") if "reason=" in k else k: int(after[k] - before.get(k, 0))
            for k in after
            if k.startswith(prefix)
        }

    held = [s["connections_open"] for s in samples[1:]] or [0]
    return {
        "minutes": opts.minutes,
        "warmup_minutes": opts.warmup_minutes,
        "clients": opts.clients,
        "load": stats.summary(),
        "rss_mb_after_warmup": after_warmup["rss_mb"],
        "rss_mb_peak": max(s["rss_mb"] for s in samples),
        "rss_mb_load_end": samples[-1]["rss_mb"],
        "rss_mb_end": settled["rss_mb"],
        "rss_end_over_warmup": round(settled["rss_mb"] / after_warmup["rss_mb"], 3),
        "vectors_after_warmup": after_warmup["vectors"],
        "vectors_end": settled["vectors"],
        "keyword_index": {
            "rebuilds": settled["keyword_rebuilds"] - after_warmup["keyword_rebuilds"],
            "answered": settled["keyword_answered"] - after_warmup["keyword_answered"],
            "fallbacks": delta("signet_keyword_index_fallbacks_total"),
        },
        "idle_connections": {
            "asked": opts.idle_connections,
            "open_on_server_min": min(held),
            "open_on_server_median": sorted(held)[len(held) // 2],
            "reopened_after_timeout": holder.reopened if holder is not None else 0,
            "could_not_connect": holder.failed if holder is not None else 0,
            "evicted": int(after.get("signet_connections_evicted_total", 0)),
            "header_timeouts": int(after.get("signet_header_timeouts_total", 0)),
        },
        "open_files_max": max(s["open_files"] for s in samples),
        "samples": [*samples, settled],
    }


def _wait(seconds: float, progress: Progress, name: str) -> None:
    end = time.monotonic() + seconds
    total = max(1, int(seconds))
    while (left := end - time.monotonic()) > 0:
        time.sleep(min(1.0, left))
        progress(name, total - max(0, int(end - time.monotonic())), total)


# -- kills ------------------------------------------------------------------------------------


def kills(root: Path, data: Conversations, rounds: int, seed: int, progress: Progress) -> dict[str, Any]:
    rng = random.Random(seed)
    acked: set[str] = set()
    batches = 0
    lock = threading.Lock()
    counter = iter(range(10**9))
    turns = data.spare or data.turns

    def writer(url: str, stop: threading.Event, w: int) -> None:
        nonlocal batches
        with httpx.Client(base_url=url, timeout=10) as c:
            while not stop.is_set():
                n = next(counter)
                try:
                    if n % 5 == 4:
                        items = [{"content": f"{turns[(n + k) % len(turns)]} [kill batch {n}.{k}]"} for k in range(10)]
                        r = c.post("/api/memory/remember/batch", json={"items": items})
                    else:
                        r = c.post("/api/memory/remember", json={"content": f"{turns[n % len(turns)]} [kill {n}]"})
                except httpx.HTTPError:
                    return
                if r.status_code == 200:
                    body = r.json()
                    with lock:
                        if "results" in body:
                            acked.update(x["id"] for x in body["results"] if x.get("id"))
                            batches += 1
                        else:
                            acked.add(body["id"])

    for i in range(rounds):
        with run_daemon(root, timeout=900) as d:
            stop = threading.Event()
            threads = [threading.Thread(target=writer, args=(d.url, stop, w), daemon=True) for w in range(3)]
            for t in threads:
                t.start()
            time.sleep(rng.uniform(1.0, 4.0))
            d.proc.send_signal(signal.SIGKILL)
            d.proc.wait()
            stop.set()
            for t in threads:
                t.join(timeout=30)
        progress("kills", i + 1, rounds)
    with run_daemon(root, timeout=900) as d:  # the restart after the last kill
        served = httpx.get(f"{d.url}/health", timeout=10).json()["status"]
    conn = sqlite3.connect(Workspace(root).database_path())
    try:
        integrity = conn.execute("PRAGMA integrity_check").fetchone()[0]
        ids = {r[0] for r in conn.execute("SELECT id FROM memories")}
        created = {r[0] for r in conn.execute("SELECT memory_id FROM memory_history WHERE event = 'created'")}
        try:
            conn.execute("INSERT INTO memories_fts(memories_fts) VALUES ('integrity-check')")
            fts = "ok"
        except sqlite3.DatabaseError as exc:
            fts = str(exc)
    finally:
        conn.close()
    return {
        "rounds": rounds,
        "acknowledged": len(acked),
        "acknowledged_lost": len(acked - ids),
        "integrity_check": integrity,
        "fts_integrity": fts,
        "memories_without_history": len(ids - created),
        "history_without_memory": len(created - ids),
        "health_after_restart": served,
    }


# -- fuzz -------------------------------------------------------------------------------------


def fuzz(url: str, examples: int, progress: Progress) -> dict[str, Any]:
    """Schemathesis over every operation of the live daemon's schema."""
    try:
        import schemathesis
        from hypothesis import HealthCheck, given, settings
        from schemathesis.checks import (
            content_type_conformance,
            not_a_server_error,
            response_headers_conformance,
            response_schema_conformance,
            status_code_conformance,
        )
    except ImportError:
        return {"ran": False, "why": "schemathesis is not installed: pip install -e '.[test]'"}
    checks = [
        not_a_server_error,
        status_code_conformance,
        content_type_conformance,
        response_schema_conformance,
        response_headers_conformance,
    ]
    schema = schemathesis.openapi.from_url(f"{url}/openapi.json")
    from schemathesis.core.result import Ok

    cases = 0
    failures: list[str] = []
    operations = []
    for result in schema.get_all_operations():
        if isinstance(result, Ok):
            operations.append(result.ok())
        else:  # the schema itself is broken for this operation
            failures.append(f"invalid schema: {result.err()}")
    for i, op in enumerate(operations):

        @settings(
            max_examples=examples,
            deadline=None,
            suppress_health_check=list(HealthCheck),
            database=None,
            derandomize=True,
        )
        @given(case=op.as_strategy())
        def check(case: Any) -> None:
            nonlocal cases
            cases += 1
            case.validate_response(case.call(timeout=60), checks=checks)

        try:
            check()
        except (AssertionError, ExceptionGroup, OSError) as exc:  # failed checks, or no answer: the findings
            first = str(exc).strip().splitlines()[0][:300] if str(exc).strip() else type(exc).__name__
            failures.append(f"{op.label}: {first}")
        progress("fuzz", i + 1, len(operations))
    return {"ran": True, "operations": len(operations), "cases": cases, "failures": len(failures), "failed": failures}


# -- the whole run ----------------------------------------------------------------------------


def run(opts: ReliabilityOptions, progress: Progress = _noop) -> dict[str, Any]:
    raise_fd_limit(opts.idle_connections + 1024)  # the holder's sockets are this process's files too
    data = load(opts.memories, locomo=opts.locomo, longmemeval=opts.longmemeval, spare=max(50, opts.memories // 10))
    base = Path(tempfile.mkdtemp(prefix="signet-reliability-", dir=opts.workdir))
    try:
        vecs = vectors_for(data.turns, opts.cache_dir, lambda t: embed_bulk(t, progress))
        root = base / "ws"
        projects = ["alpha", "beta", "gamma", "delta"]
        samples = [
            Sample(content=t, question="", project=projects[i % 4], who="", tags=()) for i, t in enumerate(data.turns)
        ]
        seed_workspace(root, samples, vecs, progress)
        text_mb = sum(len(t.encode()) for t in data.turns) / 2**20
        with run_daemon(root, timeout=1800) as d:
            soaked = soak(d, data, opts, progress)
        killed = kills(root, data, opts.kills, opts.seed, progress)
        with run_daemon(root, timeout=1800) as d:
            fuzzed = fuzz(d.url, opts.fuzz_examples, progress)
        report: dict[str, Any] = {
            "machine": machine(),
            "store": {
                "memories": len(data.turns),
                "text_mb": round(text_mb, 1),
                "avg_chars": round(sum(map(len, data.turns)) / max(len(data.turns), 1)),
            },
            "soak": soaked,
            "kills": killed,
            "fuzz": fuzzed,
        }
        report["verdict"] = verdict(report)
        return report
    finally:
        shutil.rmtree(base, ignore_errors=True)


RSS_GROWTH_LIMIT = 1.2


def verdict(report: dict[str, Any]) -> dict[str, Any]:
    """Each bar the issue sets, met or not."""
    s, k, f = report["soak"], report["kills"], report["fuzz"]
    bars = {
        "no_acknowledged_write_lost": k["acknowledged_lost"] == 0 and k["acknowledged"] > 0,
        "store_consistent_after_kills": k["integrity_check"] == "ok"
        and k["fts_integrity"] == "ok"
        and k["memories_without_history"] == 0
        and k["history_without_memory"] == 0,
        "no_5xx_under_load": s["load"]["server_errors_5xx"] == 0,
        "clients_served_during_idle_flood": not s["load"]["client_errors"] and s["load"]["requests"] > 0,
        "rss_settles_within_1_2x": s["rss_end_over_warmup"] <= RSS_GROWTH_LIMIT,
        "conformance_failures_0": bool(f.get("ran")) and f["failures"] == 0,
    }
    return {"passed": all(bars.values()), **bars}


def table(report: dict[str, Any]) -> Any:
    from rich.table import Table

    s, k, f = report["soak"], report["kills"], report["fuzz"]
    t = Table(
        title=f"signet bench reliability: {report['store']['memories']} real turns "
        f"({report['store']['text_mb']} MB of text), {s['minutes']:g}-minute soak"
    )
    t.add_column("measure")
    t.add_column("value", justify="right")
    load_ = s["load"]
    rows = [
        ("requests served in the soak", load_["requests"]),
        ("5xx", load_["server_errors_5xx"]),
        ("client errors (no answer)", sum(load_["client_errors"].values())),
        ("recall p50 / p95 ms", f"{load_['recall_ms'].get('p50', '-')} / {load_['recall_ms'].get('p95', '-')}"),
        (
            "RSS after warm-up / peak / load end / idle MB",
            f"{s['rss_mb_after_warmup']} / {s['rss_mb_peak']} / {s.get('rss_mb_load_end', '-')} / {s['rss_mb_end']}",
        ),
        ("RSS end ÷ after warm-up", s["rss_end_over_warmup"]),
        ("memories with vectors after warm-up / end", f"{s['vectors_after_warmup']} / {s['vectors_end']}"),
        ("keyword index rebuilds", s["keyword_index"]["rebuilds"]),
        ("keyword index answered", s["keyword_index"]["answered"]),
        (
            "keyword index fallbacks",
            ", ".join(f"{r} {n}" for r, n in s["keyword_index"]["fallbacks"].items() if n) or "0",
        ),
        (
            "idle connections held (median, min)",
            f"{s['idle_connections']['open_on_server_median']}, {s['idle_connections']['open_on_server_min']}",
        ),
        ("idle connections closed by timeout and reopened", s["idle_connections"]["reopened_after_timeout"]),
        ("open files (max)", s["open_files_max"]),
        ("kills / acknowledged writes / lost", f"{k['rounds']} / {k['acknowledged']} / {k['acknowledged_lost']}"),
        ("integrity / FTS after kills", f"{k['integrity_check']} / {k['fts_integrity']}"),
        (
            "fuzz operations / cases / failures",
            f"{f['operations']} / {f['cases']} / {f['failures']}" if f.get("ran") else f"not run: {f['why']}",
        ),
        ("all bars met", report["verdict"]["passed"]),
    ]
    for label, value in rows:
        t.add_row(label, str(value))
    return t
